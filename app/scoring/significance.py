"""Diebold-Mariano tests on per-quarter mean losses that SQL computed.

The numerics SQL cannot express well live here as small named functions: the
Newey-West long-run variance (Bartlett weights, bandwidth h - 1; 19 when horizons are
pooled), the Harvey-Leybourne-Newbold small-sample factor, and the Student-t p-value
with T - 1 degrees of freedom.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyarrow as pa

from proforma.app.warehouse import Warehouse

POOLED_HORIZON = 20  # pooled tests use h = 20, i.e. bandwidth 19


def newey_west_variance(d: np.ndarray, bandwidth: int) -> float:
    """Long-run variance of a series with Bartlett weights 1 - j / (bandwidth + 1)."""
    d = np.asarray(d, dtype=float)
    t = d.size
    e = d - d.mean()
    lrv = float(e @ e) / t
    for j in range(1, min(bandwidth, t - 1) + 1):
        gamma = float(e[j:] @ e[:-j]) / t
        lrv += 2.0 * (1.0 - j / (bandwidth + 1.0)) * gamma
    return lrv


def diebold_mariano(d: np.ndarray, h: int) -> tuple[float, float, float]:
    """(mean, HLN-corrected DM statistic, two-sided p from t with T-1 df) for loss differentials.

    d is loss(a) - loss(b) per period; a positive statistic favours b.
    """
    d = np.asarray(d, dtype=float)
    t = d.size
    mean = float(d.mean()) if t else math.nan
    if t < 2:
        return mean, math.nan, math.nan
    lrv = newey_west_variance(d, h - 1)
    if not lrv > 0:
        return mean, math.nan, math.nan
    stat = mean / math.sqrt(lrv / t)
    hln = (t + 1 - 2 * h + h * (h - 1) / t) / t
    if not hln > 0:
        return mean, math.nan, math.nan
    stat *= math.sqrt(hln)
    # scipy.stats.t.sf(x, df) is special.stdtr(df, -x): the same value without the
    # distribution object's per-call overhead (about 0.1 ms, once per pair, loss and
    # horizon: a run tests a new submission against every other one)
    from scipy import special  # here, not at the top: scipy costs every CLI start 0.1 s

    p = float(2 * special.stdtr(t - 1, -abs(stat)))
    return mean, stat, p


def run_dm_tests(
    wh: Warehouse,
    score_run_id: int,
    submission_ids: list[int],
    *,
    skip: set[tuple[int, int]] | None = None,
) -> int:
    """Every pair of a run, squared and absolute loss, pooled (horizon 0) and per horizon,
    from eval.quarter_losses into eval.dm_test_rows (the view eval.dm_tests shows them);
    returns rows written. Pairs in `skip`
    (lower id first) already have their tests in the run (copied from an earlier run on
    the same sample). A loss that a submission does not have (the absolute loss of a
    quantile grid without a median) gets no test."""
    skip = skip or set()
    pairs = [
        (a, b)
        for a, b in itertools.combinations(submission_ids, 2)
        if (min(a, b), max(a, b)) not in skip
    ]
    if not pairs:
        return 0
    rows = wh.fetchall(
        "SELECT submission_id, horizon, origin_q, n, sum_sq, sum_abs FROM eval.quarter_losses "
        "WHERE score_run_id = ? AND list_contains(?, submission_id) ORDER BY origin_q",
        [score_run_id, sorted({s for pair in pairs for s in pair})],
    )
    if not rows:
        return 0
    arr = np.array(rows, dtype=float)
    quarters = np.unique(arr[:, 2])
    qi = np.searchsorted(quarters, arr[:, 2])
    horizons = sorted({int(h) for h in arr[:, 1]})
    # sums[sub][h] -> (n, sq, abs) per quarter; h = 0 pools horizons.
    sums: dict[int, dict[int, np.ndarray]] = {}
    for sid in sorted({s for pair in pairs for s in pair}):
        mine = arr[:, 0] == sid
        per = {}
        for h in [0, *horizons]:
            sel = mine if h == 0 else mine & (arr[:, 1] == h)
            block = np.zeros((quarters.size, 3))
            np.add.at(block, qi[sel], arr[sel][:, 3:6])
            per[h] = block
        sums[sid] = per
    out = []
    for a, b in pairs:
        for h in [0, *horizons]:
            na, nb = sums[a][h], sums[b][h]
            keep = (na[:, 0] > 0) & (nb[:, 0] > 0)
            for loss, col in (("squared", 1), ("absolute", 2)):
                d = na[keep, col] / na[keep, 0] - nb[keep, col] / nb[keep, 0]
                if d.size and np.isnan(d).all():
                    continue
                hh = POOLED_HORIZON if h == 0 else h
                mean, stat, p = diebold_mariano(d, hh)
                out.append(
                    (
                        score_run_id,
                        a,
                        b,
                        loss,
                        h,
                        int(keep.sum()),
                        hh - 1,
                        _nan_none(mean),
                        _nan_none(stat),
                        _nan_none(p),
                    )
                )
    if not out:
        return 0
    names = [
        "score_run_id",
        "submission_a",
        "submission_b",
        "loss",
        "horizon",
        "n_quarters",
        "bandwidth",
        "mean_diff",
        "dm_stat",
        "p_value",
    ]
    table = pa.table({n: [r[i] for r in out] for i, n in enumerate(names)})
    return wh.write_arrow("eval.dm_test_rows", table)


def _nan_none(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)
