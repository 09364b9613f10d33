"""`proforma build`: run sql/build in order over raw.*, producing panel.*, and record it.

Every step is a SQL file (sql/build/NNN_name.sql) whose opening comment says what it
makes from what; this module only runs them in order with the build's parameters (as
DuckDB variables), shows progress, and writes the build record:
meta.builds (one row per build: parameters, the folder checksum, the statistics space,
row counts per table and split) and meta.build_steps (per step: normalized checksum,
purpose, rows of the tables it created, elapsed time).

The whole build is one transaction: a failure (or bad pinned statistics) leaves the
previous panel as it was, and the failed attempt is recorded with its error.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proforma.app.store.sqlfiles import SqlFile, folder_checksum, steps_in
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import file_sha256, utcnow
from proforma.contracts.rules import DEFAULT_RULES, RuleSet

BUILD_FOLDER = "build"
_CREATES = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\s+((?:panel|stage)\.[A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE
)
PINNED_TABLE = "stage.reg_stats_pinned"


@dataclass(frozen=True)
class BuildParams:
    """The build's parameters (docs/build.md); recorded with every build."""

    rules: RuleSet = DEFAULT_RULES
    fin_sic_lo: int = 6000
    fin_sic_hi: int = 6999
    z_eps: float = 1e-3
    train_first_year: int = 1971
    train_last_year: int = 2001
    val_last_year: int = 2009
    test_last_year: int = 2024
    min_history: int = 4
    horizons: int = 20
    k_grid_n: int = 250
    k_lo: float = 1e-2
    k_hi: float = 1e3
    k_target_kurtosis: float = 3.0
    # Exact k search through binned screening (see sql/build/080_k_grid_search.sql).
    k_bin_width: float = 0.01
    k_tolerance: float = 0.1
    k_max_candidates: int = 8

    @property
    def train_end_q(self) -> int:
        """Last quarter of the k estimation window and of train targets (2001Q4 = 8007)."""
        return self.train_last_year * 4 + 3

    def __post_init__(self) -> None:
        # A name from the command line or a test ("paper") becomes the RuleSet here.
        object.__setattr__(self, "rules", RuleSet.parse(self.rules))

    def variables(self, pinned: bool) -> dict[str, Any]:
        """The SQL variables of the build: its parameters, the rule set's name (`rules`)
        and every rule by its own name (contracts/rules.py)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["rules"] = self.rules.name
        out["train_end_q"] = self.train_end_q
        out["reg_stats_pinned"] = pinned
        return {**out, **self.rules.variables()}


@dataclass
class StepResult:
    step_no: int
    name: str
    checksum: str
    purpose: str
    rows: dict[str, Any]
    elapsed_s: float


@dataclass
class BuildResult:
    build_id: int
    reg_stats: str
    elapsed_s: float
    steps: list[StepResult] = field(default_factory=list)
    row_counts: dict[str, Any] = field(default_factory=dict)
    rules: RuleSet = DEFAULT_RULES
    fallbacks: dict[str, list[str]] = field(default_factory=dict)
    k_lo: float = BuildParams.k_lo

    def warning(self) -> str | None:
        """One line naming the items whose k a fallback rule decided (None if none did)."""
        return fallback_warning(self.rules, self.fallbacks, self.k_lo)

    def line(self) -> str:
        origins = self.row_counts.get("panel.origins", {})
        cells = self.row_counts.get("panel.truth_cells", {})
        return (
            f"build {self.build_id}: {len(self.steps)} steps in {self.elapsed_s:.1f}s, "
            f"{origins.get('total', 0):,} origins, {cells.get('total', 0):,} truth cells, "
            f"rules {self.rules}, statistics: {self.reg_stats}"
        )


def k_fallback_texts(rules: RuleSet, k_lo: float = BuildParams.k_lo) -> dict[str, str]:
    """The k rules other than the training-window search (sql/build/080_k_grid_search.sql,
    panel.item_k.k_rule) as the build's warning describes them under `rules`."""
    undefined = (
        "k = 1" if rules.k_undefined_kurtosis == "one" else f"k = {k_lo:g}, the grid's smallest"
    )
    return {
        "whole_panel": "k searched on the whole panel, which looks ahead "
        "(no training-period observation; the package's fall-back)",
        "whole_panel_no_kurtosis": f"{undefined} (no training-period observation and no "
        "defined kurtosis on the whole panel)",
        "no_kurtosis": f"{undefined} (a training pool without spread or under 4 values: "
        "no defined kurtosis)",
        "no_pool": "k = 1 and no statistics, so no values (no lagged-ratio pool at all; the "
        "package skips the item)",
        "statement_median": "the median k of its statement (no training-period observation, "
        "or no lagged-ratio pool)",
    }


def fallback_warning(
    rules: RuleSet, fallbacks: dict[str, list[str]], k_lo: float = BuildParams.k_lo
) -> str | None:
    """The build's one warning line about the k fallback rules applied (docs/contracts.md)."""
    texts = k_fallback_texts(rules, k_lo)
    parts = [
        f"{texts.get(rule, rule)}: {', '.join(items)}" for rule, items in fallbacks.items() if items
    ]
    if not parts:
        return None
    return f"warning: rules {rules} applied fallback rules to items' k: " + "; ".join(parts)


def k_fallbacks(wh: Warehouse) -> dict[str, list[str]]:
    """rule -> items whose k a rule other than the training-window search decided."""
    rows = wh.fetchall(
        "SELECT k.k_rule, list(i.item ORDER BY k.item_id) FROM panel.item_k AS k "
        "JOIN ref.items AS i USING (item_id) WHERE k.k_rule NOT IN ('window', 'pinned', 'unreported') "
        "GROUP BY k.k_rule ORDER BY k.k_rule"
    )
    return {str(rule): list(items) for rule, items in rows}


def plan() -> list[SqlFile]:
    """The steps of sql/build in the order they run."""
    steps = steps_in(BUILD_FOLDER)
    if not steps:
        raise UserError("sql/build holds no steps")
    return steps


def explain() -> list[dict[str, str]]:
    """The plan as rows: step number, name, normalized checksum, purpose."""
    return [
        {
            "step": f.name.split("_", 1)[0],
            "name": f.name,
            "checksum": f.checksum[:16],
            "purpose": f.purpose,
        }
        for f in plan()
    ]


def created_tables(f: SqlFile) -> list[str]:
    """Tables (not views or temp tables) a step creates, in order of appearance."""
    seen: list[str] = []
    for m in _CREATES.finditer(f.render({})):
        if m.group(1) not in seen:
            seen.append(m.group(1))
    return seen


def count_rows(wh: Warehouse, table: str) -> dict[str, int]:
    """{'total': n} plus per-split counts (from a `split` column, or origin_q via panel.splits)."""
    cols = {
        r[0]
        for r in wh.fetchall(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = ? AND table_name = ?",
            table.split(".", 1),
        )
    }
    out = {"total": int(wh.scalar(f"SELECT count(*) FROM {table}"))}
    if "split" in cols:
        for split, n in wh.fetchall(f"SELECT split, count(*) FROM {table} GROUP BY 1 ORDER BY 1"):
            out[str(split)] = int(n)
    elif "origin_q" in cols and wh.table_exists("panel.splits"):
        # a table keyed by origin without a stored split (panel.truth_cells): one count
        # per split over its origin_q range, bound as constants so the row groups' zone
        # maps answer it, where a GROUP BY would read every row (docs/scoring.md,
        # "Figures behind the code's choices")
        for split, lo, hi in wh.fetchall(
            "SELECT split, first_q, last_q FROM panel.splits ORDER BY split"
        ):
            n = wh.scalar(f"SELECT count(*) FROM {table} WHERE origin_q BETWEEN ? AND ?", [lo, hi])
            if n:
                out[str(split)] = int(n)
    return out


# -- pinned statistics --------------------------------------------------------------------
def _ensure_pinned_table(wh: Warehouse) -> None:
    wh.execute(
        f"CREATE OR REPLACE TABLE {PINNED_TABLE} "
        "(q INTEGER, item_id SMALLINT, mu DOUBLE, sigma DOUBLE, k DOUBLE)"
    )


def load_pinned_stats(wh: Warehouse, path: Path) -> int:
    """Validate a published statistics parquet (quarter, feature, mu, sigma, k) and load it.

    quarter: a date/timestamp (any instant in the quarter), an ordinal, or 'YYYYQn';
    feature: an item name or 'scale'. Every one of the 79 features needs one finite,
    positive k; mu finite and sigma finite and positive; one row per (feature, quarter).
    sigma is the standardization's whole divisor (the published file's sigma as it is).
    A quarter without a feature's row leaves that feature without a value at origins of
    that quarter (the published package's rule), so a file need not cover every quarter.
    """
    if not path.exists():
        raise UserError(f"No statistics file at {path}")
    src = str(path)
    cols = _pinned_columns(wh, path)
    qexpr = _pinned_quarter_sql(path, cols["quarter"].upper())
    try:
        wh.execute(
            f"""CREATE OR REPLACE TEMP TABLE pinned_raw AS
                SELECT ({qexpr})::INTEGER AS q, CAST(feature AS VARCHAR) AS feature,
                       CAST(mu AS DOUBLE) AS mu, CAST(sigma AS DOUBLE) AS sigma,
                       CAST(k AS DOUBLE) AS k
                FROM read_parquet(?)""",
            [src],
        )
    except Exception as exc:  # noqa: BLE001
        raise UserError(f"{path.name}: {str(exc).splitlines()[0]}") from None
    problems = _pinned_problems(wh)
    if problems:
        wh.execute("DROP TABLE pinned_raw")
        raise UserError(f"Bad statistics file {path.name}: " + "; ".join(problems))
    wh.execute(
        f"INSERT INTO {PINNED_TABLE} SELECT p.q, i.item_id, p.mu, p.sigma, p.k "
        "FROM pinned_raw AS p JOIN ref.items AS i ON i.item = p.feature"
    )
    wh.execute("DROP TABLE pinned_raw")
    return int(wh.scalar(f"SELECT count(*) FROM {PINNED_TABLE}"))


def _pinned_columns(wh: Warehouse, path: Path) -> dict[str, str]:
    """The statistics file's column types by name, refusing an unreadable file or one
    without the five columns."""
    try:
        cols = {
            r[0]: r[1]
            for r in wh.fetchall(
                "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))",
                [str(path)],
            )
        }
    except Exception as exc:  # noqa: BLE001 - any read failure is the user's file
        raise UserError(f"Cannot read {path} as parquet: {str(exc).splitlines()[0]}") from None
    missing = [c for c in ("quarter", "feature", "mu", "sigma", "k") if c not in cols]
    if missing:
        raise UserError(
            f"{path.name} lacks column(s) {', '.join(missing)} "
            "(expected quarter, feature, mu, sigma, k)"
        )
    return cols


def _pinned_quarter_sql(path: Path, qtype: str) -> str:
    """The SQL of the quarter ordinal of the file's quarter column, by its type `qtype`."""
    if "DATE" in qtype or "TIMESTAMP" in qtype:
        return "qord(CAST(quarter AS DATE))"
    if "INT" in qtype:
        return "quarter"
    if qtype == "VARCHAR":
        return (
            "CAST(split_part(quarter, 'Q', 1) AS INTEGER) * 4 "
            "+ CAST(split_part(quarter, 'Q', 2) AS INTEGER) - 1"
        )
    raise UserError(f"{path.name}: column quarter has type {qtype}; use a date or 'YYYYQn'")


def _pinned_problems(wh: Warehouse) -> list[str]:
    """What is wrong with temp table pinned_raw: unknown or absent features, bad values,
    duplicate (feature, quarter) pairs, features with more than one k."""
    problems = []
    unknown = [
        r[0]
        for r in wh.fetchall(
            "SELECT DISTINCT feature FROM pinned_raw WHERE feature NOT IN (SELECT item FROM ref.items) "
            "OR feature IS NULL ORDER BY 1 LIMIT 5"
        )
    ]
    if unknown:
        problems.append(f"unknown feature(s) {unknown}")
    absent = [
        r[0]
        for r in wh.fetchall(
            "SELECT item FROM ref.items WHERE item NOT IN (SELECT feature FROM pinned_raw "
            "WHERE feature IS NOT NULL) ORDER BY item_id LIMIT 5"
        )
    ]
    if absent:
        problems.append(f"no rows for feature(s) {absent}")
    checks = {
        "null or unparseable quarter": "q IS NULL",
        "non-finite mu": "mu IS NULL OR NOT isfinite(mu)",
        "non-finite or non-positive sigma": "sigma IS NULL OR NOT isfinite(sigma) OR sigma <= 0",
        "non-finite or non-positive k": "k IS NULL OR NOT isfinite(k) OR k <= 0",
    }
    for label, cond in checks.items():
        n = wh.scalar(f"SELECT count(*) FROM pinned_raw WHERE {cond}")
        if n:
            problems.append(f"{n} row(s) with {label}")
    dup = wh.scalar(
        "SELECT count(*) FROM (SELECT feature, q FROM pinned_raw GROUP BY ALL HAVING count(*) > 1)"
    )
    if dup:
        problems.append(f"{dup} duplicate (feature, quarter) pair(s)")
    multi_k = wh.scalar(
        "SELECT count(*) FROM (SELECT feature FROM pinned_raw "
        "GROUP BY feature HAVING count(DISTINCT k) > 1)"
    )
    if multi_k:
        problems.append(f"{multi_k} feature(s) with more than one k")
    return problems


# -- the build ----------------------------------------------------------------------------
def run_build(
    wh: Warehouse,
    reg_stats: str | Path = "estimate",
    params: BuildParams | None = None,
    on_step: Callable[[int, int, SqlFile, str], None] | None = None,
) -> BuildResult:
    """Run every sql/build step over raw.* in one transaction and record the build.

    reg_stats: 'estimate' (k and the standardization statistics from this panel) or the
    path of a published statistics parquet to pin instead. `on_step(i, n, step, phase)`
    is called with phase 'start' and 'done' for progress displays.
    """
    params = params or BuildParams()
    pinned = str(reg_stats) != "estimate"
    stats_path = Path(reg_stats) if pinned else None
    _require_raw(wh)
    steps = plan()
    variables = params.variables(pinned)
    recorded = {**variables, "reg_stats": str(reg_stats)}
    t0 = time.perf_counter()
    build_id = _record_start(wh, reg_stats, stats_path, recorded)
    try:
        with wh.transaction():
            _ensure_pinned_table(wh)
            if stats_path is not None:
                load_pinned_stats(wh, stats_path)
            wh.set_params(variables)
            results = _run_steps(wh, build_id, steps, on_step)
            counts = {t: r for s in results for t, r in s.rows.items() if t.startswith("panel.")}
            fallbacks = k_fallbacks(wh)
            recorded["k_fallbacks"] = fallbacks
            elapsed = time.perf_counter() - t0
            wh.execute(
                "UPDATE meta.builds SET status = 'succeeded', row_counts = ?, finished_at = ?, "
                "elapsed_s = ?, parameters = ? WHERE build_id = ?",
                [json.dumps(counts), utcnow(), elapsed, json.dumps(recorded), build_id],
            )
    except BaseException as exc:
        wh.execute(
            "UPDATE meta.builds SET status = 'failed', error = ?, finished_at = ?, elapsed_s = ? "
            "WHERE build_id = ?",
            [
                str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                utcnow(),
                time.perf_counter() - t0,
                build_id,
            ],
        )
        raise
    return BuildResult(
        build_id,
        "pinned " + str(stats_path) if pinned else "estimated from this panel",
        elapsed,
        results,
        counts,
        params.rules,
        fallbacks,
        params.k_lo,
    )


def _require_raw(wh: Warehouse) -> None:
    """Refuse to build a warehouse that is not migrated or has no raw rows."""
    if not wh.table_exists("raw.fundq") or not wh.table_exists("meta.builds"):
        raise UserError("The warehouse is not migrated: run `proforma migrate` first.")
    if not wh.scalar("SELECT count(*) FROM raw.fundq"):
        raise UserError("raw.fundq is empty: ingest a source first (`proforma ingest ...`).")


def _record_start(
    wh: Warehouse, reg_stats: str | Path, stats_path: Path | None, recorded: dict[str, Any]
) -> int:
    """Record a running build (its SQL's checksum, parameters, pinned statistics and raw
    ingest) in meta.builds; returns its build_id."""
    stats_sum = file_sha256(stats_path) if stats_path and stats_path.exists() else None
    ingest_id = wh.scalar("SELECT max(ingest_id) FROM raw.ingests")
    started = utcnow()
    return int(
        wh.scalar(
            "INSERT INTO meta.builds (status, sql_checksum, parameters, reg_stats, reg_stats_checksum, "
            "raw_ingest_id, started_at) VALUES ('running', ?, ?, ?, ?, ?, ?) RETURNING build_id",
            [
                folder_checksum(BUILD_FOLDER),
                json.dumps(recorded),
                str(reg_stats),
                stats_sum,
                ingest_id,
                started,
            ],
        )
    )


def _run_steps(
    wh: Warehouse,
    build_id: int,
    steps: list[SqlFile],
    on_step: Callable[[int, int, SqlFile, str], None] | None,
) -> list[StepResult]:
    """Run the build's steps in order, recording each one's row counts and time in
    meta.build_steps; a step's failure is a UserError naming it."""
    results: list[StepResult] = []
    for i, step in enumerate(steps, 1):
        if on_step:
            on_step(i, len(steps), step, "start")
        s0 = time.perf_counter()
        try:
            wh.run_step(step)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(
                f"Build step {step.path.name} failed: {str(exc).splitlines()[0]}"
            ) from exc
        rows = {t: count_rows(wh, t) for t in created_tables(step)}
        elapsed = time.perf_counter() - s0
        results.append(StepResult(i, step.name, step.checksum, step.purpose, rows, elapsed))
        wh.execute(
            "INSERT INTO meta.build_steps VALUES (?, ?, ?, ?, ?, ?, ?)",
            [build_id, i, step.name, step.checksum, step.purpose, json.dumps(rows), elapsed],
        )
        if on_step:
            on_step(i, len(steps), step, "done")
    return results
