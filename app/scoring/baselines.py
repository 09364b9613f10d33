"""Reference baselines produced in SQL for every build: the leaderboard's floor.

Seasonal random walk (sql/eval/090 under the `paper` rules, 092 under `published`, which
reads the factor-imputed tabular view and so makes it first when missing) and fade /
AR(1) (sql/eval/089 fits it once, 091 applies it) are written as ordinary submissions
(source 'reference'), checked and scored like any other.

Each is written block by block (sql/eval/088: consecutive origin quarters of the split,
about BLOCK_CELLS truth cells each), one statement per block in the submission's one
transaction, so the memory of its joins is bounded by the block instead of growing with
the panel (docs/scoring.md, "Reference baselines in bounded memory").
"""

from __future__ import annotations

from proforma.app.scoring.provenance import current_build_id, eval_sql_version
from proforma.app.scoring.submissions.checks import check_and_finish, claim_name, new_submission
from proforma.app.store.rules import current_rules
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.panel import RuleSet

#: Truth cells per block of a reference baseline's forecasts (sql/eval/088; a block holds
#: whole origin quarters, so up to one quarter more). Memory grows with it, time barely.
BLOCK_CELLS = 1 << 21
#: Steps run once before a baseline's blocks (the fade fit, a temp table 091 reads).
_PREPARE = {"eval/091_baseline_fade": ("eval/089_baseline_fade_fit", "baseline_fade_fit")}
REFERENCE_BASELINES = {
    "Seasonal random walk": {
        RuleSet.paper: "eval/090_baseline_seasonal_rw",
        RuleSet.published: "eval/092_baseline_seasonal_rw_published",
    },
    "Fade / AR(1)": {
        RuleSet.paper: "eval/091_baseline_fade",
        RuleSet.published: "eval/091_baseline_fade",
    },
}
_NEEDS = (
    "panel.truth",
    "panel.origins",
    "panel.origin_params",
    "panel.item_k",
    "panel.values",
    "panel.firms",
)


def _current_reference(wh: Warehouse, name: str) -> int | None:
    """The reference baseline `name` made for the current build and scoring SQL, if any."""
    row = wh.fetchone(
        "SELECT submission_id FROM eval.submissions WHERE name = ? AND retired_at IS NULL "
        "AND source = 'reference' AND build_id IS NOT DISTINCT FROM ? "
        "AND json_extract_string(metadata, '$.eval_sql_version') = ?",
        [name, current_build_id(wh), eval_sql_version()],
    )
    return int(row[0]) if row else None


def missing_reference_baselines(wh: Warehouse) -> list[str]:
    """Names of the reference baselines not yet made for the current build."""
    return [name for name in REFERENCE_BASELINES if _current_reference(wh, name) is None]


def baseline_blocks(
    wh: Warehouse, split: str = "test", block_cells: int | None = None
) -> list[tuple[int, int]]:
    """(first_q, last_q) of the origin blocks a reference baseline is written in (088)."""
    rows = wh.query_step(
        "eval/088_baseline_blocks",
        {"split": split, "block_cells": max(1, int(block_cells or BLOCK_CELLS))},
    ).to_pylist()
    return [(int(r["first_q"]), int(r["last_q"])) for r in rows]


def run_reference_baselines(
    wh: Warehouse, *, split: str = "test", force: bool = False, block_cells: int | None = None
) -> list[int]:
    """Submission ids of the reference baselines for the current build (made if missing);
    `block_cells`: truth cells per block (default BLOCK_CELLS; the forecasts do not
    depend on it)."""
    wh.require_panel(*_NEEDS)
    blocks: list[tuple[int, int]] | None = None
    version = eval_sql_version()
    rules = current_rules(wh)
    ids = []
    for name, steps in REFERENCE_BASELINES.items():
        step = steps[rules]
        row = _current_reference(wh, name)
        if row is not None and not force:
            ids.append(row)
            continue
        if step.endswith("_published"):
            _ensure_imputed(wh)
        if blocks is None:
            blocks = baseline_blocks(wh, split, block_cells)
        with wh.transaction():
            claim_name(wh, name, replace=True)
            sid = new_submission(
                wh,
                name,
                "reference",
                "gaussian",
                None,
                False,
                f"sql:{version}",
                {"eval_sql_version": version, "sql": step, "split": split, "rules": rules.value},
            )
            params = {"submission_id": sid, "split": split, "published": rules is RuleSet.published}
            prepare, temp = _PREPARE.get(step, (None, None))
            if prepare:
                wh.run_step(prepare, params)
            for first_q, last_q in blocks:
                wh.run_step(step, {**params, "first_q": first_q, "last_q": last_q})
            if temp:
                wh.execute(f"DROP TABLE IF EXISTS {temp}")
            check_and_finish(wh, sid, name, [], points=True)
        ids.append(sid)
    return ids


def _ensure_imputed(wh: Warehouse) -> None:
    """The published seasonal random walk reads the imputed tabular view of this build."""
    from proforma.app.readers.imputed import build_imputed, current_imputation

    if current_imputation(wh) is None:
        build_imputed(wh)
