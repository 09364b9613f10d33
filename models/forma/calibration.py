"""Interval calibration on held-out validation origins (split-conformal scaling of sigma).

A Gaussian head trained by (beta-)NLL matches the residuals' variance, not their shape:
on the synthetic panel's Student-t shocks its central intervals over-cover at 50-90% and
under-cover at 95% (docs/forma.md, "Intervals"). A seeded sample of validation origins is
kept out of training (`FormaConfig.calibration_origins`, whole firms); at prediction time the seeds'
mixture forecasts them with every future token hidden, as it forecasts the test split,
and one factor per horizon scales every component's sigma: the smallest factor whose
central 50/80/90/95% intervals of the mixture cover at least their nominal share of the
held-out realized cells. The points (mu) are never changed, so R2 and MAE are too.

Factors below 1 are not applied by default (`widen_only`): the held-out origins lie in
the validation years, next to the training years, and on the demo panel the residuals of
the later test years are wider. There the seeds' mixture over-covers the held-out cells
(0.676 / 0.883 / 0.936 / 0.961), the fitted factors narrow sigma by 5-16%, and the test
split's 95% interval then covers 0.942 of its cells instead of 0.955 (docs/forma.md,
"Intervals"). Held out, a model's overconfidence on unseen firms still shows and widens.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa

from proforma.contracts import families
from proforma.contracts.errors import UserError
from proforma.models.forma.batching import WindowStore

LEVELS = (0.5, 0.8, 0.9, 0.95)
#: the seed of the held-out sample: fixed, so every model seed holds out the same origins
#: and their mixture is calibrated on cells none of them saw
HOLDOUT_SEED = 20_240_101
#: a horizon with fewer held-out realized cells takes the factor of all horizons pooled
MIN_CELLS = 500


def holdout(store: WindowStore, n: int, split: str = "val") -> tuple[np.ndarray, np.ndarray]:
    """(training rows, held-out rows) of `store`: every `split` origin of a seeded sample
    of firms, firms drawn until at least n origins are held out (all of them when the split
    has fewer); every other origin trains. Whole firms, because origins of one firm a
    quarter apart share most of their window: a held-out origin next to a trained one
    would have its targets seen in training. Train windows end where the split begins
    (the purge), so a held-out firm's validation years are never seen."""
    candidates = np.flatnonzero(store.split == split)
    if n <= 0 or len(candidates) == 0:
        return np.arange(len(store)), np.array([], dtype=np.int64)
    firms = np.unique(store.firm_id[candidates])
    order = np.random.default_rng(HOLDOUT_SEED).permutation(firms)
    per_firm = np.bincount(np.searchsorted(firms, store.firm_id[candidates]), minlength=len(firms))
    counts = per_firm[np.searchsorted(firms, order)]
    chosen = order[: int(np.searchsorted(np.cumsum(counts), n)) + 1]
    held = candidates[np.isin(store.firm_id[candidates], chosen)]
    return np.setdiff1d(np.arange(len(store)), held), held


def realized_cells(store: WindowStore) -> dict[str, np.ndarray]:
    """Every realized future cell of windows read with their future: origin row, item,
    horizon, the actual standardized level, and the item's origin value (the baseline of
    change-space R2). A cell counts only when its item has a value at the origin (the
    task's rule: the future grid holds only items reported at the origin)."""
    lens = np.diff(store.offsets)
    owner = np.repeat(np.arange(len(store), dtype=np.int64), lens)
    rq, it, x = store.rel_q.astype(np.int64), store.item_id.astype(np.int64), store.x
    at0 = (rq == 0) & (it > 0)
    base_key = owner[at0] * 1000 + it[at0]
    order = np.argsort(base_key)
    base_key, base_val = base_key[order], x[at0][order]
    fut = rq >= 1
    key0 = owner[fut] * 1000 + it[fut]
    if len(base_key) == 0:
        ok = np.zeros(len(key0), dtype=bool)
        loc = np.zeros(len(key0), dtype=np.int64)
    else:
        loc = np.minimum(np.searchsorted(base_key, key0), len(base_key) - 1)
        ok = base_key[loc] == key0
    return {
        "origin": owner[fut][ok],
        "item": it[fut][ok],
        "horizon": rq[fut][ok],
        "actual": x[fut][ok].astype(np.float64),
        "baseline": base_val[loc][ok].astype(np.float64) if ok.any() else np.zeros(0),
    }


def component_cdf(z: np.ndarray, family: str = families.DEFAULT_FAMILY) -> np.ndarray:
    """CDF of the standardized residual z = (y - mu) / sigma (the family registry's)."""
    cdf = families.FAMILIES[family].standard_cdf
    if cdf is None:
        raise UserError(f"Family {family} has no standard CDF for the calibration")
    return np.asarray(cdf(z))


def central_coverage(
    y: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    levels: Sequence[float] = LEVELS,
    family: str = "gaussian",
) -> np.ndarray:
    """Share of cells inside each central interval of the equal-weight mixture
    (components on axis 0 of mu and sigma, cells on axis 1): PIT u = mean_k F((y -
    mu_k) / sigma_k), inside level p when |u - 1/2| <= p / 2 (docs/scoring.md)."""
    u = component_cdf((y[None, :] - mu) / sigma, family).mean(axis=0)
    dist = np.abs(u - 0.5)
    return np.array([float((dist <= p / 2).mean()) for p in levels])


def coverage_scale(
    y: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    levels: Sequence[float] = LEVELS,
    family: str = "gaussian",
    lo: float = 0.25,
    hi: float = 16.0,
    iters: int = 30,
) -> float:
    """The smallest factor c (to about 1e-4 relative) such that the mixture with every
    sigma multiplied by c covers at least level p of the cells for every p in `levels`.
    Coverage rises with c (each component's PIT moves towards 1/2), so "every level
    covered" turns true once and stays true: one bisection on log c finds it."""
    y = np.asarray(y, np.float64)
    mu = np.atleast_2d(np.asarray(mu, np.float64))
    sigma = np.atleast_2d(np.asarray(sigma, np.float64))
    if y.size == 0:
        raise ValueError("no cells to calibrate on")
    nominal = np.asarray(levels, np.float64)

    def covers(c: float) -> bool:
        return bool((central_coverage(y, mu, sigma * c, levels, family) >= nominal).all())

    if covers(lo):
        return lo
    if not covers(hi):
        return hi
    a, b = np.log(lo), np.log(hi)
    for _ in range(iters):
        m = 0.5 * (a + b)
        a, b = (a, m) if covers(float(np.exp(m))) else (m, b)
    return float(np.exp(b))


def horizon_scales(
    y: np.ndarray,
    horizon: np.ndarray,
    mu: np.ndarray,
    sigma: np.ndarray,
    max_horizon: int = 20,
    levels: Sequence[float] = LEVELS,
    family: str = "gaussian",
    min_cells: int = MIN_CELLS,
) -> dict:
    """Per-horizon factors (index h - 1) for horizons 1..max_horizon, with the pooled factor
    where a horizon has fewer than `min_cells` realized cells, and what each rests on."""
    mu = np.atleast_2d(mu)
    sigma = np.atleast_2d(sigma)
    pooled = coverage_scale(y, mu, sigma, levels, family)
    scales, cells = [], []
    for h in range(1, max_horizon + 1):
        sel = horizon == h
        n = int(sel.sum())
        cells.append(n)
        scales.append(
            coverage_scale(y[sel], mu[:, sel], sigma[:, sel], levels, family)
            if n >= min_cells
            else pooled
        )
    before = central_coverage(y, mu, sigma, levels, family)
    factor = np.asarray(scales)[horizon - 1][None, :]
    after = central_coverage(y, mu, sigma * factor, levels, family)
    return {
        "scale_by_horizon": [float(s) for s in scales],
        "pooled_scale": float(pooled),
        "cells_by_horizon": cells,
        "levels": list(levels),
        "coverage_before": [round(float(c), 5) for c in before],
        "coverage_after": [round(float(c), 5) for c in after],
    }


def scaled(batches: Iterator[pa.RecordBatch], scale_by_horizon: Sequence[float]):
    """Forecast batches (models.FORECAST_SCHEMA) with sigma multiplied by its horizon's factor."""
    factors = np.asarray(scale_by_horizon, np.float64)
    for b in batches:
        i = b.schema.get_field_index("sigma")
        h = b.column("horizon").to_numpy().astype(np.int64)
        sigma = b.column(i).to_numpy() * factors[np.clip(h, 1, len(factors)) - 1]
        yield b.set_column(i, "sigma", pa.array(sigma, pa.float64()))


def calibrate(
    models: Sequence,
    truth: WindowStore,
    family: str = "gaussian",
    *,
    batch_size: int | None = None,
    device: str = "cpu",
    max_horizon: int = 20,
    widen_only: bool = True,
) -> dict:
    """Forecast the held-out origins of `truth` (windows read with their future) from their
    history alone with the seeds' mixture, every future token hidden, and fit the
    per-horizon factors on their realized cells. With `widen_only` a factor below 1 is not
    applied (see the module's docstring)."""
    from proforma.models.forma.predict import predict

    cells = realized_cells(truth)
    origin_key = truth.firm_id.astype(np.int64) * 100_000 + truth.origin_q
    cell_key = (cells["origin"] * 1000 + cells["item"]) * 100 + cells["horizon"]
    k = len(models)
    mu = np.full((k, len(cell_key)), np.nan)
    sigma = np.full((k, len(cell_key)), np.nan)
    order = np.argsort(cell_key)
    sorted_keys = cell_key[order]
    for b in predict(models, truth.history(), batch_size=batch_size, device=device):
        okey = b.column("firm_id").to_numpy().astype(np.int64) * 100_000 + b.column(
            "origin_q"
        ).to_numpy().astype(np.int64)
        row = np.searchsorted(origin_key, okey)
        row = np.minimum(row, len(origin_key) - 1)
        known = origin_key[row] == okey
        key = (row * 1000 + b.column("item_id").to_numpy()) * 100 + b.column("horizon").to_numpy()
        loc = np.minimum(np.searchsorted(sorted_keys, key), max(len(sorted_keys) - 1, 0))
        hit = known & (len(sorted_keys) > 0) & (sorted_keys[loc] == key)
        comp = b.column("component").to_numpy().astype(np.int64)
        mu[comp[hit], order[loc[hit]]] = b.column("mu").to_numpy()[hit]
        sigma[comp[hit], order[loc[hit]]] = b.column("sigma").to_numpy()[hit]
    ok = np.isfinite(mu).all(axis=0) & np.isfinite(sigma).all(axis=0)
    if not ok.any():
        raise ValueError("the held-out origins have no realized cells to calibrate on")
    y, h, mu, sigma = cells["actual"][ok], cells["horizon"][ok], mu[:, ok], sigma[:, ok]
    out = horizon_scales(y, h, mu, sigma, max_horizon, family=family)
    fitted = out["scale_by_horizon"]
    out["fitted_scale_by_horizon"] = fitted
    out["widen_only"] = widen_only
    if widen_only:
        applied = [max(1.0, f) for f in fitted]
        factor = np.asarray(applied)[h - 1][None, :]
        after = central_coverage(y, mu, sigma * factor, out["levels"], family)
        out["scale_by_horizon"] = applied
        out["coverage_after"] = [round(float(c), 5) for c in after]
    out["origins"] = len(truth)
    out["firms"] = len(np.unique(truth.firm_id))
    out["cells"] = int(ok.sum())
    return out
