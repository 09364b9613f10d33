"""Token embeddings: account, industry, relative quarter (fixed sinusoid), value or mask.

A token's initial representation is E_acct(id) + PE(q) + E_value(x, m) with
E_value = w_x * x when visible and e_mask when hidden (the paper's token equations). The
industry token is E_industry(c) + PE(0) and carries no value part.

Optional (`seasonal=True`, docs/forma.md "Presets"): every future token at quarter q also
sees its item's latest visible history value of the same season (quarter of the year),
at rel_q = ((q - 1) mod 4) - 3 (q = 1 -> -3, q = 4 -> 0, q = 5 -> -3), as
`w_season * value`, or `e_season` when the set holds no visible value there; with
`year_ago=True` also its item's value at rel_q -4 (`w_year`, `e_year`), so that the
seasonal random walk with drift, x(s) + x(0) - x(-4), is a linear read-out.
"""

from __future__ import annotations

import math

import torch
from torch import nn


def seasonal_lag(
    account: torch.Tensor,
    rel_q: torch.Tensor,
    x: torch.Tensor,
    hidden: torch.Tensor,
    n_rows: int,
    year_ago: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """For every token with rel_q >= 1: the visible value of its account at
    rel_q = ((q - 1) mod 4) - 3 in the same set, and whether there is one ([B, T] each;
    0 / False elsewhere); with `year_ago` instead the value at rel_q -4 (the origin's
    quarter a year before). Hidden tokens (masked history, padding) never count, and only
    history (rel_q -4..0) is looked at, so pins and realized futures cannot leak in."""
    b = account.shape[0]
    rq = rel_q.long()
    # one row per (set, account, quarter -4..0); everything else lands in a spare slot
    spare = n_rows * 5
    src = (rq <= 0) & (rq >= -4) & ~hidden
    slot = torch.where(src, account * 5 + rq + 4, torch.full_like(account, spare))
    value = x.new_zeros(b, spare + 1).scatter_(1, slot, torch.where(src, x, torch.zeros_like(x)))
    seen = torch.zeros(b, spare + 1, dtype=torch.bool, device=x.device)
    seen.scatter_(1, slot, src)
    fut = rq >= 1
    at = torch.zeros_like(rq) if year_ago else torch.remainder(rq - 1, 4) + 1
    want = torch.where(fut, account * 5 + at, torch.full_like(account, spare))
    return value.gather(1, want), seen.gather(1, want) & fut


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

    def __init__(
        self,
        n_accounts: int,
        n_industries: int,
        d: int,
        anchor: bool = False,
        seasonal: bool = False,
        year_ago: bool = False,
    ):
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
        # seasonal presets only: the same-season value of last year (module docstring)
        self.w_season = nn.Parameter(torch.randn(d)) if seasonal else None
        self.e_season = nn.Parameter(torch.randn(d)) if seasonal else None
        self.w_year = nn.Parameter(torch.randn(d)) if year_ago else None
        self.e_year = nn.Parameter(torch.randn(d)) if year_ago else None

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
        fut = (rel_q >= 1).unsqueeze(-1)
        for year_ago, w, e in (
            (False, self.w_season, self.e_season),
            (True, self.w_year, self.e_year),
        ):
            if w is None or e is None:
                continue
            v, seen = seasonal_lag(
                account, rel_q, x, hidden, self.account.num_embeddings, year_ago=year_ago
            )
            add = torch.where(seen.unsqueeze(-1), v.unsqueeze(-1).to(tokens.dtype) * w, e)
            tokens = tokens + torch.where(fut, add, torch.zeros_like(add))
        ind = self.industry(industry) + sinusoidal(torch.zeros_like(industry), self.d)
        return torch.cat((ind.unsqueeze(1), tokens), dim=1)
