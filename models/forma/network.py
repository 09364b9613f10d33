"""The Forma network: token embedding, a pre-LN Transformer encoder over the set, two heads.

- Encoder: `nn.TransformerEncoderLayer(norm_first=True, activation="gelu")`, no final
  LayerNorm; padding enters as a key-padding mask. PyTorch routes attention through
  `scaled_dot_product_attention` (fused flash / memory-efficient kernels on GPUs).
- Heads: each reads concat(h_L, PE(q)) (width 2d) through 2d -> 2d -> 1 with GELU; one
  gives mu, the other log sigma^2, clamped to [-10, 10].
"""

from __future__ import annotations

import torch
from torch import nn

from models.forma.tokens import TokenEmbedding, sinusoidal

LOGVAR_MIN, LOGVAR_MAX = -10.0, 10.0


def _head(d: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(2 * d, 2 * d), nn.GELU(), nn.Linear(2 * d, 1))


class Forma(nn.Module):
    """Tuple-set transformer returning (mu, log sigma^2) for every tuple token."""

    def __init__(
        self,
        n_accounts: int,
        n_industries: int = 49,
        d_model: int = 128,
        n_layers: int = 4,
        n_heads: int = 4,
        d_ff: int = 512,
        dropout: float = 0.2,
        lookback: int = 12,
    ):
        super().__init__()
        self.d = d_model
        # history quarters the model was trained on (rel_q -lookback+1..0); inference
        # builds its sets with the same window (a plain attribute, not a weight)
        self.lookback = lookback
        self.embed = TokenEmbedding(n_accounts, n_industries, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model,
            n_heads,
            dim_feedforward=d_ff,
            dropout=dropout,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        # enable_nested_tensor only applies to post-LN; off to keep one code path.
        self.encoder = nn.TransformerEncoder(
            layer, n_layers, norm=None, enable_nested_tensor=False
        )
        self.mu_head = _head(d_model)
        self.logvar_head = _head(d_model)

    def forward(
        self,
        account: torch.Tensor,
        rel_q: torch.Tensor,
        x: torch.Tensor,
        hidden: torch.Tensor,
        industry: torch.Tensor,
        pad: torch.Tensor,
        query_index: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs [B, T] (industry [B]); pad is True at padding. Returns mu, logvar [B, T].

        With `query_index` [B, Q] (positions into T) only those tokens are read out:
        every layer but the last runs on the whole set (all tokens are keys and values
        of the next layer), the last layer and the heads run only on the Q queried
        tokens, and mu, logvar come back [B, Q]. The result equals the full pass at those
        positions (the last layer's queries are independent of each other); inference
        uses it to skip the history tokens' last-layer queries, feed-forward and heads.
        """
        h = self.embed(account, rel_q, x, hidden, industry)
        key_pad = torch.cat((torch.zeros_like(pad[:, :1]), pad), dim=1)
        # The eval-mode "fast path" of nn.TransformerEncoderLayer uses a native attention
        # that materializes every B x heads x T x T weight (4x slower and ~4x the memory
        # of scaled_dot_product_attention on long sets), so route inference through SDPA.
        fast = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            if query_index is None:
                h = self.encoder(h, src_key_padding_mask=key_pad)[:, 1:]
            else:
                layers = self.encoder.layers
                for layer in layers[:-1]:
                    h = layer(h, src_key_padding_mask=key_pad)
                h = _last_layer_queries(layers[-1], h, query_index + 1, key_pad)
                rel_q = rel_q.gather(1, query_index)
        finally:
            torch.backends.mha.set_fastpath_enabled(fast)
        u = torch.cat((h, sinusoidal(rel_q, self.d).to(h.dtype)), dim=-1)
        mu = self.mu_head(u).squeeze(-1)
        logvar = self.logvar_head(u).squeeze(-1).clamp(LOGVAR_MIN, LOGVAR_MAX)
        return mu, logvar


def _last_layer_queries(layer: nn.TransformerEncoderLayer, h: torch.Tensor, index: torch.Tensor,
                        key_pad: torch.Tensor) -> torch.Tensor:
    """Pre-LN encoder layer evaluated only at `index` [B, Q] (keys: every token of h):
    x + SA(LN1 x | LN1 h) then + FF(LN2 .), the same submodules as layer.forward."""
    hn = layer.norm1(h)
    gidx = index.unsqueeze(-1).expand(-1, -1, h.shape[-1])
    hq, qn = h.gather(1, gidx), hn.gather(1, gidx)
    a = layer.self_attn(qn, hn, hn, key_padding_mask=key_pad, need_weights=False)[0]
    hq = hq + layer.dropout1(a)
    return hq + layer._ff_block(layer.norm2(hq))


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
