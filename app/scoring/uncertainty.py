"""A board's rank uncertainty, from its stored per-(firm, origin quarter) sums
(eval.cluster_losses): bootstrap intervals of the headline metrics, each member's
probability of ranking first and the model confidence set per track, recorded with the
seed, the replications and the block size (eval.uncertainty_runs, eval.metric_intervals,
eval.rank_sets). The resampling and the set are proforma.app.scoring.bootstrap; each
replicate's metrics are finished by the metric registry's own SQL (contracts/metrics.py
`finish`), so an interval is of the same number the board shows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.scoring.bootstrap import (
    model_confidence_set,
    percentile_interval,
    probability_best,
    replicate_sums,
    two_way_draws,
)
from proforma.app.store.columns import to_arrow, to_numpy
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.metrics import METRICS, UNCERTAINTY_METRICS, Better, cluster_sums
from proforma.contracts.provenance import utcnow
from proforma.contracts.tracks import TRACKS

METHOD = "two-way pigeonhole: firms iid, origin quarters by circular moving blocks"

#: The loss of each track's model confidence set: (its sum, its count). The squared
#: track ranks by R2, which on a common sample orders as its MSE (one truth variance).
TRACK_LOSS: dict[str, tuple[str, str]] = {
    "squared": ("sse", "n"),
    "absolute": ("sae", "n_abs"),
    "density": ("sum_crps", "n_crps"),
}


@dataclass(frozen=True)
class BootstrapSettings:
    """How a board's uncertainty is computed; recorded with every result."""

    seed: int = 20260049
    replications: int = 1000
    #: origin quarters per block: one year of origins
    block_size: int = 4
    ci_level: float = 0.95
    mcs_alpha: float = 0.10
    #: T_max (each model against the set's average): O(replications x members) a step,
    #: where the range statistic T_R ("R") costs replications x members^2 a step
    mcs_statistic: str = "max"


def compute_board_uncertainty(
    wh: Warehouse, score_run_id: int, settings: BootstrapSettings | None = None
) -> bool:
    """Compute and store run `score_run_id`'s uncertainty (replacing any); False, and
    nothing stored, when a member has no cluster sums (results stored before they were
    kept: `proforma score --full` recomputes them)."""
    cfg = settings or BootstrapSettings()
    t0 = time.perf_counter()
    found = _cluster_rows(wh, score_run_id)
    if found is None:
        return False
    rows, members = found
    names = cluster_sums()
    sums = _bootstrap_sums(rows, members, names, cfg)
    boot = finish(wh, sums.reps.reshape(-1, len(names)), names)
    point = finish(wh, sums.full, names)
    intervals = _metric_intervals(boot, point, members, cfg)
    sets = _rank_sets(wh, members, names, sums, boot, cfg)
    _store(wh, score_run_id, cfg, intervals, sets, sums, started=t0)
    return True


@dataclass
class _BootstrapSums:
    """(M, B, K) replicate sums and the full sample's (M, K), M members in id order, K
    cluster sums; the clusters' counts."""

    reps: np.ndarray
    full: np.ndarray
    firms: int
    quarters: int


def _cluster_rows(wh: Warehouse, score_run_id: int) -> tuple[pa.Table, list[int]] | None:
    """The run's per-(member, firm, origin quarter) sums and its members in id order;
    None when a member has none."""
    rows = wh.arrow(
        f"SELECT submission_id, firm_id, origin_q, {', '.join(cluster_sums())} "
        "FROM eval.cluster_losses WHERE score_run_id = ?",
        [score_run_id],
    )
    members = [
        int(s)
        for s in (
            wh.scalar(
                "SELECT submission_ids FROM eval.score_runs WHERE score_run_id = ?", [score_run_id]
            )
            or []
        )
    ]
    present = set(rows["submission_id"].to_pylist()) if rows.num_rows else set()
    if not members or any(m not in present for m in members):
        return None
    return rows, sorted(members)


def _bootstrap_sums(
    rows: pa.Table, members: list[int], names: tuple[str, ...], cfg: BootstrapSettings
) -> _BootstrapSums:
    """Every member's sums over the two-way bootstrap's draws and over the full sample."""
    firms, firm_ix = np.unique(to_numpy(rows["firm_id"]), return_inverse=True)
    quarters, quarter_ix = np.unique(to_numpy(rows["origin_q"]), return_inverse=True)
    member_ix = np.searchsorted(members, to_numpy(rows["submission_id"]))
    values = np.column_stack([np.nan_to_num(to_numpy(rows[n]).astype(np.float64)) for n in names])
    draws = two_way_draws(len(firms), len(quarters), cfg.replications, cfg.block_size, cfg.seed)
    # one member's (F, T, K) clusters at a time (a board of hundreds never holds all of
    # them at once)
    reps = np.empty((len(members), cfg.replications, len(names)))
    full = np.empty((len(members), len(names)))
    order = np.argsort(member_ix, kind="stable")
    bounds = np.searchsorted(member_ix[order], np.arange(len(members) + 1))
    for m in range(len(members)):
        mine = order[bounds[m] : bounds[m + 1]]
        sums = np.zeros((len(firms), len(quarters), len(names)))
        sums[firm_ix[mine], quarter_ix[mine]] = values[mine]
        reps[m] = replicate_sums(sums, draws)
        full[m] = sums.sum(axis=(0, 1))
    return _BootstrapSums(reps, full, len(firms), len(quarters))


def _metric_intervals(
    boot: dict[str, np.ndarray],
    point: dict[str, np.ndarray],
    members: list[int],
    cfg: BootstrapSettings,
) -> list[tuple]:
    """(member, metric, estimate, lower, upper) of every finite headline metric."""
    intervals = []
    for metric in UNCERTAINTY_METRICS:
        lo, hi = percentile_interval(
            boot[metric].reshape(len(members), cfg.replications).T, cfg.ci_level
        )
        for j, sid in enumerate(members):
            if np.isfinite(point[metric][j]):
                intervals.append((sid, metric, point[metric][j], lo[j], hi[j]))
    return intervals


def _rank_sets(
    wh: Warehouse,
    members: list[int],
    names: tuple[str, ...],
    sums: _BootstrapSums,
    boot: dict[str, np.ndarray],
    cfg: BootstrapSettings,
) -> list[tuple]:
    """(track, member, P(best), MCS p-value, in the set, scope) per track's entrant, for
    the whole board ('all') and among the entries that are not uploads ('public')."""
    full, reps, B = sums.full, sums.reps, cfg.replications
    uploads = {
        int(r[0])
        for r in wh.fetchall(
            "SELECT submission_id FROM eval.submissions WHERE source = 'upload' "
            "AND list_contains(?, submission_id)",
            [members],
        )
    }
    not_upload = np.array([m not in uploads for m in members], dtype=bool)
    sets = []
    for track, spec in TRACKS.items():
        total, count = TRACK_LOSS[track]
        ti, ci = names.index(total), names.index(count)
        with np.errstate(divide="ignore", invalid="ignore"):
            every_loss = full[:, ti] / full[:, ci]
        # the track's entrants: members with the loss (a density for CRPS), finite; the
        # public board's sets are taken among the entrants that are not uploads
        entrants = (full[:, ci] > 0) & np.isfinite(every_loss)
        for scope, keep in (("all", entrants), ("public", entrants & not_upload)):
            idx = np.flatnonzero(keep)
            if not idx.size:
                continue
            ranked = boot[spec.metric].reshape(len(members), B).T[:, idx]
            p_best = probability_best(ranked, METRICS[spec.metric].better is Better.higher)
            mean_loss = every_loss[idx]
            with np.errstate(divide="ignore", invalid="ignore"):
                boot_loss = (reps[idx, :, ti] / reps[idx, :, ci]).T
            boot_loss = np.where(np.isfinite(boot_loss), boot_loss, mean_loss[None, :])
            mcs = model_confidence_set(mean_loss, boot_loss, cfg.mcs_alpha, cfg.mcs_statistic)
            for j, member in enumerate(idx):
                sets.append(
                    (
                        track,
                        members[int(member)],
                        float(p_best[j]),
                        float(mcs.pvalues[j]),
                        bool(mcs.included[j]),
                        scope,
                    )
                )
    return sets


def _store(
    wh: Warehouse,
    score_run_id: int,
    cfg: BootstrapSettings,
    intervals: list[tuple],
    sets: list[tuple],
    sums: _BootstrapSums,
    *,
    started: float,
) -> None:
    """The run's intervals, rank sets and bootstrap record, replacing any, in one
    transaction."""
    with wh.transaction():
        for table in ("uncertainty_runs", "metric_intervals", "rank_sets"):
            wh.execute(f"DELETE FROM eval.{table} WHERE score_run_id = ?", [score_run_id])
        if intervals:
            i_sid, i_metric, i_est, i_lo, i_hi = (list(c) for c in zip(*intervals, strict=True))
            wh.execute(
                "INSERT INTO eval.metric_intervals SELECT ?, unnest(?::INTEGER[]), "
                "unnest(?::VARCHAR[]), unnest(?::DOUBLE[]), unnest(?::DOUBLE[]), "
                "unnest(?::DOUBLE[])",
                [score_run_id, i_sid, i_metric, *(_floats(v) for v in (i_est, i_lo, i_hi))],
            )
        if sets:
            columns = [list(c) for c in zip(*sets, strict=True)]
            wh.execute(
                "INSERT INTO eval.rank_sets SELECT ?, unnest(?::VARCHAR[]), "
                "unnest(?::INTEGER[]), unnest(?::DOUBLE[]), unnest(?::DOUBLE[]), "
                "unnest(?::BOOLEAN[]), unnest(?::VARCHAR[])",
                [score_run_id, *columns],
            )
        wh.execute(
            "INSERT INTO eval.uncertainty_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                score_run_id,
                METHOD,
                cfg.seed,
                cfg.replications,
                cfg.block_size,
                cfg.ci_level,
                cfg.mcs_alpha,
                cfg.mcs_statistic,
                sums.firms,
                sums.quarters,
                time.perf_counter() - started,
                utcnow(),
            ],
        )


def _floats(values: list[Any]) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in values]


def finish(wh: Warehouse, sums: np.ndarray, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The UNCERTAINTY_METRICS of each row of (R, K) sums, by the registry's finish SQL
    (contracts/metrics.py), in row order."""
    table = pa.table(
        {name: to_arrow(np.ascontiguousarray(sums[:, k])) for k, name in enumerate(names)}
    )
    table = table.append_column("i", to_arrow(np.arange(sums.shape[0])))
    exprs = ", ".join(f"CAST({METRICS[m].finish} AS DOUBLE) AS {m}" for m in UNCERTAINTY_METRICS)
    with wh.registered("bootstrap_sums", table) as view:
        out = wh.arrow(f"SELECT {exprs} FROM {view} ORDER BY i")
    return {m: to_numpy(out[m]).astype(np.float64) for m in UNCERTAINTY_METRICS}
