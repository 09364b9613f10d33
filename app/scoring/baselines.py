"""Reference baselines produced in SQL for every build: the leaderboard's floor.

Seasonal random walk (sql/eval/090 under the `paper` rules, 092 under `published`, which
reads the factor-imputed tabular view and so makes it first when missing) and fade /
AR(1) (sql/eval/091) are written as ordinary submissions (source 'reference'), checked
and scored like any other.
"""

from __future__ import annotations

from proforma.app.scoring.provenance import current_build_id, eval_sql_version
from proforma.app.scoring.submissions.checks import check_and_finish, claim_name, new_submission
from proforma.app.store.rules import current_rules
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.panel import RuleSet

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


def run_reference_baselines(
    wh: Warehouse, *, split: str = "test", force: bool = False
) -> list[int]:
    """Submission ids of the reference baselines for the current build (made if missing)."""
    wh.require_panel(*_NEEDS)
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
            wh.run_step(
                step,
                {"submission_id": sid, "split": split, "published": rules is RuleSet.published},
            )
            check_and_finish(wh, sid, name, [], points=True)
        ids.append(sid)
    return ids


def _ensure_imputed(wh: Warehouse) -> None:
    """The published seasonal random walk reads the imputed tabular view of this build."""
    from proforma.app.readers.imputed import build_imputed, current_imputation

    if current_imputation(wh) is None:
        build_imputed(wh)
