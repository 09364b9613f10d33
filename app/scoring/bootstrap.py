"""The numerics of a board's rank uncertainty (docs/scoring.md, "Rank uncertainty"):
a two-way cluster bootstrap over firms and origin quarters, and the model confidence set
of Hansen, Lunde and Nason (2011). Pure numpy over arrays; the warehouse side (which
sums, which members, where the results go) is proforma.app.scoring.uncertainty.

Why this bootstrap. A board's cells are dependent two ways: the cells of one firm share
its accounting (every item, horizon and origin of it), and the cells of one origin
quarter share the macro shock of the quarters they forecast, which the following origins
forecast too (horizons overlap up to 20 quarters). An iid bootstrap over cells treats
some 10^6-10^7 dependent cells as independent and gives intervals far too narrow. So
each replicate draws the firms with replacement (every firm's cells move together) and,
independently, the origin quarters by a circular moving-block bootstrap (blocks of
`block_size` consecutive quarters, so the serial dependence within a block is kept),
and weighs the cell of (firm f, quarter t) by (times f drawn) x (times t drawn): the
"pigeonhole" two-way bootstrap (McCullagh 2000; Owen 2007), whose variance is
conservative for a sum with firm and quarter random effects. A replicate's metric is
finished from the weighted sums of its clusters, so a ratio (MSE = SSE / n, R2) is a
ratio of resampled sums, as the full-sample metric is.

What it can mean: with some 20 origin quarters the quarter draw has few distinct blocks
(20 / 4 = 5 blocks a replicate), so the interval reflects the firms well and the
quarters only roughly; it is a statement about these firms and this period, not about
a different decade. The MCS p-values inherit that.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Draws:
    """The resampling of one bootstrap: per replicate, the firms and the origin quarters
    drawn (indices into the board's firms and quarters), and their counts as weights."""

    firms: np.ndarray  # (B, F) firm indices drawn
    quarters: np.ndarray  # (B, T) quarter indices drawn (circular blocks, cut to T)
    firm_weights: np.ndarray  # (B, F) times each firm is drawn
    quarter_weights: np.ndarray  # (B, T) times each quarter is drawn


def two_way_draws(
    n_firms: int, n_quarters: int, replications: int, block_size: int, seed: int
) -> Draws:
    """Firms drawn with replacement, origin quarters by a circular moving-block bootstrap
    of `block_size` (at most the number of quarters), independently; deterministic for a
    seed."""
    if n_firms < 1 or n_quarters < 1 or replications < 1:
        raise ValueError("a bootstrap needs at least one firm, quarter and replication")
    b = max(1, min(int(block_size), n_quarters))
    rng = np.random.default_rng(seed)
    firms = rng.integers(0, n_firms, size=(replications, n_firms))
    n_blocks = -(-n_quarters // b)
    starts = rng.integers(0, n_quarters, size=(replications, n_blocks))
    quarters = ((starts[:, :, None] + np.arange(b)) % n_quarters).reshape(replications, -1)
    quarters = quarters[:, :n_quarters]
    return Draws(
        firms=firms,
        quarters=quarters,
        firm_weights=_counts(firms, n_firms),
        quarter_weights=_counts(quarters, n_quarters),
    )


def _counts(drawn: np.ndarray, size: int) -> np.ndarray:
    """Per row, how many times each index 0..size-1 was drawn (one bincount)."""
    rows = drawn.shape[0]
    flat = (drawn + size * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * size).reshape(rows, size).astype(np.float64)


def replicate_sums(sums: np.ndarray, draws: Draws) -> np.ndarray:
    """(B, K): each replicate's weighted total of the (F, T, K) cluster sums, the cell
    (f, t) weighed by firm_weights[b, f] * quarter_weights[b, t]."""
    f, t, k = sums.shape
    by_quarter = (draws.firm_weights @ sums.reshape(f, t * k)).reshape(-1, t, k)
    return np.einsum("btk,bt->bk", by_quarter, draws.quarter_weights)


def percentile_interval(values: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The central `level` percentile interval of each column of (B, M) replicate values
    (NaN replicates left out; NaN where a column has none)."""
    tail = (1.0 - level) / 2.0
    lo = np.full(values.shape[1], np.nan)
    hi = np.full(values.shape[1], np.nan)
    for j in range(values.shape[1]):
        v = values[:, j]
        v = v[np.isfinite(v)]
        if v.size:
            lo[j], hi[j] = np.quantile(v, [tail, 1.0 - tail])
    return lo, hi


def probability_best(values: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """(M,): the share of replicates in which each column of (B, M) values ranks first (a
    NaN never ranks first; a tie goes to the first column, as a board orders by id)."""
    v = np.where(np.isfinite(values), values, -np.inf if higher_is_better else np.inf)
    best = np.argmax(v, axis=1) if higher_is_better else np.argmin(v, axis=1)
    return np.bincount(best, minlength=values.shape[1]) / float(values.shape[0])


@dataclass(frozen=True)
class ConfidenceSet:
    pvalues: np.ndarray  # (M,) MCS p-values (running maximum over the eliminations)
    included: np.ndarray  # (M,) bool: p-value > alpha


def model_confidence_set(
    mean_loss: np.ndarray, boot_mean_loss: np.ndarray, alpha: float, statistic: str = "R"
) -> ConfidenceSet:
    """The model confidence set of Hansen, Lunde and Nason (2011) from the full-sample
    mean losses (M,) and their bootstrap replicates (B, M), by the range statistic T_R
    ("R") or T_max ("max"), with arch.bootstrap.MCS's variance and elimination rules (its
    results, given the same replicates; tests/eval/test_eval_uncertainty.py)."""
    mean_loss = np.asarray(mean_loss, dtype=np.float64)
    boot = np.asarray(boot_mean_loss, dtype=np.float64)
    k = mean_loss.shape[0]
    if not np.isfinite(mean_loss).all() or not np.isfinite(boot).all():
        raise ValueError("the model confidence set needs finite losses")
    eliminated: list[tuple[int, float]] = []
    included = np.ones(k, dtype=bool)
    if statistic == "R":
        diffs = mean_loss[:, None] - mean_loss[None, :]
        boot_diffs = boot[:, :, None] - boot[:, None, :]
        boot_diffs -= diffs
        variances = (boot_diffs**2).mean(0) + np.eye(k)  # (arch: no division by 0)
        # two members with the same loss in every replicate (identical forecasts) differ
        # by 0 with no spread: a difference of 0, where arch would divide 0 by 0
        variances[variances <= 0] = 1.0
        std_diffs = diffs / np.sqrt(variances)
        std_boot = boot_diffs / np.sqrt(variances)
        while included.sum() > 1:
            idx = np.flatnonzero(included)
            sub = std_diffs[np.ix_(idx, idx)]
            stat = sub.max()
            simulated = std_boot[:, idx][:, :, idx].max(axis=(1, 2))
            p = float((stat < simulated).mean())
            worst = idx[np.argwhere(sub == stat)[0][0]]
            eliminated.append((int(worst), p))
            included[worst] = False
    elif statistic == "max":
        # the replicates' mean errors, centred on each replicate's grand mean
        errors = boot - mean_loss[None, :]
        errors -= errors.mean(1, keepdims=True)
        while included.sum() > 1:
            idx = np.flatnonzero(included)
            err = errors[:, idx] - errors[:, idx].mean(1, keepdims=True)
            sd = np.sqrt((err**2).mean(0))
            sd[sd <= 0] = 1.0  # (as above: a member that never moves from the mean)
            with np.errstate(divide="ignore", invalid="ignore"):
                simulated = (err / sd).max(1)
                d = mean_loss[idx] - mean_loss[idx].mean()
                t = d / sd
            stat = t.max()
            p = float((stat < simulated).mean())
            worst = idx[np.flatnonzero(t == stat)]
            eliminated.extend((int(w), p) for w in worst)
            included[worst] = False
    else:
        raise ValueError(f"unknown MCS statistic {statistic!r}: use R or max")
    eliminated.extend((int(i), 1.0) for i in np.flatnonzero(included))
    pvalues = np.empty(k)
    running = 0.0
    for model, p in eliminated:
        running = max(running, p)
        pvalues[model] = running
    return ConfidenceSet(pvalues=pvalues, included=pvalues > alpha)
