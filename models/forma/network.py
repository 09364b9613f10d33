"""The Forma network: token embedding, a pre-LN Transformer encoder over the set, two heads.

- Encoder: `nn.TransformerEncoderLayer(norm_first=True, activation="gelu")`, no final
  LayerNorm; padding enters as a key-padding mask. PyTorch routes attention through
  `scaled_dot_product_attention` (fused flash / memory-efficient kernels on GPUs). The
  cuDNN attention backend is left out (ATTENTION_BACKENDS): it builds an execution plan
  for every new sequence length, and bucketed batches bring a new length almost every
  step, so on an H100 a bf16 step spent 655 ms on the host for 25 ms on the GPU
  (bench/forma_kernels.py, docs/forma.md "On a GPU").
- Heads: each reads concat(h_L, PE(q)) (width 2d) through 2d -> 2d -> 1 with GELU; one
  gives mu, the other log sigma^2, clamped to [-10, 10].

Two options the CPU presets use (docs/forma.md, "Presets"); `paper` has neither:
- `query_attention="context"`: query tokens (hidden future slots) attend to the context
  (every other token: history, hidden history, pins, industry) but nothing attends to
  them. They carry no value, so the context holds all the information either way; what
  changes is cost, Tc^2 + Q*Tc instead of (Tc+Q)^2, and each query's output no longer
  depends on which other queries are in the set, so training may sample a few of them.
- `anchor=True`: every future token also sees its item's standardized value at the
  origin (`w_a * anchor`), and the mean head predicts the change from it
  (`mu = anchor + f_mu(u)`), so the untrained model starts at the random walk instead of
  having to learn to copy the origin value through attention.
- `seasonal=True`: every future token also sees its item's latest history value of the
  same season (tokens.py): its quarter minus a multiple of 4, an offset the
  relative-quarter sinusoid (no period-4 component) leaves attention to find.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from proforma.models.forma.tokens import TokenEmbedding, sinusoidal
from proforma.models.numerics import check_matmul_precision, float32_matmul

LOGVAR_MIN, LOGVAR_MAX = -10.0, 10.0
# Every backend but cuDNN's (see the module docstring); math stays as the fallback.
ATTENTION_BACKENDS = [
    SDPBackend.FLASH_ATTENTION,
    SDPBackend.EFFICIENT_ATTENTION,
    SDPBackend.MATH,
]


@contextmanager
def _through_sdpa() -> Iterator[None]:
    """Attention through scaled_dot_product_attention on ATTENTION_BACKENDS. The eval-mode
    "fast path" of nn.TransformerEncoderLayer uses a native attention that materializes
    every B x heads x T x T weight (4x slower and ~4x the memory of SDPA on long sets),
    so it is off here, for inference too."""
    fast = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with sdpa_kernel(ATTENTION_BACKENDS):
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)


def _numerics(precision: str):
    """The model's matmul precision for one pass; nothing while torch.compile traces (a
    compiled graph takes the precision in force when it runs: fit sets it around each step)."""
    if torch.compiler.is_compiling():
        return contextlib.nullcontext()
    return float32_matmul(precision)


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
        query_attention: str = "full",
        anchor: bool = False,
        seasonal: bool = False,
        year_ago: bool = False,
        matmul_precision: str = "highest",
    ):
        super().__init__()
        if query_attention not in ("full", "context"):
            raise ValueError(
                f"query_attention must be 'full' or 'context', not {query_attention!r}"
            )
        self.d = d_model
        self.query_attention = query_attention
        self.anchor = anchor
        # history quarters the model was trained on (rel_q -lookback+1..0); inference
        # builds its sets with the same window (a plain attribute, not a weight)
        self.lookback = lookback
        # float32 matmul precision of every pass (models/numerics.py): set for the pass and
        # put back after it, so the model's choice never leaks into the process
        self.matmul_precision = check_matmul_precision(matmul_precision)
        self.embed = TokenEmbedding(
            n_accounts, n_industries, d_model, anchor=anchor, seasonal=seasonal, year_ago=year_ago
        )
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
        self.encoder = nn.TransformerEncoder(layer, n_layers, norm=None, enable_nested_tensor=False)
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
        query: torch.Tensor | None = None,
        anchor: torch.Tensor | None = None,
        *,
        query_index: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs [B, T] (industry [B]); pad is True at padding, `query` at the hidden
        future slots, `anchor` the item's origin value on future tokens (0 elsewhere).
        Returns mu, logvar [B, T].

        With `query_index` [B, Q] (positions into T) only those tokens are read out and
        mu, logvar come back [B, Q]: the last layer and the heads run only on them (all
        tokens are still keys and values), equal to the full pass at those positions.
        Inference uses it to skip the history tokens' last-layer queries and heads.
        """
        if anchor is None or not self.anchor:
            anchor = None
        with _numerics(self.matmul_precision):
            return self._forward(
                account, rel_q, x, hidden, industry, pad, query, anchor, query_index
            )

    def _forward(self, account, rel_q, x, hidden, industry, pad, query, anchor, query_index):
        h = self.embed(account, rel_q, x, hidden, industry, anchor)
        with _through_sdpa():
            if self.query_attention == "context":
                if query is None:
                    raise ValueError("query_attention='context' needs the query mask")
                h, rel_q, anchor = self._context_pass(h, rel_q, anchor, pad, query, query_index)
            elif query_index is None:
                key_pad = torch.cat((torch.zeros_like(pad[:, :1]), pad), dim=1)
                h = self.encoder(h, src_key_padding_mask=key_pad)[:, 1:]
            else:
                key_pad = torch.cat((torch.zeros_like(pad[:, :1]), pad), dim=1)
                layers = self.encoder.layers
                for layer in layers[:-1]:
                    h = layer(h, src_key_padding_mask=key_pad)
                h = _last_layer_queries(layers[-1], h, query_index + 1, key_pad)
                rel_q = rel_q.gather(1, query_index)
                anchor = anchor.gather(1, query_index) if anchor is not None else None
        u = torch.cat((h, sinusoidal(rel_q, self.d).to(h.dtype)), dim=-1)
        mu = self.mu_head(u).squeeze(-1)
        if anchor is not None:
            mu = mu + anchor.to(mu.dtype)
        logvar = self.logvar_head(u).squeeze(-1).clamp(LOGVAR_MIN, LOGVAR_MAX)
        return mu, logvar

    def _context_pass(
        self,
        h: torch.Tensor,
        rel_q: torch.Tensor,
        anchor: torch.Tensor | None,
        pad: torch.Tensor,
        query: torch.Tensor,
        query_index: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Encoder with queries attending to the context only. h is [B, 1+T, d] (industry
        first). The set is regrouped as [industry, context..., queries...] (each group
        padded to its longest row), every layer's keys and values are the context part,
        and the result is put back in token order [B, T] (or at `query_index`)."""
        b, t = pad.shape
        ctx = ~query & ~pad
        qry = query & ~pad
        ctx_pos, ctx_pad = _group(ctx)
        if query_index is None:
            qry_pos, qry_pad = _group(qry)
        else:  # the caller's slot order, so outputs line up with query_index
            qry_pos = query_index
            qry_pad = ~qry.gather(1, query_index)
        n_ctx = ctx_pos.shape[1]
        pos = torch.cat((ctx_pos, qry_pos), dim=1)
        seq = torch.cat(
            (h[:, :1], h[:, 1:].gather(1, pos.unsqueeze(-1).expand(-1, -1, h.shape[-1]))), dim=1
        )
        key_pad = torch.cat((torch.zeros_like(ctx_pad[:, :1]), ctx_pad), dim=1)
        layers = self.encoder.layers
        for k, layer in enumerate(layers):
            if query_index is not None and k == len(layers) - 1:
                # the last layer's context outputs are never read at inference
                seq = _last_layer_queries(layer, seq, None, key_pad, n_keys=1 + n_ctx)
                return (
                    seq,
                    rel_q.gather(1, query_index),
                    (anchor.gather(1, query_index) if anchor is not None else None),
                )
            hn = layer.norm1(seq)
            kv = hn[:, : 1 + n_ctx]
            a = layer.self_attn(hn, kv, kv, key_padding_mask=key_pad, need_weights=False)[0]
            seq = seq + layer.dropout1(a)
            seq = seq + layer._ff_block(layer.norm2(seq))
        # back to token order: padded group entries land in a spare column that is dropped
        valid = torch.cat((~ctx_pad, ~qry_pad), dim=1)
        dest = torch.where(valid, pos, torch.full_like(pos, t))
        out = seq.new_zeros(b, t + 1, seq.shape[-1])
        out.scatter_(1, dest.unsqueeze(-1).expand(-1, -1, seq.shape[-1]), seq[:, 1:])
        return out[:, :t], rel_q, anchor


def _group(member: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions of each row's member tokens, in token order, as [B, M] (M = most members
    in a row; shorter rows repeat position 0) and the [B, M] padding flags."""
    counts = member.sum(1)
    m = max(int(counts.max()) if counts.numel() else 0, 1)
    pos = torch.argsort((~member).to(torch.int8), dim=1, stable=True)[:, :m]
    pad = torch.arange(m, device=member.device)[None, :] >= counts[:, None]
    return torch.where(pad, torch.zeros_like(pos), pos), pad


def _last_layer_queries(
    layer: nn.TransformerEncoderLayer,
    h: torch.Tensor,
    index: torch.Tensor | None,
    key_pad: torch.Tensor,
    n_keys: int | None = None,
) -> torch.Tensor:
    """Pre-LN encoder layer evaluated only at `index` [B, Q] (keys: every token of h), or,
    with `n_keys`, at every position after the first n_keys (keys: the first n_keys):
    x + SA(LN1 x | LN1 keys) then + FF(LN2 .), the same submodules as layer.forward."""
    hn = layer.norm1(h)
    if n_keys is not None:
        hq, qn, hn = h[:, n_keys:], hn[:, n_keys:], hn[:, :n_keys]
    else:
        if index is None:
            raise ValueError("_last_layer_queries needs index or n_keys")
        gidx = index.unsqueeze(-1).expand(-1, -1, h.shape[-1])
        hq, qn = h.gather(1, gidx), hn.gather(1, gidx)
    a = layer.self_attn(qn, hn, hn, key_padding_mask=key_pad, need_weights=False)[0]
    hq = hq + layer.dropout1(a)
    return hq + layer._ff_block(layer.norm2(hq))


def count_parameters(model: nn.Module) -> int:
    """Trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
