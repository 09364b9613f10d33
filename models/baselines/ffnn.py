"""Feed-forward networks: one network, 985 features -> two 1,560-wide heads.

The heads give a mean and a log-variance per (item, horizon) (78 x 20 = 1,560). Loss:
the masked Gaussian beta-NLL of Forma (beta = 0.5, log-variance clamped to [-10, 10]);
a missing target contributes nothing instead of dropping the row; rows are dropped
only for missing features (rare after imputation).

- linear: no hidden layer (3,076,320 parameters);
- large: GELU hidden layers 1024/1024/512 with dropout 0.1 (4,184,624 parameters).

AdamW, learning rate 1e-4, no weight decay, batch 1024, a fixed 6 epochs on train +
validation; each variant is a five-seed (60-64) equal-weight mixture whose members
keep their sigma, so both enter the density track (component = seed's position).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from proforma.models.baselines.base import Forecast
from proforma.models.baselines.data import N_HORIZONS, TabularData
from proforma.models.baselines.fanout import Tracker
from proforma.models.baselines.fit_cache import FitCache
from proforma.models.baselines.grid import data_fingerprint as _fingerprint
from proforma.models.baselines.presets import FFNN_PAPER

VARIANTS = ("linear", "large")
BETA = 0.5
LOGVAR_CLAMP = (-10.0, 10.0)


class FFNN(nn.Module):
    """985 -> (mu, log var), each n_items x 20 wide."""

    def __init__(
        self,
        variant: str = "linear",
        n_features: int = 985,
        n_out: int = 78 * N_HORIZONS,
        hidden: tuple[int, ...] = (1024, 1024, 512),
        dropout: float = 0.1,
    ):
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}")
        layers: list[nn.Module] = []
        width = n_features
        if variant == "large":
            for w in hidden:
                layers += [nn.Linear(width, w), nn.GELU(), nn.Dropout(dropout)]
                width = w
        self.trunk = nn.Sequential(*layers)
        self.mu = nn.Linear(width, n_out)
        self.logvar = nn.Linear(width, n_out)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.trunk(x)
        return self.mu(z), self.logvar(z).clamp(*LOGVAR_CLAMP)


def n_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def beta_nll(
    mu: torch.Tensor, logvar: torch.Tensor, y: torch.Tensor, mask: torch.Tensor, beta: float = BETA
) -> torch.Tensor:
    """Masked Gaussian beta-NLL (Seitzer et al.): NLL per cell weighted by var^beta (no grad)."""
    var = logvar.exp()
    nll = 0.5 * (logvar + (y - mu) ** 2 / var)
    if beta:
        nll = nll * var.detach() ** beta
    m = mask.to(nll.dtype)
    return (nll * m).sum() / m.sum().clamp_min(1.0)


def train_one(
    variant: str, X: np.ndarray, Y: np.ndarray, seed: int, spec: dict[str, Any], advance: Any = None
) -> dict[str, torch.Tensor]:
    """Train one seed on rows X (n, 985), targets Y (n, 1560) with NaN = missing."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = FFNN(variant, X.shape[1], Y.shape[1])
    opt = torch.optim.AdamW(model.parameters(), lr=spec["lr"], weight_decay=0.0)
    Xt = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    mask = torch.from_numpy(np.isfinite(Y))
    Yt = torch.from_numpy(np.nan_to_num(Y, nan=0.0).astype(np.float32))
    bs = spec["batch_size"]
    model.train()
    for _ in range(spec["epochs"]):
        order = torch.randperm(Xt.shape[0], generator=gen)
        for lo in range(0, Xt.shape[0], bs):
            idx = order[lo : lo + bs]
            mu, logvar = model(Xt[idx])
            loss = beta_nll(mu, logvar, Yt[idx], mask[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if advance is not None:
            advance(1)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@torch.no_grad()
def predict_one(
    variant: str, state: dict[str, torch.Tensor], X: np.ndarray, n_out: int, batch_size: int = 8192
) -> tuple[np.ndarray, np.ndarray]:
    model = FFNN(variant, X.shape[1], n_out)
    model.load_state_dict(state)
    model.eval()
    mu = np.full((X.shape[0], n_out), np.nan, dtype=np.float32)
    sigma = np.full((X.shape[0], n_out), np.nan, dtype=np.float32)
    ok = np.nonzero(np.isfinite(X).all(axis=1))[0]
    for lo in range(0, ok.size, batch_size):
        rows = ok[lo : lo + batch_size]
        m, lv = model(torch.from_numpy(np.ascontiguousarray(X[rows], dtype=np.float32)))
        mu[rows] = m.numpy()
        sigma[rows] = torch.exp(0.5 * lv).numpy()
    return mu, sigma


def fit_predict(
    train: TabularData,
    val: TabularData,
    test: TabularData,
    cache_root: Any,
    variant: str = "linear",
    spec: dict[str, Any] | None = None,
    *,
    tracker: Tracker | None = None,
) -> Forecast:
    """Train each seed on train+val (resumable per seed) and forecast the test split."""
    spec = spec or FFNN_PAPER
    tracker = tracker or Tracker()
    fit = TabularData.concat(train, val)
    ok = np.isfinite(fit.X).all(axis=1)
    fit = fit.rows(ok).subsample(spec.get("max_rows"), seed=0)
    n_items = len(fit.items)
    Y = fit.Y.reshape(fit.n, n_items * N_HORIZONS)
    model = f"ffnn-{variant}"
    fits = FitCache(
        cache_root, model, {"variant": variant, "spec": spec}, _fingerprint(train, val, test)
    )
    seeds = list(spec["seeds"])
    advance = tracker.stage(f"{model}: epochs", len(seeds) * spec["epochs"])
    components: list[tuple[np.ndarray, np.ndarray | None]] = []
    for seed in seeds:
        if fits.has("seed", f"s{seed}"):
            advance(spec["epochs"])
        else:
            state = train_one(variant, fit.X, Y, seed, spec, advance)
            fits.save("seed", f"s{seed}", state)
        mu, sigma = predict_one(variant, fits.load("seed", f"s{seed}"), test.X, Y.shape[1])
        components.append(
            (mu.reshape(test.n, n_items, N_HORIZONS), sigma.reshape(test.n, n_items, N_HORIZONS))
        )
    return Forecast(
        test,
        components,
        {
            "seeds": seeds,
            "rows": fit.n,
            "run": str(fits.dir),
            "parameters": n_parameters(FFNN(variant)),
        },
    )
