"""Quantile submissions: a grid of quantile levels per cell instead of sigma.

Stored in eval.forecasts like mixtures (component k holds the quantile at level k + 1 of
the grid, mu its value, sigma NULL) with the grid on eval.submissions.quantile_levels
(docs/contracts.md). Validation is SQL (sql/eval/032_quantile_checks.sql); this module
turns its counts into problems that name cells, and holds the grid's rules.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from proforma.app.store.warehouse import Warehouse
from proforma.contracts.families import QUANTILE_FAMILY
from proforma.contracts.forecasts import LEVEL_COLUMN, QUANTILE_SCHEMA

__all__ = ["FAMILY", "LEVEL_COLUMN", "MAX_LEVELS", "QUANTILE_SCHEMA"]

FAMILY = QUANTILE_FAMILY
#: Components are 0..1023, so a grid has at most 1,024 levels.
MAX_LEVELS = 1024


def is_level(value: Any) -> bool:
    return value is not None and math.isfinite(value) and 0 < value < 1


def grid_of(levels: Iterable[Any]) -> list[float]:
    """The grid: the distinct valid levels, ascending (invalid ones are reported by the checks)."""
    return sorted({float(v) for v in levels if is_level(v)})


def batch_levels(batch: pa.RecordBatch) -> set[float]:
    """Distinct levels of one batch (collected while a model's batches stream past)."""
    import pyarrow.compute as pc  # slow to import, and no other scoring step needs it

    return {v for v in pc.unique(batch.column(LEVEL_COLUMN)).to_pylist() if v is not None}


def component_sql(level: str) -> str:
    """SQL of a row's component: its level's place in getvariable('file_quantile_levels') (NULL
    for a level outside the grid, which the checks report)."""
    return f"CAST(list_position(getvariable('file_quantile_levels'), {level}) - 1 AS SMALLINT)"


#: Levels of one grid closer than this are one level written twice (0.5 and 0.5 + 1e-12
#: would make a degenerate grid: two "quantiles" of the same probability, and the median
#: and interval lookups match levels to 1e-9).
MIN_LEVEL_GAP = 1e-6


def grid_problems(grid: list[float]) -> list[str]:
    if len(grid) > MAX_LEVELS:
        return [f"{len(grid):,} distinct quantile levels: at most {MAX_LEVELS:,} are allowed"]
    close = [(a, b) for a, b in itertools.pairwise(grid) if b - a < MIN_LEVEL_GAP]
    if close:
        pairs = ", ".join(f"{a!r} and {b!r}" for a, b in close[:3])
        return [
            (
                f"degenerate quantile forecast: levels {pairs} differ by less than "
                f"{MIN_LEVEL_GAP:g}; write each level once, with the same value in every cell"
            )
        ]
    return []


def describe_cell(wh: Warehouse, cell: int) -> str:
    """A packed cell key as firm/target/origin/horizon text."""
    horizon, rest = cell % 32, cell // 32
    item_id, rest = rest % 128, rest // 128
    origin_q, firm_id = rest % 16384, rest // 16384
    gvkey = wh.scalar("SELECT gvkey FROM panel.firms WHERE firm_id = ?", [firm_id])
    item = wh.scalar("SELECT item FROM ref.items WHERE item_id = ?", [item_id])
    label = wh.scalar("SELECT qlabel(?)", [origin_q])
    return f"firm={gvkey or firm_id} target={item or item_id} origin={label} horizon={horizon}"


def check_rows(wh: Warehouse, sid: int, grid: list[float]) -> tuple[list[tuple], list[tuple]]:
    """(errors, warnings) of a quantile submission's stored rows, each as (message, count,
    example cells): levels outside (0, 1), cells lacking levels of the grid, values that
    decrease with the level; a grid without level 0.5 has no absolute track."""
    row = wh.query_step(
        "eval/032_quantile_checks", {"submission_id": sid, "k_levels": len(grid)}
    ).to_pylist()[0]
    errors = []
    for key, text in (
        ("bad_level", "quantile_level missing or outside (0, 1)"),
        (
            "incomplete",
            (
                f"cell without every level of the submission's grid ({len(grid)} "
                f"levels: {_levels_text(grid)}); every cell needs the same grid"
            ),
        ),
        (
            "decreasing",
            (
                "quantile values decrease as the level rises (they must be "
                "non-decreasing in the level within each cell)"
            ),
        ),
    ):
        if row[f"{key}_n"]:
            errors.append(
                (text, row[f"{key}_n"], [describe_cell(wh, c) for c in row[f"{key}_ex"] or []])
            )
    warnings = []
    if grid and not any(math.isclose(t, 0.5, abs_tol=1e-9) for t in grid):
        warnings.append(
            (
                (
                    "no quantile level 0.5: the absolute track (MAE of the median) "
                    "is not scored for this submission"
                ),
                0,
                [_levels_text(grid)],
            )
        )
    return errors, warnings


def _levels_text(grid: list[float]) -> str:
    shown = ", ".join(f"{t:g}" for t in grid[:12])
    return shown + (", ..." if len(grid) > 12 else "")
