"""Submissions from a parquet file (uploads, `proforma submit`).

Validation is SQL (sql/eval/010_submission_checks.sql on the file while DuckDB streams
it, then the integer-level checks of proforma.app.scoring.submissions.checks on the staged
or stored rows; a point or single-family density file is then kept in the upload store,
proforma.app.scoring.submissions.store),
so nothing is ever loaded into Python. A rejected file writes nothing: the insert and the
checks run in one transaction that is rolled back on any blocking problem, and the
ValidationError carries every problem with its count and example rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.scoring import quantiles
from proforma.app.scoring.submissions import store
from proforma.app.scoring.submissions.checks import (
    BAD_SIGMA,
    HUGE_PREDICTION,
    check_and_finish,
    check_family,
    claim_name,
    new_problem,
    new_submission,
    rejection_summary,
)
from proforma.app.store.warehouse import Warehouse, out_of_resources
from proforma.contracts.errors import UserError, ValidationError
from proforma.contracts.families import DEFAULT_FAMILY
from proforma.contracts.forecasts import COLUMN_ALIASES as ALIASES
from proforma.contracts.forecasts import OPTIONAL_COLUMNS as OPTIONAL
from proforma.contracts.forecasts import SUBMISSION_COLUMNS as REQUIRED
from proforma.contracts.provenance import file_sha256

# (problem key, message, blocking?) in report order.
_FILE_PROBLEMS = [
    ("null_key", "null key (firm, target, origin or horizon)", True),
    ("huge_string", "string longer than 64 characters in firm or target", True),
    ("unknown_firm", "unknown firm (gvkey not in panel.firms)", True),
    ("unknown_item", "unknown target item (not one of the 78 items)", True),
    ("bad_origin", "origin is not a date, timestamp or quarter like 2015Q1", True),
    ("non_integer_horizon", "horizon is not an integer", True),
    ("horizon_out_of_range", "horizon outside 1..20", True),
    ("bad_component", "component null or outside 0..1023", True),
    ("bad_level", "quantile_level missing or outside (0, 1)", True),
    ("bad_sigma", BAD_SIGMA, True),
    ("non_finite_prediction", "prediction is null, NaN or infinite (cell left out)", False),
    ("huge_prediction", HUGE_PREDICTION, True),
]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _is_int(t: pa.DataType) -> bool:
    return pa.types.is_integer(t)


def _is_num(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _is_str(t: pa.DataType) -> bool:
    t = _value_type(t)
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


#: Every column a submission file may have (canonical names; aliases in ALIASES).
KNOWN_COLUMNS = (*REQUIRED, *OPTIONAL, quantiles.LEVEL_COLUMN)


def _columns(schema: pa.Schema) -> dict[str, str]:
    """The file's column for each canonical name (lower case, aliases resolved). Files
    where two columns mean the same are refused first (column_report)."""
    by_lower: dict[str, str] = {}
    for field in schema:
        low = field.name.lower()
        by_lower.setdefault(ALIASES.get(low, low), field.name)
    return by_lower


def column_report(names: list[str]) -> tuple[list[str], list[str]]:
    """(problems, warnings) of a file's column names: a name that occurs twice, two
    columns that mean the same (names equal but for case, or a name beside its alias:
    `firm` and `firm_id`) are problems (which one counts would be a silent choice); a
    column the format does not know is a warning naming it, with the known column it
    most resembles (`sigme` -> sigma: without it a density file is a point forecast)."""
    import difflib
    from collections import Counter

    problems = [
        f"duplicate column name {name!r} ({n} columns): every column name must be unique"
        for name, n in Counter(names).items()
        if n > 1
    ]
    meaning: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        low = name.lower()
        meaning.setdefault(ALIASES.get(low, low), []).append(name)
    problems += [
        f"ambiguous columns {' and '.join(repr(n) for n in same)}: they all mean {canonical}; "
        f"keep one"
        for canonical, same in meaning.items()
        if len(same) > 1 and canonical in KNOWN_COLUMNS
    ]
    accepted = [*KNOWN_COLUMNS, *ALIASES]
    warnings = []
    for canonical, same in meaning.items():
        if canonical in KNOWN_COLUMNS:
            continue
        close = difflib.get_close_matches(canonical, accepted, n=1, cutoff=0.6)
        hint = (
            f" (did you mean {ALIASES.get(close[0], close[0])!r}?)"
            if close and ALIASES.get(close[0], close[0]) not in meaning
            else ""
        )
        warnings.append(f"unknown column {same[0]!r} ignored{hint}")
    return problems, warnings


def _schema_view(path: Path, schema: pa.Schema, quantile: bool) -> tuple[str, list[dict]]:
    """SQL of the temp view `submission_in` over the file, or the schema's problems. A
    quantile file's component is its level's place in getvariable('file_quantile_levels')."""
    found, _ = column_report(schema.names)
    if found:
        return "", [new_problem(text, 0) for text in found]
    by_lower = _columns(schema)
    types = {c: schema.field(by_lower[c]).type for c in by_lower}
    problems = _schema_problems(schema, by_lower, types, quantile)
    if problems:
        return "", problems
    q = {c: _quote(by_lower[c]) for c in by_lower}
    origin_expr, problems = _origin_sql(q["origin"], _value_type(types["origin"]))
    if problems:
        return "", problems
    return _view_sql(path, q, origin_expr, quantile), problems


#: What each column's Arrow type must be: a test of the type and the expectation in words.
_EXPECTED_TYPES = {
    "firm": (_is_str, "a string gvkey such as '001004'"),
    "target": (_is_str, "a string item name such as 'revtq'"),
    "origin": (
        lambda t: pa.types.is_date(t) or pa.types.is_timestamp(t) or _is_str(t),
        "a date, timestamp or quarter string such as '2015Q1'",
    ),
    "horizon": (_is_num, "an integer 1..20"),
    "prediction": (_is_num, "a number (standardized level)"),
    "sigma": (_is_num, "a positive number"),
    "component": (_is_int, "an integer mixture member id"),
    quantiles.LEVEL_COLUMN: (_is_num, "a number in (0, 1)"),
}


def _schema_problems(
    schema: pa.Schema, by_lower: dict[str, str], types: dict[str, pa.DataType], quantile: bool
) -> list[dict]:
    """The schema's problems: missing columns, columns of the wrong type, and a quantile
    file's sigma or component column."""
    problems = []
    missing = [
        c
        for c in (*REQUIRED, *((quantiles.LEVEL_COLUMN,) if quantile else ()))
        if c not in by_lower
    ]
    if missing:
        problems.append(
            new_problem(
                "missing column(s): "
                + ", ".join(missing)
                + f" (found: {', '.join(schema.names) or 'none'})",
                0,
            )
        )
    for col, (ok, what) in _EXPECTED_TYPES.items():
        if col in types and not ok(types[col]):
            problems.append(
                new_problem(
                    f"wrong type: column {by_lower[col]!r} is {types[col]}, expected {what}", 0
                )
            )
    if quantile:
        extra = [c for c in OPTIONAL if c in by_lower]
        if extra:
            problems.append(
                new_problem(
                    f"a quantile submission (it has a {quantiles.LEVEL_COLUMN} column) has no "
                    f"{' or '.join(extra)} column: one row per (cell, level) with the quantile "
                    f"as prediction",
                    0,
                )
            )
    return problems


def _origin_sql(column: str, origin_t: pa.DataType) -> tuple[str, list[dict]]:
    """The SQL of the quarter ordinal of the origin `column` (quoted), by its type: a date,
    a timestamp (a zoned one read in its zone's local time) or quarter text; or the problem
    of a time zone DuckDB does not know."""
    if pa.types.is_date(origin_t):
        return f"qord({column})", []
    if pa.types.is_timestamp(origin_t) and origin_t.tz:
        local = _local_time(column, origin_t.tz)
        if local is None:
            return "", [
                new_problem(
                    f"origin's time zone {origin_t.tz!r} is unknown: use a zone name such as "
                    f"'America/New_York', an offset such as '+05:00', or plain dates",
                    0,
                )
            ]
        return f"qord(CAST({local} AS DATE))", []
    if pa.types.is_timestamp(origin_t):
        return f"qord(CAST({column} AS DATE))", []
    return f"eval.origin_from_text(CAST({column} AS VARCHAR))", []


def _view_sql(path: Path, q: dict[str, str], origin_expr: str, quantile: bool) -> str:
    """CREATE of the temp view `submission_in`: the file's columns (`q`: each canonical
    name's quoted column) under their canonical names and types, origin as `origin_expr`."""
    sigma = f"CAST({q['sigma']} AS DOUBLE)" if "sigma" in q else "CAST(NULL AS DOUBLE)"
    component = f"CAST({q['component']} AS BIGINT)" if "component" in q else "CAST(0 AS BIGINT)"
    level = "CAST(NULL AS DOUBLE)"
    if quantile:
        level = f"CAST({q[quantiles.LEVEL_COLUMN]} AS DOUBLE)"
        component = f"CAST({quantiles.component_sql(level)} AS BIGINT)"
    literal = "'" + str(path).replace("'", "''") + "'"
    return f"""
        CREATE OR REPLACE TEMP VIEW submission_in AS
        SELECT
            file_row_number AS row_nr,
            CAST({q["firm"]} AS VARCHAR) AS firm,
            CAST({q["target"]} AS VARCHAR) AS target,
            {q["origin"]} IS NULL AS origin_is_null,
            CAST({origin_expr} AS INTEGER) AS origin_q,
            CAST({q["horizon"]} AS DOUBLE) AS horizon_num,
            CAST({q["prediction"]} AS DOUBLE) AS prediction,
            {sigma} AS sigma,
            {component} AS component,
            {level} AS quantile_level
        FROM read_parquet({literal}, file_row_number = true)
    """


def _local_time(column: str, tz: str) -> str | None:
    """SQL of a time-zone-aware origin as the local time of its own zone (an instant
    belongs to the quarter of its local date: 2010-12-31 23:00 in New York is 2010Q4,
    as the same text is), or None for a zone DuckDB does not know."""
    import re

    import duckdb as _duckdb

    offset = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", tz.strip())
    if offset:
        minutes = (int(offset[2]) * 60 + int(offset[3])) * (1 if offset[1] == "+" else -1)
        return f"(timezone('UTC', {column}) + INTERVAL ({minutes}) MINUTE)"
    with _duckdb.connect() as con:
        row = con.execute(
            "SELECT count(*) FROM pg_timezone_names() WHERE name = ?", [tz]
        ).fetchone()
    if not row or not row[0]:
        return None
    return f"timezone('{tz.replace(chr(39), chr(39) * 2)}', {column})"


def _examples(wh: Warehouse, row_nrs: set[int], quantile: bool) -> dict[int, str]:
    if not row_nrs:
        return {}
    rows = wh.fetchall(
        "SELECT row_nr, left(coalesce(firm, 'NULL'), 40), left(coalesce(target, 'NULL'), 40), "
        "CASE WHEN origin_q IS NULL THEN 'NULL' ELSE qlabel(origin_q) END, horizon_num, "
        "prediction, sigma, component, quantile_level FROM submission_in "
        "WHERE list_contains(?, row_nr) ORDER BY row_nr",
        [sorted(row_nrs)],
    )
    out = {}
    for r in rows:
        text = (
            f"row {r[0]}: firm={r[1]!r} target={r[2]!r} origin={r[3]} horizon={r[4]:g} "
            if r[4] is not None
            else f"row {r[0]}: firm={r[1]!r} target={r[2]!r} origin={r[3]} horizon=NULL "
        )
        text += (
            f"prediction={r[5]} quantile_level={r[8]}"
            if quantile
            else f"prediction={r[5]} sigma={r[6]} component={r[7]}"
        )
        out[r[0]] = text
    return out


def _unreadable(name: str, path: Path, detail: str) -> ValidationError:
    problems = [new_problem(f"not a readable parquet file: {detail}", 1, [str(path.name)])]
    return ValidationError(rejection_summary(name, problems), problems)


def read_failure(name: str, opened: ForecastFile, exc: duckdb.Error) -> Exception:
    """What a door raises when DuckDB fails while reading an open file's rows: the
    machine's limits as they are (nothing written, the caller says so), anything else
    the file's fault, named without the server's folders."""
    if out_of_resources(exc):
        return exc
    return _unreadable(name, opened.path, _without_path(str(exc), opened.path))


@dataclass
class ForecastFile:
    """A forecast file opened the way every door opens one: readable, not empty, its
    family settled, its columns and types accepted; the temp view `submission_in` reads
    it with canonical columns (firm, target, origin_q, horizon_num, prediction, sigma,
    component, quantile_level, row_nr)."""

    path: Path
    family: str
    df: float | None
    quantile: bool
    columns: dict[str, str]
    checksum: str
    #: non-blocking notes on the columns (an unknown column and the one it resembles)
    notes: list[dict]
    grid: list[float] | None = None

    @property
    def has_sigma(self) -> bool:
        return "sigma" in self.columns

    @property
    def one_row_per_cell(self) -> bool:
        return not (self.quantile or "component" in self.columns)


def open_forecast_file(
    wh: Warehouse,
    path: str | Path,
    name: str,
    *,
    family: str = DEFAULT_FAMILY,
    df: float | None = None,
    checksum: str | None = None,
) -> ForecastFile:
    """Open a submission file for any destination (the static benchmark, a round): the
    checks that need no row, then `submission_in` over it. Raises ValidationError (or
    UserError for the family) and leaves nothing behind when the file is refused; the
    caller drops the view with close_forecast_file."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"No file {path.name}")
    if path.stat().st_size == 0:
        raise _unreadable(name, path, "the file is empty (0 bytes)")
    try:
        meta = pq.ParquetFile(path)
        schema = meta.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise _unreadable(name, path, _without_path(str(exc), path)) from None
    quantile = any(f.name.lower() == quantiles.LEVEL_COLUMN for f in schema)
    if quantile and family in (DEFAULT_FAMILY, quantiles.FAMILY) and df is None:
        family = quantiles.FAMILY
    elif quantile or family == quantiles.FAMILY:
        raise UserError(
            f"A quantile submission is a file with a {quantiles.LEVEL_COLUMN} column and "
            f"family {quantiles.FAMILY}: {path.name} "
            + (f"has that column but family {family}" if quantile else "has no such column")
        )
    check_family(family, df)
    wh.require_panel("panel.firms")
    if meta.metadata.num_rows == 0:
        problems = [new_problem("the file holds no rows", 0)]
        raise ValidationError(rejection_summary(name, problems), problems)
    view_sql, problems = _schema_view(path, schema, quantile)
    if problems:
        raise ValidationError(rejection_summary(name, problems), problems)
    opened = ForecastFile(
        path,
        family,
        df,
        quantile,
        _columns(schema),
        checksum or file_sha256(path),
        [new_problem(text, 0, blocking=False) for text in column_report(schema.names)[1]],
    )
    try:
        wh.execute(view_sql)
        wh.set_params({"has_sigma": opened.has_sigma, "is_quantile": quantile})
        opened.grid = _file_grid(wh, name) if quantile else None
    except duckdb.Error as exc:
        close_forecast_file(wh)
        raise read_failure(name, opened, exc) from None
    except BaseException:
        close_forecast_file(wh)
        raise
    return opened


def close_forecast_file(wh: Warehouse) -> None:
    wh.execute("DROP VIEW IF EXISTS submission_in")


def file_report(wh: Warehouse, opened: ForecastFile) -> list[dict]:
    """Every row-level problem of the open file (010: counts and example rows), blocking
    ones and warnings alike; a door refuses the file when any is an error."""
    return _row_problems(wh, opened.quantile)


def _without_path(detail: str, path: Path) -> str:
    """A reader's message without the server's folders (only the file's own name)."""
    return detail.splitlines()[0].replace(str(path), path.name)[:200]


def ingest_parquet(
    wh: Warehouse,
    path: str | Path,
    name: str,
    *,
    family: str = DEFAULT_FAMILY,
    df: float | None = None,
    metadata: dict | None = None,
    source: str = "upload",
    replace: bool = False,
) -> int:
    """Validate and store a submission file; returns its submission_id.

    Raises ValidationError (with `.problems`: every problem's count and example rows)
    and writes nothing when the file is not acceptable. Warnings (non-finite or huge
    predictions) are stored in eval.submissions.warnings. A file with a quantile_level
    column is a quantile submission (family "quantile"; the default family is taken
    as unspecified).
    """
    path = Path(path)
    opened = open_forecast_file(wh, path, name, family=family, df=df)
    # A file of one forecast per cell (no component column, not a quantile forecast: a point
    # file, or a single-family density file with a sigma) is written to the upload store
    # as it is read (022), its file checked (034) and kept under its checksum, scanned in
    # place for scoring (proforma.app.scoring.submissions.store); mixtures and quantile
    # grids are inserted (020).
    pending: list[Path] = []
    try:
        # Happy path: ONE streaming pass stores integer-keyed rows (invalid keys as NULL)
        # and 030 or 034 checks them; any problem rolls back and 010 explains the file.
        try:
            with wh.transaction():
                sid = _insert_checked(wh, opened, name, source, metadata, replace, pending)
        except ValidationError as found:
            raise _explain(wh, name, found, opened.quantile) from None
    except duckdb.Error as exc:
        if out_of_resources(exc):
            raise  # the machine's limits, not the file: the callers say so (nothing written)
        raise _unreadable(name, path, _without_path(str(exc), path)) from None
    finally:
        store.discard(pending[0] if pending else None)
        _drop_upload_views(wh)
        close_forecast_file(wh)
    return sid


def _insert_checked(
    wh: Warehouse,
    opened: ForecastFile,
    name: str,
    source: str,
    metadata: dict | None,
    replace: bool,
    pending: list[Path],
) -> int:
    """In the caller's transaction: claim the name, store the file's keyed rows (written to
    the upload store, or inserted), check them (raising on a problem) and keep a written
    file; returns the submission_id. A written file not kept (yet) is in `pending`, for
    the caller to discard after the rollback."""
    has_sigma, checksum = opened.has_sigma, opened.checksum
    stored = opened.one_row_per_cell
    claim_name(wh, name, replace)
    sid = new_submission(wh, name, source, opened.family, opened.df, has_sigma, checksum, metadata)
    wh.run_step("eval/019_submission_keyed")
    if stored:
        build_id = wh.scalar("SELECT build_id FROM eval.submissions WHERE submission_id = ?", [sid])
        wh.run_step("eval/022_upload_cells", {"submission_id": sid})
        pending.append(store.write_upload(wh, checksum, build_id, sigma=has_sigma))
        store.stage(wh, sid, pending[0])
    else:
        wh.run_step("eval/020_submission_insert", {"submission_id": sid})
    checked = check_and_finish(
        wh,
        sid,
        name,
        None,
        opened.grid,
        points=stored and not has_sigma,
        staged=stored,
        notes=opened.notes,
    )
    if stored and pending:
        first, last = checked["first_origin_q"], checked["last_origin_q"]
        store.keep(wh, sid, pending[0], checksum, build_id, first, last)
        pending.clear()
    return sid


def _drop_upload_views(wh: Warehouse) -> None:
    """Drop the views an ingest leaves, whatever its outcome."""
    for view in (store.STAGED, "upload_file", "upload_rows", "upload_cells", "submission_keyed"):
        wh.execute(f"DROP VIEW IF EXISTS {view}")


def _file_grid(wh: Warehouse, name: str) -> list[float]:
    """A quantile file's grid (its distinct valid levels), set as getvariable('file_quantile_levels')."""
    levels = [
        r[0]
        for r in wh.fetchall(
            "SELECT DISTINCT quantile_level FROM submission_in WHERE quantile_level > 0 "
            "AND quantile_level < 1 ORDER BY 1 LIMIT ?",
            [quantiles.MAX_LEVELS + 1],
        )
    ]
    grid = quantiles.grid_of(levels)
    found = quantiles.grid_problems(grid)
    if found:
        problems = [new_problem(text, 0) for text in found]
        raise ValidationError(rejection_summary(name, problems), problems)
    wh.set_params({"file_quantile_levels": grid})
    return grid


def _row_problems(wh: Warehouse, quantile: bool) -> list[dict]:
    """The problems 010 finds in `submission_in`, with their counts and example rows."""
    counts = wh.query_step("eval/010_submission_checks").to_pylist()[0]
    flagged = [(k, text, b) for k, text, b in _FILE_PROBLEMS if counts[f"{k}_n"]]
    examples = _examples(
        wh, {n for k, _, _ in flagged for n in (counts[f"{k}_ex"] or [])}, quantile
    )
    problems = [
        new_problem(
            text,
            counts[f"{k}_n"],
            [examples.get(n, f"row {n}") for n in counts[f"{k}_ex"] or []],
            blocking=b,
        )
        for k, text, b in flagged
    ]
    if counts["n_rows"] == 0:
        problems.insert(0, new_problem("the file holds no rows", 0))
    return problems


def _explain(wh: Warehouse, name: str, found: ValidationError, quantile: bool) -> ValidationError:
    """The file-level report (010, with example rows) for a rejected upload."""
    problems = _row_problems(wh, quantile)
    # Problems only the integer-level checks see (duplicates, a cell's quantile forecast) are kept.
    keep = ("duplicate key", "cell without every level", "quantile values decrease")
    problems += [p for p in found.problems if p["problem"].startswith(keep)]
    if not any(p["severity"] == "error" for p in problems):
        problems = found.problems
    return ValidationError(
        rejection_summary(name, [p for p in problems if p["severity"] == "error"]), problems
    )


def family_sidecar(path: str | Path) -> tuple[str, float | None] | None:
    """The density family a published-package submission declares beside its file:
    `{stem}.nll.json` holding {"family": ..., "df": ...}; None without one. A sidecar
    that cannot be read is an error (it would change every density score)."""
    import json

    path = Path(path)
    side = path.with_name(f"{path.stem}.nll.json")
    if not side.is_file():
        return None
    try:
        meta = json.loads(side.read_text(encoding="utf-8"))
        family = str(meta.get("family", DEFAULT_FAMILY)).lower()
        df = meta.get("df")
        df = None if df is None else float(df)
    except (ValueError, TypeError, AttributeError, OSError) as exc:
        raise UserError(f"Cannot read the family sidecar {side.name}: {exc}") from None
    check_family(family, df)
    return family, df
