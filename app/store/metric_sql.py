"""The metric slots of the aggregate SQL steps, filled from the metric registry.

`proforma.contracts.metrics` defines every metric once (its sums as SQL aggregates over
one cell's inputs, its finish as SQL over the sums). The steps that aggregate
(sql/eval/064, 065, 066, 070, sql/rounds/050, sql/public/005, 040) keep their shape (joins,
groupings, levels) in SQL and write the per-metric lists as slots, `{{ metric_... }}`,
which `expand` fills when a step is read (`proforma.app.store.sqlfiles`). The filled
text is what runs, what is checksummed (so the scoring-SQL version moves with a
definition) and what tests/eval/test_metric_definitions.py parses.

Slots:

- `metric_sum_columns`: run_agg's sum columns with their types (`n BIGINT, ...`);
- `metric_cell_sums`: each sum aggregated over cells (`count(*) AS n, sum(y) AS sum_y, ...`);
- `metric_point_sums`: the same for point-only cells: a density sum is 0 (a count) or NULL;
- `metric_sum_rollup`: each sum summed up a level (`sum(n) AS n, ...`);
- `metric_finish`: each metric from the sums (`sse / n AS mse, ...`);
- `metric_columns`: the metric names (`r2, mse, ...`);
- `metric_coverage_flags`: in{p} from the PIT u (`u BETWEEN 0.25 AND 0.75 AS in50, ...`);
- `metric_coverage_names`: the in{p} column names as SQL strings (`'in50', ...`);
- `metric_quantile_bounds`, `metric_quantile_coverage`: a quantile forecast's quantiles at
  each interval's levels (components getvariable('lo50'), ('hi50'), ...) and in{p} from
  them (sql/eval/056);
- `metric_pit_bin`: a cell's PIT bin from its u (NULL without u);
- `metric_pit_columns`, `metric_pit_counts`, `metric_pit_zeros`, `metric_pit_sums`: the
  per-group PIT bin columns pit0.. with their types, counted from pit_bin, as constant 0
  (point forecasts, and rows whose bins are counted per submission) and summed up;
- `metric_public`: each metric as the snapshot publishes it (an upload's noised or withheld);
- `metric_cluster_columns`, `metric_cluster_point_sums`,
  `metric_cluster_names`: the same for the sums kept per (firm, origin quarter) for the
  bootstrap (`registry.cluster_sums()`, eval.cluster_loss_rows);
"""

from __future__ import annotations

from proforma.app.store import slot_fill
from proforma.contracts import metrics as registry
from proforma.contracts.metrics import COVERAGE_LEVELS, PIT_BINS, Disclosure, coverage_bounds


def _columns_of(names: tuple[str, ...]) -> str:
    return ", ".join(f"{s} {registry.SUMS[s].type}" for s in names)


def _sums_of(names: tuple[str, ...]) -> str:
    return ", ".join(f"{registry.SUMS[s].sql} AS {s}" for s in names)


def _point_sums_of(names: tuple[str, ...]) -> str:
    """The sums over a point-only submission's cells: a density sum is 0 (a count) or NULL."""
    parts = []
    for name in names:
        s = registry.SUMS[name]
        if not s.density:
            parts.append(f"{s.sql} AS {name}")
        else:
            parts.append(f"{'0' if s.type == 'BIGINT' else 'NULL'}::{s.type} AS {name}")
    return ", ".join(parts)


def _sum_columns() -> str:
    return _columns_of(tuple(registry.used_sums()))


def _cell_sums() -> str:
    return _sums_of(tuple(registry.used_sums()))


def _point_sums() -> str:
    return _point_sums_of(tuple(registry.used_sums()))


def _cluster_columns() -> str:
    return _columns_of(tuple(registry.cluster_sums()))


def _cluster_point_sums() -> str:
    return _point_sums_of(tuple(registry.cluster_sums()))


def _cluster_names() -> str:
    return ", ".join(registry.cluster_sums())


def _sum_rollup() -> str:
    return ", ".join(f"sum({s}) AS {s}" for s in registry.used_sums())


def _finish() -> str:
    return ", ".join(f"{m.finish} AS {m.name}" for m in registry.METRICS.values())


def _columns() -> str:
    return ", ".join(registry.METRICS)


def _coverage_flags() -> str:
    parts = []
    for p in COVERAGE_LEVELS:
        lo, hi = coverage_bounds(p)
        parts.append(f"u BETWEEN {lo!r} AND {hi!r} AS in{p}")
    return ", ".join(parts)


def _coverage_names() -> str:
    return ", ".join(f"'in{p}'" for p in COVERAGE_LEVELS)


def _quantile_bounds() -> str:
    return ", ".join(
        f"any_value(q) FILTER (WHERE k = getvariable('{end}{p}')) AS {end}{p}"
        for p in COVERAGE_LEVELS
        for end in ("lo", "hi")
    )


def _quantile_coverage() -> str:
    return ", ".join(f"lo{p} <= y AND y <= hi{p} AS in{p}" for p in COVERAGE_LEVELS)


def _pit_bin() -> str:
    # least() skips NULLs: the CASE keeps a cell with no u out of the last bin
    return (
        f"CASE WHEN u IS NOT NULL THEN CAST(least(floor(u * {PIT_BINS}), {PIT_BINS - 1}) "
        "AS TINYINT) END"
    )


def _pit_columns() -> str:
    return ", ".join(f"pit{b} BIGINT" for b in range(PIT_BINS))


def _pit_counts() -> str:
    return ", ".join(f"count(*) FILTER (WHERE pit_bin = {b}) AS pit{b}" for b in range(PIT_BINS))


def _pit_zeros() -> str:
    return ", ".join(f"0::BIGINT AS pit{b}" for b in range(PIT_BINS))


def _pit_sums() -> str:
    return ", ".join(f"sum(pit{b})" for b in range(PIT_BINS))


def _coverage_columns() -> str:
    """The stored per-cell flags in{p} of every coverage level, as the cells' columns."""
    return ", ".join(f"c.in{p}" for p in COVERAGE_LEVELS)


def _noised(m: registry.Metric) -> str:
    """An upload's value of `m` with its keyed noise (pf_coarsen: app/read/disclosure.py)."""
    return f"pf_coarsen({m.name}, noise_sigma * {m.sensitivity!r} / n, label || '{m.name}')"


def _public() -> str:
    """An upload's value as its `disclosure` says (the publisher's macro pf_coarsen; the
    row's `label`, `is_upload`, `noise_sigma` (its grant), `is_headline` (a global or
    per-horizon row) and `upload_hidden` (a footprint past those its grant counted));
    others exact."""
    mse = registry.METRICS["mse"]
    parts = []
    for m in registry.METRICS.values():
        name = m.name
        if m.disclosure is Disclosure.withheld:
            public = "NULL"
        elif m.disclosure is Disclosure.from_mse:
            public = (
                f"CASE WHEN mse > 0 AND isfinite({name}) "
                f"THEN 1 - {_noised(mse)} * (1 - {name}) / mse ELSE {name} END"
            )
        elif m.disclosure is Disclosure.headline_noise:
            public = f"CASE WHEN is_headline THEN {_noised(m)} END"
        else:
            public = _noised(m)
        parts.append(
            f"CASE WHEN NOT is_upload THEN {name} WHEN upload_hidden THEN NULL "
            f"ELSE {public} END AS {name}"
        )
    return ", ".join(parts)


SLOTS = {
    "metric_sum_columns": _sum_columns,
    "metric_cell_sums": _cell_sums,
    "metric_point_sums": _point_sums,
    "metric_sum_rollup": _sum_rollup,
    "metric_finish": _finish,
    "metric_columns": _columns,
    "metric_coverage_flags": _coverage_flags,
    "metric_coverage_columns": _coverage_columns,
    "metric_coverage_names": _coverage_names,
    "metric_quantile_bounds": _quantile_bounds,
    "metric_quantile_coverage": _quantile_coverage,
    "metric_pit_bin": _pit_bin,
    "metric_pit_columns": _pit_columns,
    "metric_pit_counts": _pit_counts,
    "metric_pit_zeros": _pit_zeros,
    "metric_pit_sums": _pit_sums,
    "metric_public": _public,
    "metric_cluster_columns": _cluster_columns,
    "metric_cluster_point_sums": _cluster_point_sums,
    "metric_cluster_names": _cluster_names,
}


def expand(text: str) -> str:
    """`text` with its metric slots filled from the registry (other text unchanged)."""
    return slot_fill.expand(text, "metric", SLOTS)


def fingerprint() -> str:
    """A digest of every slot's text: changes whenever a definition does."""
    return slot_fill.fingerprint(SLOTS)
