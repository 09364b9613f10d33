"""Token embeddings: account, industry, relative quarter (fixed sinusoid), value or mask.

A token's initial representation is E_acct(id) + PE(q) + E_value(x, m) with
E_value = w_x * x when visible and e_mask when hidden (the paper's token equations). The
industry token is E_industry(c) + PE(0) and carries no value part.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def sinusoidal(q: torch.Tensor, d: int) -> torch.Tensor:
    """Fixed sinusoidal encoding of relative quarters `q` (any shape, negative allowed).

    Returns q.shape + (d,): even dims sin(q / 10000^(2i/d)), odd dims cos(same).
    """
    half = d // 2
    freq = torch.exp(
        -math.log(10000.0) * torch.arange(half, device=q.device, dtype=torch.float32) * 2.0 / d
    )
    angle = q.to(torch.float32).unsqueeze(-1) * freq
    out = torch.stack((torch.sin(angle), torch.cos(angle)), dim=-1).flatten(-2)
    if d % 2:  # odd widths get a zero last column
        out = torch.nn.functional.pad(out, (0, 1))
    return out


class TokenEmbedding(nn.Module):
    """All learned embedding parameters of Forma.

    Parameters: account table (n_accounts x d), industry table (n_industries x d),
    value direction w_x (d, no bias) and mask vector e_mask (d). With d=128, 82
    accounts and 49 industries that is 133 x 128 = 17,024 parameters.
    """

    def __init__(self, n_accounts: int, n_industries: int, d: int, anchor: bool = False):
        super().__init__()
        self.d = d
        self.account = nn.Embedding(n_accounts, d)
        self.industry = nn.Embedding(n_industries, d)
        self.w_x = nn.Parameter(torch.empty(d))
        self.e_mask = nn.Parameter(torch.empty(d))
        # PyTorch's default embedding init, N(0, 1), for every learned vector: at the scale
        # of the unit-amplitude sinusoid, so account identity and value are visible from
        # the first step (a GPT-style 0.02 init left tokens ~ PE(q) for hundreds of steps).
        for p in (self.account.weight, self.industry.weight, self.w_x, self.e_mask):
            nn.init.normal_(p, std=1.0)
        # anchored presets only (network.py): the direction of the item's origin value on
        # future tokens; absent otherwise, so `paper` keeps its parameter count
        self.w_anchor = nn.Parameter(torch.randn(d)) if anchor else None

    def forward(
        self,
        account: torch.Tensor,  # [B, T] long
        rel_q: torch.Tensor,  # [B, T] (int or float)
        x: torch.Tensor,  # [B, T] float; ignored where hidden
        hidden: torch.Tensor,  # [B, T] bool: value replaced by e_mask
        industry: torch.Tensor,  # [B] long
        anchor: torch.Tensor | None = None,  # [B, T] float: item's origin value on future tokens
    ) -> torch.Tensor:
        """[B, 1 + T, d]: the industry token first, then the tuple tokens."""
        value = torch.where(hidden.unsqueeze(-1), self.e_mask, x.unsqueeze(-1) * self.w_x)
        tokens = self.account(account) + sinusoidal(rel_q, self.d) + value
        if anchor is not None and self.w_anchor is not None:
            tokens = tokens + anchor.unsqueeze(-1).to(tokens.dtype) * self.w_anchor
        ind = self.industry(industry) + sinusoidal(torch.zeros_like(industry), self.d)
        return torch.cat((ind.unsqueeze(1), tokens), dim=1)
