"""Scenario analysis by conditioning (docs/forma.md, "Commands": `proforma scenario`).

Pinned future tuples stay visible as inputs; every other query token of the ex-ante grid
is forecast conditional on them in one forward pass per checkpoint. Values cross between
dollars and the standardized space with the ORIGIN's parameters (panel.item_k,
panel.origin_params at q = origin, the origin deflator z), by models/standardization.py:

    x = clip((asinh(k v / z) - mu) / sigma, -6, 6)
    v = z / k * sinh(x sigma + mu)

The map is monotone, so standardized quantiles map to dollar quantiles; the mean does not
map (sinh is not linear), so the expected dollars come from the closed form in
models/dollars.py. The flows in app/flows/scenario.py read these parameters from the warehouse
and hand them here as arrays.

The oracle experiment pins the realized path of one item (revenue) at every horizon and
compares the remaining cells with the unconditional forecast on the same origins.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.models.forma.batching import WindowStore, build_example, collate
from proforma.models.forma.network import Forma
from proforma.models.forma.predict import (
    default_batch_size,
    mixture_moments,
    mixture_quantile,
    run_batch,
    run_slots,
    slot_index,
)
from proforma.models.standardization import destandardize, standardize

LEVELS = (0.5, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class OriginParams:
    """Standardization parameters of one origin: per item k, mu, sigma; the deflator z."""

    z: float
    k: Mapping[int, float]
    mu: Mapping[int, float]
    sigma: Mapping[int, float]

    def to_std(self, item: int, v: float) -> float:
        if item not in self.k:
            raise KeyError(item)
        return float(standardize(v, self.k[item], self.z, self.mu[item], self.sigma[item]))

    def to_dollars(self, item: int, x: np.ndarray | float) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        return destandardize(x, self.k[item], self.z, self.mu[item], self.sigma[item])


def conditional_forecast(
    models: Sequence[Forma],
    store: WindowStore,
    i: int,
    pins: Mapping[tuple[int, int], float],
    *,
    max_horizon: int = 20,
    device: str = "cpu",
    family: str = "gaussian",
    account_map: np.ndarray | None = None,
    last_q: dict[str, int] | None = None,
) -> pa.Table:
    """The conditional statement forecast of origin `i` in standardized units.

    pins: {(item_id, horizon): standardized value}. Returns one row per (item, horizon)
    of the grid plus every pin: item_id, horizon, pinned, point, sigma (mixture moments),
    lo_XX/hi_XX central interval bounds at LEVELS (exact mixture quantiles), and the
    per-component mu/sigma lists. Pinned rows carry their pinned value, sigma 0.
    """
    if account_map is None:
        account_map = np.arange(models[0].embed.account.num_embeddings, dtype=np.int64)
    ex = build_example(
        store,
        i,
        max_horizon,
        pins=dict(pins),
        last_q=last_q,
        lookback=getattr(models[0], "lookback", 12),
    )
    batch = collate([ex], account_map)
    mus, sigmas = [], []
    for m in models:
        mu, sigma = run_batch(m, batch, device)
        mus.append(mu[0])
        sigmas.append(sigma[0])
    mu_k, sig_k = np.stack(mus), np.stack(sigmas)
    fut = ex.future
    pinned = fut & ~ex.hidden
    rows = np.nonzero(fut)[0]
    point, sigma = mixture_moments(mu_k[:, rows], sig_k[:, rows])
    out = {
        "item_id": ex.item_id[rows].astype(np.int16),
        "horizon": ex.rel_q[rows].astype(np.int8),
        "pinned": pinned[rows],
        "point": np.where(pinned[rows], ex.x[rows], point),
        "sigma": np.where(pinned[rows], 0.0, sigma),
    }
    for p in LEVELS:
        lo = mixture_quantile(mu_k[:, rows], sig_k[:, rows], (1 - p) / 2, family)
        hi = mixture_quantile(mu_k[:, rows], sig_k[:, rows], (1 + p) / 2, family)
        tag = f"{round(p * 100):02d}"
        out[f"lo_{tag}"] = np.where(pinned[rows], ex.x[rows], lo)
        out[f"hi_{tag}"] = np.where(pinned[rows], ex.x[rows], hi)
    out["mu_k"] = [list(map(float, mu_k[:, r])) for r in rows]
    out["sigma_k"] = [list(map(float, sig_k[:, r])) for r in rows]
    order = np.lexsort((out["horizon"], out["item_id"]))
    return pa.table(
        {
            k: (np.asarray(v)[order] if not isinstance(v, list) else [v[j] for j in order])
            for k, v in out.items()
        }
    )


def to_dollars(table: pa.Table, params: OriginParams, family: str = "gaussian") -> pa.Table:
    """Add dollar columns: `expected_usd` (the mixture's mean in dollars by the closed
    form, models/dollars.py; a pinned cell's pinned value), `point_usd` (the plug-in
    dollars of the standardized point, z sinh(x sigma + mu) / k, which the coherence
    measure uses) and `*_usd` for the interval bounds (quantiles map through the
    monotone transform)."""
    from proforma.models.dollars import expected_dollars

    items = table.column("item_id").to_numpy()
    cols = ["point"] + [c for c in table.column_names if c.startswith(("lo_", "hi_"))]
    usd = {c: np.full(table.num_rows, np.nan) for c in cols}
    expected = np.full(table.num_rows, np.nan)
    pinned = table.column("pinned").to_numpy(zero_copy_only=False)
    mu_k = table.column("mu_k").to_pylist()
    sigma_k = table.column("sigma_k").to_pylist()
    for item in np.unique(items):
        if int(item) not in params.k or int(item) not in params.mu:
            continue
        sel = items == item
        for c in cols:
            vals = table.column(c).to_numpy(zero_copy_only=False).astype(float)
            usd[c][sel] = params.to_dollars(int(item), vals[sel])
        rows = np.nonzero(sel)[0]
        m = np.array([mu_k[r] for r in rows], dtype=float).T  # (components, rows)
        s = np.array([sigma_k[r] for r in rows], dtype=float).T
        expected[rows] = expected_dollars(
            m,
            s,
            params.k[int(item)],
            params.z,
            params.mu[int(item)],
            params.sigma[int(item)],
            family=family,
            component_axis=0,
        )
    expected = np.where(pinned, usd["point"], expected)
    table = table.append_column("expected_usd", pa.array(expected))
    for c in cols:
        table = table.append_column(f"{c}_usd", pa.array(usd[c]))
    return table


def identity_check(
    table: pa.Table,
    identity: Sequence[str],
    item_id: Sequence[int],
    sign: Sequence[int],
    value_column: str = "point_usd",
) -> pa.Table:
    """Per (identity, horizon) with every member forecast: the signed sum in dollars, the
    sum of absolute terms, and the relative violation |sum| / sum|terms|."""
    items = table.column("item_id").to_numpy()
    hz = table.column("horizon").to_numpy()
    vals = table.column(value_column).to_numpy(zero_copy_only=False).astype(float)
    lookup = {(int(a), int(b)): v for a, b, v in zip(items, hz, vals)}
    ident = np.asarray(identity).astype(str)
    items_of, signs = np.asarray(item_id), np.asarray(sign)
    rows: dict[str, list[object]] = {
        "identity": [],
        "horizon": [],
        "residual": [],
        "gross": [],
        "violation": [],
    }
    for name in sorted(set(ident.tolist())):
        sel = ident == name
        for h in sorted(set(hz.tolist())):
            terms = [lookup.get((int(it), int(h))) for it in items_of[sel]]
            if any(t is None or not np.isfinite(t) for t in terms):
                continue
            signed = np.asarray(terms) * signs[sel]
            gross = float(np.abs(signed).sum())
            rows["identity"].append(name)
            rows["horizon"].append(int(h))
            rows["residual"].append(float(signed.sum()))
            rows["gross"].append(gross)
            rows["violation"].append(abs(float(signed.sum())) / gross if gross > 0 else 0.0)
    return pa.table(rows)


def r2_changes(actual: np.ndarray, baseline: np.ndarray, pred: np.ndarray) -> float:
    """Pooled change-space R^2 with the truth-only denominator (docs/scoring.md)."""
    y = actual - baseline
    r = pred - actual
    n = len(y)
    if n == 0:
        return float("nan")
    den = float((y**2).sum() - y.sum() ** 2 / n)
    if den <= 1e-15:
        return float("nan")
    return 1.0 - float((r**2).sum()) / (den + 1e-12)


def _slot_means(models: Sequence[Forma], batch: Any, device: str) -> np.ndarray:
    """The seeds' mean mu at every hidden slot of the batch, [B, T] (NaN elsewhere): only
    the slots go through the last layer and the heads (run_slots), as in predict."""
    index, valid = slot_index(batch)
    rows = np.nonzero(valid)[0]
    out = np.full(tuple(batch.slot.shape), np.nan)
    out[rows, index[valid]] = np.stack(
        [run_slots(m, batch, index, device)[0][valid] for m in models]
    ).mean(0)
    return out


def oracle_cells(
    models: Sequence[Forma],
    store: WindowStore,
    pin_item: int,
    *,
    max_horizon: int = 20,
    batch_size: int | None = None,
    device: str = "cpu",
    account_map: np.ndarray | None = None,
    last_q: dict[str, int] | None = None,
    progress: bool = False,
) -> dict[str, np.ndarray]:
    """Per non-pinned realized cell of origins with a realized `pin_item` path: item, horizon,
    actual, baseline (x_t), unconditional and conditional mixture point forecasts."""
    from proforma.models.progress import progress_bar

    batch_size = batch_size or default_batch_size(device)
    if account_map is None:
        account_map = np.arange(models[0].embed.account.num_embeddings, dtype=np.int64)
    keep: dict[str, list[float]] = {
        k: [] for k in ("item_id", "horizon", "actual", "baseline", "uncond", "cond")
    }
    idx = np.arange(len(store))
    for s in progress_bar(
        range(0, len(idx), batch_size),
        desc="oracle",
        unit="batch",
        disable=not progress,
        leave=False,
    ):
        plain, pinned, targets = [], [], []
        for i in idx[s : s + batch_size]:
            rq, it, xv = store.window(int(i))
            path = {
                (pin_item, int(q)): float(x)
                for q, t, x in zip(rq, it, xv)
                if t == pin_item and 1 <= q <= max_horizon
            }
            base = {int(t): float(x) for q, t, x in zip(rq, it, xv) if q == 0}
            if not path or pin_item not in base:
                continue
            lb = getattr(models[0], "lookback", 12)
            ex_u = build_example(store, int(i), max_horizon, last_q=last_q, lookback=lb)
            ex_c = build_example(store, int(i), max_horizon, pins=path, last_q=last_q, lookback=lb)
            # realized value of every future slot, from the window itself
            real = {(int(t), int(q)): float(x) for q, t, x in zip(rq, it, xv) if q >= 1}
            plain.append(ex_u)
            pinned.append(ex_c)
            targets.append((real, base))
        if not plain:
            continue
        bu, bc = collate(plain, account_map), collate(pinned, account_map)
        mu_u, mu_c = _slot_means(models, bu, device), _slot_means(models, bc, device)
        for r, (ex_u, ex_c, (real, base)) in enumerate(zip(plain, pinned, targets)):
            # grid order is identical in both examples (pins on the grid only unhide slots)
            n = len(ex_u.item_id)
            for c in np.nonzero(ex_u.slot & (ex_u.item_id != pin_item))[0]:
                key = (int(ex_u.item_id[c]), int(ex_u.rel_q[c]))
                if key not in real or key[0] not in base:
                    continue
                assert ex_c.item_id[c] == key[0] and c < n
                keep["item_id"].append(key[0])
                keep["horizon"].append(key[1])
                keep["actual"].append(real[key])
                keep["baseline"].append(base[key[0]])
                keep["uncond"].append(mu_u[r, c])
                keep["cond"].append(mu_c[r, c])
    return {
        k: np.asarray(v, dtype=float if k not in ("item_id", "horizon") else np.int64)
        for k, v in keep.items()
    }


def oracle_summary(cells: Mapping[str, np.ndarray], statement_of: Mapping[int, str]) -> pa.Table:
    """Change in MAE and R^2 (conditional minus unconditional): overall, by horizon, by statement."""
    groups: list[tuple[str, str, np.ndarray]] = [
        ("all", "all", np.ones(len(cells["actual"]), bool))
    ]
    for h in sorted(set(cells["horizon"].tolist())):
        groups.append(("horizon", str(h), cells["horizon"] == h))
    stmt = np.array([statement_of.get(int(i), "?") for i in cells["item_id"]])
    for s in sorted(set(stmt.tolist())):
        groups.append(("statement", s, stmt == s))
    out: dict[str, list[object]] = {
        k: []
        for k in (
            "group",
            "key",
            "cells",
            "mae_uncond",
            "mae_cond",
            "d_mae",
            "r2_uncond",
            "r2_cond",
            "d_r2",
        )
    }
    for g, key, sel in groups:
        a, b = cells["actual"][sel], cells["baseline"][sel]
        u, c = cells["uncond"][sel], cells["cond"][sel]
        mu_, mc_ = (
            float(np.abs(u - a).mean()) if len(a) else np.nan,
            float(np.abs(c - a).mean()) if len(a) else np.nan,
        )
        ru, rc = r2_changes(a, b, u), r2_changes(a, b, c)
        for k, v in zip(out, (g, key, int(sel.sum()), mu_, mc_, mc_ - mu_, ru, rc, rc - ru)):
            out[k].append(v)
    return pa.table(out)


def oracle_breakdown(cells: Mapping[str, np.ndarray], statement_of: Mapping[int, str]) -> pa.Table:
    """The changes of `oracle_summary` by (statement class, horizon), with 'all' for every
    class together: the series of the paper's Figure 2."""
    stmt = np.array([statement_of.get(int(i), "?") for i in cells["item_id"]])
    out: dict[str, list[object]] = {
        k: []
        for k in (
            "statement",
            "horizon",
            "cells",
            "mae_uncond",
            "mae_cond",
            "d_mae",
            "r2_uncond",
            "r2_cond",
            "d_r2",
        )
    }
    for s in ["all", *sorted(set(stmt.tolist()))]:
        for h in sorted(set(cells["horizon"].tolist())):
            sel = (cells["horizon"] == h) & ((stmt == s) if s != "all" else True)
            if not sel.any():
                continue
            a, b = cells["actual"][sel], cells["baseline"][sel]
            u, c = cells["uncond"][sel], cells["cond"][sel]
            mu_, mc_ = float(np.abs(u - a).mean()), float(np.abs(c - a).mean())
            ru, rc = r2_changes(a, b, u), r2_changes(a, b, c)
            for k, v in zip(out, (s, int(h), int(sel.sum()), mu_, mc_, mc_ - mu_, ru, rc, rc - ru)):
                out[k].append(v)
    return pa.table(out)
