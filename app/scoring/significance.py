"""Diebold-Mariano tests on per-quarter mean losses that SQL computed.

The numerics SQL cannot express well live here as small named functions: the
Newey-West long-run variance (Bartlett weights, bandwidth h - 1; 19 when horizons are
pooled), the Harvey-Leybourne-Newbold small-sample factor, and the Student-t p-value
with T - 1 degrees of freedom.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np

from proforma.app.store.columns import to_numpy
from proforma.app.store.warehouse import IN_IDS, Warehouse

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
    # distribution object's per-call overhead (paid once per pair, loss and horizon: a
    # run tests a new submission against every other one)
    from scipy import special  # here, not at the top: scipy would weigh on every CLI start

    p = float(2 * special.stdtr(t - 1, -abs(stat)))
    return mean, stat, p


def diebold_mariano_rows(d: np.ndarray, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`diebold_mariano` of every row of d (pairs x periods, the same periods): (mean,
    statistic, p) arrays, NaN where the test is not defined. Row-wise the same arithmetic,
    vectorized over the pairs: a run tests a new submission against every other one."""
    from scipy import special  # here, not at the top: scipy would weigh on every CLI start

    d = np.asarray(d, dtype=float)
    rows, t = d.shape
    nan = np.full(rows, math.nan)
    if t == 0:
        return nan, nan.copy(), nan.copy()
    mean = d.mean(axis=1)
    if t < 2:
        return mean, nan, nan.copy()
    e = d - mean[:, None]
    lrv = np.einsum("ij,ij->i", e, e) / t
    bandwidth = h - 1
    for j in range(1, min(bandwidth, t - 1) + 1):
        gamma = np.einsum("ij,ij->i", e[:, j:], e[:, :-j]) / t
        lrv += 2.0 * (1.0 - j / (bandwidth + 1.0)) * gamma
    hln = (t + 1 - 2 * h + h * (h - 1) / t) / t
    ok = lrv > 0
    if not hln > 0 or not ok.any():
        return mean, nan, nan.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.where(ok, mean / np.sqrt(np.where(ok, lrv, 1.0) / t) * math.sqrt(hln), math.nan)
    p = np.where(ok, 2 * special.stdtr(t - 1, -np.abs(stat)), math.nan)
    return mean, stat, p


#: A group of Diebold-Mariano tests: (loss, horizon), horizon 0 pooling the horizons.
Group = tuple[str, int]
Pair = tuple[int, int]


def run_dm_tests(
    wh: Warehouse,
    score_run_id: int,
    submission_ids: list[int],
    *,
    skip: set[tuple[int, int]] | None = None,
    pairs: list[tuple[int, int]] | None = None,
    groups: dict[Group, list[Pair]] | None = None,
) -> int:
    """Pairs of a run, squared and absolute loss, pooled (horizon 0) and per horizon,
    from eval.quarter_losses into eval.dm_test_rows (the view eval.dm_tests shows them);
    returns rows written. By default every pair of `submission_ids`; pairs in `skip`
    (lower id first) already have their tests in the run (from an earlier run on the same
    sample); `pairs` lists the pairs to test instead; `groups` names, per (loss, horizon),
    the pairs to test in that group only (a run tests a new submission against each
    group's leader, not against every other one). A loss that a submission does not have
    (the absolute loss of a quantile forecast without a median) gets no test."""
    if groups is None:
        if pairs is None:
            skip = skip or set()
            pairs = [
                (a, b)
                for a, b in itertools.combinations(submission_ids, 2)
                if (min(a, b), max(a, b)) not in skip
            ]
    else:
        pairs = sorted({p for ps in groups.values() for p in ps})
    out = dm_test_rows(wh, score_run_id, pairs, groups)
    if not out["score_run_id"]:
        return 0
    # one statement of list parameters, zipped by unnest: Arrow's conversion of Python
    # lists (pa.table) imports pandas, half a second of the first run with two members
    wh.execute(
        "INSERT INTO eval.dm_test_rows SELECT "
        + ", ".join(f"unnest(?::{_DM_TYPES[name]}[])" for name in _DM_COLUMNS),
        [out[name] for name in _DM_COLUMNS],
    )
    return len(out["score_run_id"])


def dm_test_rows(
    wh: Warehouse,
    score_run_id: int,
    pairs: Sequence[Pair],
    groups: Mapping[Group, Sequence[Pair]] | None = None,
) -> dict[str, list]:
    """The tests of `pairs` in every (loss, horizon) group, or of the pairs `groups` names
    per group, as columns of eval.dm_test_rows; nothing written. The per-quarter sums are
    one dense array (submission x horizon x quarter) and the pairs sharing their quarters
    are tested together (`diebold_mariano_rows`)."""
    out: dict[str, list] = {n: [] for n in _DM_COLUMNS}
    pairs = sorted(set(pairs))
    if not pairs:
        return out
    subs = np.array(sorted({s for pair in pairs for s in pair}))
    found = _quarter_sums(wh, score_run_id, subs)
    if found is None:
        return out
    sums, horizons = found
    index = {p: i for i, p in enumerate(pairs)}
    a_idx = np.searchsorted(subs, [a for a, _ in pairs])
    b_idx = np.searchsorted(subs, [b for _, b in pairs])
    everything = np.arange(len(pairs))
    for hi in range(horizons.size + 1):
        h = 0 if hi == 0 else int(horizons[hi - 1])
        for loss, c in (("squared", 1), ("absolute", 2)):
            if groups is None:
                wanted = everything
            elif groups.get((loss, h)):
                wanted = np.array(sorted(index[p] for p in set(groups[(loss, h)])))
            else:
                continue
            na, nb = sums[a_idx[wanted], hi], sums[b_idx[wanted], hi]
            _test_group(out, score_run_id, pairs, wanted, na, nb, loss, c, h)
    return out


def _quarter_sums(
    wh: Warehouse, score_run_id: int, subs: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """(sums[submission, h, quarter] -> (n, sum_sq, sum_abs), h index 0 pooling the
    horizons; the horizons) of the run's quarter losses of `subs`; None without any."""
    t = wh.arrow(
        # the run's references of these submissions first, then their stored rows (the
        # view eval.quarter_losses gives the same rows)
        "WITH refs AS (SELECT submission_id, from_run FROM eval.run_results "
        f"WHERE score_run_id = ? AND submission_id {IN_IDS}) "
        "SELECT q.submission_id, q.horizon, q.origin_q, q.n, q.sum_sq, q.sum_abs "
        "FROM eval.quarter_loss_rows q "
        "JOIN refs r ON q.score_run_id = r.from_run AND q.submission_id = r.submission_id",
        [score_run_id, [int(s) for s in subs]],
    )
    if not t.num_rows:
        return None

    def col(name: str) -> np.ndarray:
        return to_numpy(t[name]).astype(float)

    quarters = np.unique(col("origin_q"))
    horizons = np.unique(col("horizon"))
    where = (
        np.searchsorted(subs, col("submission_id")),
        np.searchsorted(horizons, col("horizon")) + 1,
        np.searchsorted(quarters, col("origin_q")),
    )
    values = np.stack([col("n"), col("sum_sq"), col("sum_abs")], axis=1)
    sums = np.zeros((subs.size, horizons.size + 1, quarters.size, 3))
    np.add.at(sums, where, values)
    np.add.at(sums, (where[0], np.zeros_like(where[1]), where[2]), values)
    return sums, horizons


def _test_group(
    out: dict[str, list],
    score_run_id: int,
    pairs: Sequence[Pair],
    wanted: np.ndarray,
    na: np.ndarray,
    nb: np.ndarray,
    loss: str,
    c: int,
    h: int,
) -> None:
    """Test the `wanted` pairs of one (loss, horizon) group into `out`: `na`, `nb` the
    two sides' (pair, quarter, sum) arrays, `c` the loss's sum; the pairs sharing their
    quarters are tested together."""
    hh = POOLED_HORIZON if h == 0 else h
    keep = (na[:, :, 0] > 0) & (nb[:, :, 0] > 0)
    patterns, group = np.unique(keep, axis=0, return_inverse=True)
    for g, cols in enumerate(patterns):
        members = np.flatnonzero(group.reshape(-1) == g)
        with np.errstate(invalid="ignore", divide="ignore"):
            d = (
                na[members][:, cols, c] / na[members][:, cols, 0]
                - nb[members][:, cols, c] / nb[members][:, cols, 0]
            )
        # a loss a submission does not have (all NaN) gets no test
        has = ~np.isnan(d).all(axis=1) if d.shape[1] else np.ones(len(members), bool)
        if not has.any():
            continue
        mean, stat, p = diebold_mariano_rows(d[has], hh)
        chosen = wanted[members[has]]
        k = len(chosen)
        out["score_run_id"] += [score_run_id] * k
        out["submission_a"] += [pairs[i][0] for i in chosen]
        out["submission_b"] += [pairs[i][1] for i in chosen]
        out["loss"] += [loss] * k
        out["horizon"] += [h] * k
        out["n_quarters"] += [int(cols.sum())] * k
        out["bandwidth"] += [hh - 1] * k
        out["mean_diff"] += [_nan_none(x) for x in mean]
        out["dm_stat"] += [_nan_none(x) for x in stat]
        out["p_value"] += [_nan_none(x) for x in p]


#: eval.dm_test_rows' columns, in order, and their types.
_DM_TYPES = {
    "score_run_id": "INTEGER",
    "submission_a": "INTEGER",
    "submission_b": "INTEGER",
    "loss": "VARCHAR",
    "horizon": "TINYINT",
    "n_quarters": "INTEGER",
    "bandwidth": "INTEGER",
    "mean_diff": "DOUBLE",
    "dm_stat": "DOUBLE",
    "p_value": "DOUBLE",
}
_DM_COLUMNS = tuple(_DM_TYPES)


def _nan_none(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)
