"""Reference baselines produced in SQL for every build: the leaderboard's floor.

Seasonal random walk (the rule seasonal_rw_fill: sql/eval/090 falls back to x_t, 092
fills from the factor-imputed tabular view and so makes it first when missing) and fade /
AR(1) (sql/eval/089 fits it once, 091 applies it) are written as ordinary submissions
(source 'reference'), checked and scored like any other.

Each is written block by block (sql/eval/088: consecutive origin quarters of the split,
about BLOCK_CELLS truth cells each), one statement per block in the submission's one
transaction, so the memory of its joins is bounded by the block instead of growing with
the panel (docs/scoring.md, "Reference baselines in bounded memory").
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import duckdb

from proforma.app.scoring.provenance import current_build_id, eval_sql_version
from proforma.app.scoring.submissions.checks import check_and_finish, claim_name, new_submission
from proforma.app.store.rules import current_rules
from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.rules import RuleSet

#: Truth cells per block of a reference baseline's forecasts (sql/eval/088; a block holds
#: whole origin quarters, so up to one quarter more). Memory grows with it, time barely.
BLOCK_CELLS = 1 << 21
#: The baselines' forecast rules (temp macros), shared with a round's entries.
BASELINE_RULES = "eval/087_baseline_rules"
#: The fade fit (a temp table 091 and a round's fade entry read), its step and table.
FADE_FIT = ("eval/089_baseline_fade_fit", "baseline_fade_fit")
#: Steps run once before a baseline's blocks.
_PREPARE = {"eval/091_baseline_fade": FADE_FIT}
#: The reference baselines' names, on the static boards and in every round.
SEASONAL_RW, FADE = "Seasonal random walk", "Fade / AR(1)"
REFERENCE_BASELINES = (SEASONAL_RW, FADE)
#: The seasonal random walk's step by the rule seasonal_rw_fill (the fade's fall-back is a
#: variable of its one step, the rule fade_fallback).
SEASONAL_RW_STEPS = {
    "baseline": "eval/090_baseline_seasonal_rw",
    "imputed": "eval/092_baseline_seasonal_rw_published",
}


def reference_steps(rules: RuleSet) -> dict[str, str]:
    """Each reference baseline's step under `rules`."""
    return {SEASONAL_RW: SEASONAL_RW_STEPS[rules.seasonal_rw_fill], FADE: "eval/091_baseline_fade"}


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
    wh: Warehouse,
    *,
    split: str = "test",
    force: bool = False,
    block_cells: int | None = None,
    memory_limit: str | None = None,
) -> list[int]:
    """Submission ids of the reference baselines for the current build (made if missing).

    `block_cells`: truth cells per block (default BLOCK_CELLS; the forecasts do not depend
    on it). `memory_limit`: DuckDB's memory limit while each is written and checked
    (default the setting `reference_memory_limit`; never above the warehouse's own, which
    is restored after): it bounds the table pages DuckDB keeps cached as it reads the
    panel and writes the forecasts, which otherwise grow with the panel. A baseline that
    does not fit in it is rolled back and made again at the warehouse's limit."""
    wh.require_panel(*_NEEDS)
    limit = get_settings().reference_memory_limit if memory_limit is None else memory_limit
    limit_bytes = parse_size(limit, "reference_memory_limit") if limit else None
    blocks: list[tuple[int, int]] | None = None
    version = eval_sql_version()
    rules = current_rules(wh)
    ids = []
    for name, step in reference_steps(rules).items():
        row = _current_reference(wh, name)
        if row is not None and not force:
            ids.append(row)
            continue
        if step == SEASONAL_RW_STEPS["imputed"]:
            _ensure_imputed(wh)
        if blocks is None:
            blocks = baseline_blocks(wh, split, block_cells)
        make = (wh, name, step, split, rules, version, blocks)
        try:
            with lowered_memory_limit(wh, limit_bytes):
                sid = _make_reference(*make)
        except duckdb.OutOfMemoryException:
            if limit_bytes is None:
                raise
            sid = _make_reference(*make)  # rolled back: again at the warehouse's limit
        ids.append(sid)
    return ids


def _make_reference(
    wh: Warehouse,
    name: str,
    step: str,
    split: str,
    rules: RuleSet,
    version: str,
    blocks: list[tuple[int, int]],
) -> int:
    """One reference baseline written block by block and checked, in one transaction."""
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
            {"eval_sql_version": version, "sql": step, "split": split, "rules": rules.name},
        )
        params = {"submission_id": sid, "split": split, "fade_fallback": rules.fade_fallback}
        prepare, temp = _PREPARE.get(step, (None, None))
        wh.run_step(BASELINE_RULES)
        if prepare:
            wh.run_step(prepare, params)
        for first_q, last_q in blocks:
            wh.run_step(step, {**params, "first_q": first_q, "last_q": last_q})
        if temp:
            wh.execute(f"DROP TABLE IF EXISTS {temp}")
        check_and_finish(wh, sid, name, [], points=True)
    return sid


_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]i?b|b|bytes)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "bytes": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_UNITS |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str, what: str = "size") -> int:
    """Bytes of a DuckDB memory size ('512MB', '1.5 GiB', '953.6 MiB'); a UserError naming
    `what` otherwise."""
    m = _SIZE.match(text or "")
    if not m:
        raise UserError(
            f"{what} {text!r} is not a memory size: write it as DuckDB does, e.g. 512MB or 1GiB"
        )
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])


@contextlib.contextmanager
def lowered_memory_limit(wh: Warehouse, limit_bytes: int | None) -> Iterator[None]:
    """DuckDB's memory limit at most `limit_bytes` inside the block (None, or a limit at or
    above the current one: unchanged), and the current one again after it. DuckDB shows
    its limit cut to one decimal ('5.5 GiB' for 6GB): the warehouse's configured size is
    set back when it is the one shown, else the middle of what the shown size stands for
    (within 0.05 of its unit of the limit before)."""
    shown = str(wh.scalar("SELECT current_setting('memory_limit')"))
    try:
        current: int | None = parse_size(shown)
    except UserError:
        current = None
    if limit_bytes is None or (current is not None and limit_bytes >= current):
        yield
        return
    wh.execute("SET memory_limit = ?", [f"{int(limit_bytes)}B"])
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.Error):
            wh.execute("SET memory_limit = ?", [get_settings().memory_limit])
        if str(wh.scalar("SELECT current_setting('memory_limit')")) != shown:
            m = _SIZE.match(shown)
            back = f"{float(m.group(1)) + 0.05}{m.group(2) or 'B'}" if m else shown
            wh.execute("SET memory_limit = ?", [back])


def _ensure_imputed(wh: Warehouse) -> None:
    """The published seasonal random walk reads the imputed tabular view of this build."""
    from proforma.app.model_inputs.imputed import build_imputed, current_imputation

    if current_imputation(wh) is None:
        build_imputed(wh)
