"""beta-NLL losses (Seitzer et al. 2022), beta = 0.5, over tokens masked AND observed.

Gaussian: [(y-mu)^2 / (2 s^2) + log(s^2)/2] * stopgrad(s^2)^beta
Laplace (b = s / sqrt 2): [log 2b + |y-mu| / b] * stopgrad(b)^beta
The mean is token-weighted across the whole batch (every eligible token counts once),
so unrealized query tokens, padding and the industry token never enter it. Under DDP
the batch is the global one: `tokens` is then the eligible-token count of all ranks
together (train.py), so every token weighs the same whichever rank holds it.
"""

from __future__ import annotations

import math

import torch

from proforma.models.forma.network import LOGVAR_MAX, LOGVAR_MIN


def gaussian_beta_nll(
    y: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor, beta: float = 0.5
) -> torch.Tensor:
    """Per-token Gaussian beta-NLL."""
    logvar = logvar.clamp(LOGVAR_MIN, LOGVAR_MAX)
    var = torch.exp(logvar)
    nll = (y - mu) ** 2 / (2 * var) + 0.5 * logvar
    return nll * var.detach() ** beta if beta else nll


def laplace_beta_nll(
    y: torch.Tensor, mu: torch.Tensor, logvar: torch.Tensor, beta: float = 0.5
) -> torch.Tensor:
    """Per-token Laplace beta-NLL with b = sigma / sqrt(2)."""
    logvar = logvar.clamp(LOGVAR_MIN, LOGVAR_MAX)
    log_b = 0.5 * logvar - 0.5 * math.log(2.0)
    b = torch.exp(log_b)
    nll = math.log(2.0) + log_b + (y - mu).abs() / b
    return nll * b.detach() ** beta if beta else nll


LOSSES = {"gaussian": gaussian_beta_nll, "laplace": laplace_beta_nll}


def masked_loss(
    family: str,
    y: torch.Tensor,
    mu: torch.Tensor,
    logvar: torch.Tensor,
    loss_mask: torch.Tensor,
    beta: float = 0.5,
    tokens: float | torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss summed over loss_mask tokens / `tokens`, the local count of those tokens as a
    0-d tensor). `tokens` defaults to the local count (the mean); a batch without eligible
    tokens gives zero (with grad). Masked by multiplication, not indexing, so a GPU step
    never waits for the host to learn how many tokens there are."""
    sel = loss_mask.bool()
    n = sel.sum()
    per = LOSSES[family](y.float(), mu.float(), logvar.float(), beta)
    total = torch.where(sel, per, torch.zeros_like(per)).sum()
    denom = n.clamp(min=1).to(total.dtype) if tokens is None else tokens
    return total / denom, n
