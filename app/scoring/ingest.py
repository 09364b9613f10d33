"""Submissions in: a parquet file (uploads) or a model's Arrow batches, one path.

Validation is SQL (sql/eval/010_submission_checks.sql on the file while DuckDB streams
it, sql/eval/030_forecast_checks.sql on the integer-keyed rows), so nothing is ever
loaded into Python. A rejected submission writes nothing: the insert and the checks
run in one transaction that is rolled back on any blocking problem, and the
ValidationError carries every problem with its count and example rows.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from app.errors import UserError, ValidationError
from app.scoring import quantiles
from app.scoring.cells import forget_cell_scores
from app.scoring.provenance import (
    BatchHasher,
    current_build_id,
    file_checksum,
    now,
    to_json,
)
from app.warehouse import Warehouse
from models import FORECAST_SCHEMA as MODEL_FORECAST_SCHEMA

FAMILIES = ("gaussian", "laplace", "student_t", quantiles.FAMILY)
#: What a model's `mu` is in: the benchmark's standardized space, or reported dollars.
SPACES = ("standardized", "dollars")
REQUIRED = ("firm", "target", "origin", "horizon", "prediction")
ALIASES = {"firm_id": "firm", "quarter": "origin", "forecast_horizon": "horizon"}
OPTIONAL = ("sigma", "component")
MAX_EXAMPLES = 3
#: The largest |prediction| accepted (sql/eval/010 and 030 hold the same number): ten times
#: the clamp of the standardized space (|x| <= 6), far beyond any standardized forecast.
MAX_ABS_PREDICTION = 60
HUGE_PREDICTION = (
    f"|prediction| > {MAX_ABS_PREDICTION}: predictions are standardized levels, clipped to "
    f"|x| <= 6; values this large are almost surely raw reported units (dollars). "
    f"Standardize them first (docs/scoring.md, \"Units\")")

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
    ("bad_sigma", "sigma missing, not finite or not > 0", True),
    ("non_finite_prediction", "prediction is null, NaN or infinite (cell left out)", False),
    ("huge_prediction", HUGE_PREDICTION, True),
]


def _problem(problem: str, count: int, examples: list[Any] | None = None, *,
             blocking: bool = True) -> dict:
    return {"problem": problem, "count": int(count), "examples": examples or [],
            "severity": "error" if blocking else "warning"}


def _check_family(family: str, df: float | None) -> None:
    if family not in FAMILIES:
        raise UserError(f"Unknown family {family!r}: use one of {', '.join(FAMILIES)}")
    if family == "student_t":
        if df is None or not df > 0:
            raise UserError("family student_t needs --df NU > 0")
    elif df is not None:
        raise UserError(f"--df applies to family student_t only, not {family}")


def _require_panel(wh: Warehouse) -> None:
    if not wh.table_exists("panel.firms"):
        raise UserError("No panel in the warehouse: run `proforma build` before submitting")


def _claim_name(wh: Warehouse, name: str, replace: bool) -> None:
    if not name or len(name) > 200:
        raise UserError("A submission needs a name of 1 to 200 characters")
    old = wh.fetchall(
        "SELECT submission_id FROM eval.submissions WHERE name = ? AND retired_at IS NULL", [name])
    if old and not replace:
        raise UserError(
            f"A submission named {name!r} exists (id {old[0][0]}); choose another name "
            f"or replace it")
    for (sid,) in old:
        # The old forecasts (and their stored cell scores) go; its row and past scores
        # stay for the record.
        wh.execute("DELETE FROM eval.forecasts WHERE submission_id = ?", [sid])
        forget_cell_scores(wh, [sid])
        wh.execute("UPDATE eval.submissions SET retired_at = ? WHERE submission_id = ?",
                   [now(), sid])


def _new_submission(wh: Warehouse, name: str, source: str, family: str, df: float | None,
                    has_sigma: bool, checksum: str, metadata: dict | None) -> int:
    sid = int(wh.scalar("SELECT nextval('eval.submission_id_seq')"))
    wh.execute(
        "INSERT INTO eval.submissions (submission_id, name, source, family, df, has_sigma, "
        "n_components, rows, cells, checksum, build_id, warnings, metadata, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, 1, 0, 0, ?, ?, '[]', ?, ?)",
        [sid, name, source, family, df, has_sigma, checksum, current_build_id(wh),
         to_json(metadata or {}), now()],
    )
    return sid


def _decode_key(wh: Warehouse, key: int, grid: list[float] | None = None) -> str:
    """A packed (cell, component) key as firm/target/origin/horizon/component text (a
    quantile submission's component as its level)."""
    component, cell = key % 1024, key // 1024
    member = (f"quantile_level={grid[component]:g}" if grid and component < len(grid)
              else f"component={component}")
    return f"{quantiles.describe_cell(wh, cell)} {member}"


def _finish(wh: Warehouse, sid: int, name: str, file_warnings: list[dict] | None,
            grid: list[float] | None = None) -> int:
    """Run the integer-level checks on the inserted rows; raise (caller rolls back) or
    finish. `grid`: a quantile submission's levels (its checks run too)."""
    row = wh.query_step("eval/030_forecast_checks", {"submission_id": sid}).to_pylist()[0]
    problems: list[dict] = []
    if row["n_rows"] == 0:
        problems.append(_problem("no rows: the submission is empty", 0))
    checks = [
        ("null_key", "null key (firm_id, origin_q, item_id or horizon)", None),
        ("unknown_firm", "unknown firm_id (not in panel.firms)", "unknown_firm_ex"),
        ("unknown_item", "unknown item_id (not one of the 78 items)", "unknown_item_ex"),
        ("bad_origin", "origin_q outside 0..16383", "bad_origin_ex"),
        ("horizon_out_of_range", "horizon outside 1..20", "horizon_out_of_range_ex"),
        ("bad_component", "component null or outside 0..1023", None),
        ("bad_sigma", "sigma not finite or not > 0", "bad_sigma_ex"),
    ]
    for key, text, ex in checks:
        if row[f"{key}_n"] and not (grid is not None and key == "bad_component"):
            problems.append(_problem(text, row[f"{key}_n"], row[ex] if ex else None))
    if row["sigma_present_n"] and row["sigma_null_n"]:
        problems.append(_problem("sigma missing on some rows of a density submission",
                                 row["sigma_null_n"]))
    if row["duplicate_key_n"]:
        examples = [_decode_key(wh, k, grid) for k in row["duplicate_key_ex"] or []]
        what = ("duplicate key (firm, target, origin, horizon, quantile_level)"
                if grid is not None else "duplicate key (firm, target, origin, horizon, component)")
        problems.append(_problem(what, row["duplicate_key_n"], examples))
    if row["huge_prediction_n"]:
        problems.append(_problem(HUGE_PREDICTION, row["huge_prediction_n"],
                                 [f"prediction={v:g}" for v in row["huge_prediction_ex"]]))
    grid_warnings: list[dict] = []
    if grid is not None:
        errors, notes = quantiles.check_rows(wh, sid, grid)
        problems += [_problem(text, n, ex) for text, n, ex in errors]
        grid_warnings = [_problem(text, n, ex, blocking=False) for text, n, ex in notes]
    if problems:
        raise ValidationError(_summary(name, problems), problems)
    usable = wh.query_step("eval/035_forecast_usable", {"submission_id": sid}).to_pylist()[0]
    unusable = _unusable(wh, usable, row["n_rows"])
    if unusable:
        raise ValidationError(_summary(name, unusable), unusable)
    warnings = list(file_warnings or [])
    if not file_warnings and row["non_finite_prediction_n"]:
        warnings.append(_problem(
            "prediction is null, NaN or infinite (cell left out)",
            row["non_finite_prediction_n"],
            [_decode_key(wh, k, grid) for k in usable["non_finite_ex"] or []], blocking=False))
    warnings += grid_warnings
    n_components = len(grid) if grid is not None else int(row["n_components"])
    wh.execute(
        "UPDATE eval.submissions SET rows = ?, cells = ?, n_components = ?, "
        "has_sigma = ?, warnings = ?, quantile_levels = ? WHERE submission_id = ?",
        [row["n_rows"], row["n_rows"] // max(n_components, 1), n_components,
         bool(row["sigma_present_n"]), to_json(warnings), grid, sid],
    )
    return sid


def _unusable(wh: Warehouse, usable: dict, n_rows: int) -> list[dict]:
    """The rejection of a submission none of whose cells can ever be scored (035): no
    finite prediction, no origin in a scored split, or no eligible (firm, origin)."""
    if n_rows == 0:
        return []  # reported as an empty submission already
    splits = usable["scored_splits"] or []
    span = "; ".join(
        f"{s['split']} {wh.scalar('SELECT qlabel(?)', [s['first_q']])}.."
        f"{wh.scalar('SELECT qlabel(?)', [s['last_q']])}" for s in splits) or "none in the panel"
    if not usable["finite_n"]:
        return [_problem(
            "no usable forecast: every prediction is null, NaN or infinite", n_rows,
            [_decode_key(wh, k) for k in usable["non_finite_ex"] or []])]
    if not usable["in_scored_split_n"]:
        first, last = (wh.scalar("SELECT qlabel(?)", [usable[k]])
                       for k in ("first_origin_q", "last_origin_q"))
        return [_problem(
            f"no cell in the test split: its origins run {first}..{last}, but only origins "
            f"in a scored split can be scored ({span}); forecasts made at training-period "
            f"origins are never scored", usable["finite_n"])]
    if not usable["usable_n"]:
        return [_problem(
            f"no usable cell: none of its (firm, origin) pairs is an eligible origin of the "
            f"panel ({span}; panel.origins lists them), so no cell has a truth to score",
            usable["in_scored_split_n"],
            [_decode_key(wh, k) for k in usable["not_eligible_ex"] or []])]
    return []


def _summary(name: str, problems: list[dict]) -> str:
    parts = "; ".join(f"{p['problem']} ({p['count']:,} rows)" for p in problems)
    return f"Submission {name!r} rejected, nothing written: {parts}"


# -- parquet uploads ----------------------------------------------------------------------

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


def _schema_view(path: Path, schema: pa.Schema, quantile: bool) -> tuple[str, list[dict]]:
    """SQL of the temp view `submission_in` over the file, or the schema's problems. A
    quantile file's component is its level's place in getvariable('quantile_grid')."""
    by_lower: dict[str, str] = {}
    for field in schema:
        low = field.name.lower()
        canonical = ALIASES.get(low, low)
        # The canonical name wins over an alias when both exist.
        if canonical not in by_lower or low == canonical:
            by_lower[canonical] = field.name
    problems = []
    missing = [c for c in (*REQUIRED, *((quantiles.LEVEL_COLUMN,) if quantile else ()))
               if c not in by_lower]
    if missing:
        problems.append(_problem(
            "missing column(s): " + ", ".join(missing)
            + f" (found: {', '.join(schema.names) or 'none'})", 0))
    types = {c: schema.field(by_lower[c]).type for c in by_lower}
    expect = {
        "firm": (_is_str, "a string gvkey such as '001004'"),
        "target": (_is_str, "a string item name such as 'revtq'"),
        "origin": (lambda t: pa.types.is_date(t) or pa.types.is_timestamp(t) or _is_str(t),
                   "a date, timestamp or quarter string such as '2015Q1'"),
        "horizon": (_is_num, "an integer 1..20"),
        "prediction": (_is_num, "a number (standardized level)"),
        "sigma": (_is_num, "a positive number"),
        "component": (_is_int, "an integer mixture member id"),
        quantiles.LEVEL_COLUMN: (_is_num, "a number in (0, 1)"),
    }
    for col, (ok, what) in expect.items():
        if col in types and not ok(types[col]):
            problems.append(_problem(
                f"wrong type: column {by_lower[col]!r} is {types[col]}, expected {what}", 0))
    if quantile:
        extra = [c for c in OPTIONAL if c in by_lower]
        if extra:
            problems.append(_problem(
                f"a quantile submission (it has a {quantiles.LEVEL_COLUMN} column) has no "
                f"{' or '.join(extra)} column: one row per (cell, level) with the quantile "
                f"as prediction", 0))
    if problems:
        return "", problems
    q = {c: _quote(by_lower[c]) for c in by_lower}
    origin_t = _value_type(types["origin"])
    if pa.types.is_date(origin_t):
        origin_expr = f"qord({q['origin']})"
    elif pa.types.is_timestamp(origin_t) and origin_t.tz:
        origin_expr = f"qord(CAST(timezone('UTC', {q['origin']}) AS DATE))"
    elif pa.types.is_timestamp(origin_t):
        origin_expr = f"qord(CAST({q['origin']} AS DATE))"
    else:
        origin_expr = f"eval.origin_from_text(CAST({q['origin']} AS VARCHAR))"
    sigma = f"CAST({q['sigma']} AS DOUBLE)" if "sigma" in q else "CAST(NULL AS DOUBLE)"
    component = f"CAST({q['component']} AS BIGINT)" if "component" in q else "CAST(0 AS BIGINT)"
    level = "CAST(NULL AS DOUBLE)"
    if quantile:
        level = f"CAST({q[quantiles.LEVEL_COLUMN]} AS DOUBLE)"
        component = f"CAST({quantiles.component_sql(level)} AS BIGINT)"
    literal = "'" + str(path).replace("'", "''") + "'"
    sql = f"""
        CREATE OR REPLACE TEMP VIEW submission_in AS
        SELECT
            file_row_number AS row_nr,
            CAST({q['firm']} AS VARCHAR) AS firm,
            CAST({q['target']} AS VARCHAR) AS target,
            {q['origin']} IS NULL AS origin_is_null,
            CAST({origin_expr} AS INTEGER) AS origin_q,
            CAST({q['horizon']} AS DOUBLE) AS horizon_num,
            CAST({q['prediction']} AS DOUBLE) AS prediction,
            {sigma} AS sigma,
            {component} AS component,
            {level} AS quantile_level
        FROM read_parquet({literal}, file_row_number = true)
    """
    return sql, problems


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
        text = (f"row {r[0]}: firm={r[1]!r} target={r[2]!r} origin={r[3]} horizon={r[4]:g} "
                if r[4] is not None else
                f"row {r[0]}: firm={r[1]!r} target={r[2]!r} origin={r[3]} horizon=NULL ")
        text += (f"prediction={r[5]} quantile_level={r[8]}" if quantile else
                 f"prediction={r[5]} sigma={r[6]} component={r[7]}")
        out[r[0]] = text
    return out


def _unreadable(name: str, path: Path, detail: str) -> ValidationError:
    problems = [_problem(f"not a readable parquet file: {detail}", 1, [str(path.name)])]
    return ValidationError(_summary(name, problems), problems)


def ingest_parquet(
    wh: Warehouse,
    path: str | Path,
    name: str,
    *,
    family: str = "gaussian",
    df: float | None = None,
    metadata: dict | None = None,
    source: str = "upload",
    replace: bool = False,
) -> int:
    """Validate and store a submission file; returns its submission_id.

    Raises ValidationError (with `.problems`: every problem's count and example rows)
    and writes nothing when the file is not acceptable. Warnings (non-finite or huge
    predictions) are stored in eval.submissions.warnings. A file with a quantile_level
    column is a quantile submission (family "quantile"; the default "gaussian" is taken
    as unspecified).
    """
    path = Path(path)
    if not path.is_file():
        raise UserError(f"No file {path}")
    if path.stat().st_size == 0:
        raise _unreadable(name, path, "the file is empty (0 bytes)")
    try:
        meta = pq.ParquetFile(path)
        schema = meta.schema_arrow
    except (pa.ArrowException, OSError) as exc:
        raise _unreadable(name, path, str(exc).splitlines()[0][:200]) from None
    quantile = any(f.name.lower() == quantiles.LEVEL_COLUMN for f in schema)
    if quantile and family in ("gaussian", quantiles.FAMILY) and df is None:
        family = quantiles.FAMILY
    elif quantile or family == quantiles.FAMILY:
        raise UserError(
            f"A quantile submission is a file with a {quantiles.LEVEL_COLUMN} column and "
            f"family {quantiles.FAMILY}: {path.name} "
            + (f"has that column but family {family}" if quantile else "has no such column"))
    _check_family(family, df)
    _require_panel(wh)
    if meta.metadata.num_rows == 0:
        problems = [_problem("the file holds no rows", 0)]
        raise ValidationError(_summary(name, problems), problems)
    view_sql, problems = _schema_view(path, schema, quantile)
    if problems:
        raise ValidationError(_summary(name, problems), problems)
    checksum = file_checksum(path)
    has_sigma = any(f.name.lower() == "sigma" for f in schema)
    try:
        wh.execute(view_sql)
        wh.set_params({"has_sigma": has_sigma, "is_quantile": quantile})
        grid = _file_grid(wh, name) if quantile else None
        # Happy path: ONE streaming pass stores integer-keyed rows (invalid keys as NULL)
        # and 030 checks them; any problem rolls back and 010 explains the file.
        try:
            with wh.transaction():
                _claim_name(wh, name, replace)
                sid = _new_submission(wh, name, source, family, df, has_sigma, checksum,
                                      metadata)
                wh.run_step("eval/020_submission_insert", {"submission_id": sid})
                _finish(wh, sid, name, None, grid)
        except ValidationError as found:
            raise _explain(wh, name, found, quantile) from None
    except duckdb.Error as exc:
        raise _unreadable(name, path, str(exc).splitlines()[0][:200]) from None
    finally:
        wh.execute("DROP VIEW IF EXISTS submission_in")
    return sid


def _file_grid(wh: Warehouse, name: str) -> list[float]:
    """A quantile file's grid (its distinct valid levels), set as getvariable('quantile_grid')."""
    levels = [r[0] for r in wh.fetchall(
        "SELECT DISTINCT quantile_level FROM submission_in WHERE quantile_level > 0 "
        "AND quantile_level < 1 ORDER BY 1 LIMIT ?", [quantiles.MAX_LEVELS + 1])]
    grid = quantiles.grid_of(levels)
    found = quantiles.grid_problems(grid)
    if found:
        problems = [_problem(text, 0) for text in found]
        raise ValidationError(_summary(name, problems), problems)
    wh.set_params({"quantile_grid": grid})
    return grid


def _explain(wh: Warehouse, name: str, found: ValidationError, quantile: bool) -> ValidationError:
    """The file-level report (010, with example rows) for a rejected upload."""
    counts = wh.query_step("eval/010_submission_checks").to_pylist()[0]
    flagged = [(k, text, b) for k, text, b in _FILE_PROBLEMS if counts[f"{k}_n"]]
    examples = _examples(wh, {n for k, _, _ in flagged for n in (counts[f"{k}_ex"] or [])},
                         quantile)
    problems = [
        _problem(text, counts[f"{k}_n"],
                 [examples.get(n, f"row {n}") for n in counts[f"{k}_ex"] or []], blocking=b)
        for k, text, b in flagged
    ]
    if counts["n_rows"] == 0:
        problems.insert(0, _problem("the file holds no rows", 0))
    # Problems only the integer-level checks see (duplicates, a cell's quantile grid) are kept.
    keep = ("duplicate key", "cell without every level", "quantile values decrease")
    problems += [p for p in found.problems if p["problem"].startswith(keep)]
    if not any(p["severity"] == "error" for p in problems):
        problems = found.problems
    return ValidationError(_summary(name, [p for p in problems if p["severity"] == "error"]),
                           problems)


# -- Arrow batches from models -------------------------------------------------------------

# The models' contract schema, every field nullable here so that bad batches reach the
# checks (and their report) instead of failing on construction.
FORECAST_SCHEMA = pa.schema([f.with_nullable(True) for f in MODEL_FORECAST_SCHEMA])


def _conform(batches: Iterable[pa.RecordBatch], hasher: BatchHasher, name: str,
             errors: list[ValidationError],
             levels: set[float] | None = None) -> tuple[pa.RecordBatchReader, bool]:
    """The batches cast to FORECAST_SCHEMA (component 0 and sigma NULL when absent), or
    with `levels` (a quantile forecast) to quantiles.QUANTILE_SCHEMA, whose distinct
    levels are collected into `levels` as the batches stream past."""
    schema = FORECAST_SCHEMA if levels is None else quantiles.QUANTILE_SCHEMA
    if isinstance(batches, pa.Table):
        batches = batches.to_batches()
    elif isinstance(batches, pa.RecordBatch):
        batches = [batches]
    it: Iterator[pa.RecordBatch] = iter(batches)
    first = next(it, None)
    if first is None:
        problems = [_problem("no rows: the submission is empty", 0)]
        raise ValidationError(_summary(name, problems), problems)
    names = set(first.schema.names)
    required = ["firm_id", "origin_q", "item_id", "horizon", "mu"]
    if levels is not None:
        required.append(quantiles.LEVEL_COLUMN)
        extra = [c for c in ("sigma", "component") if c in names]
        if extra:
            problems = [_problem(f"a quantile forecast has no {' or '.join(extra)} column: one "
                                 f"row per (cell, {quantiles.LEVEL_COLUMN}), mu the quantile", 0)]
            raise ValidationError(_summary(name, problems), problems)
    missing = [c for c in required if c not in names]
    if missing:
        problems = [_problem("missing column(s): " + ", ".join(missing), 0)]
        raise ValidationError(_summary(name, problems), problems)
    has_sigma = "sigma" in names

    def cast(batch: pa.RecordBatch) -> pa.RecordBatch:
        hasher.update(batch)
        cols = []
        for field in schema:
            if field.name in batch.schema.names:
                col = batch.column(field.name)
                try:
                    cols.append(col.cast(field.type, safe=True))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    problems = [_problem(f"wrong type or value in column {field.name}: "
                                         f"{str(exc).splitlines()[0][:200]}", batch.num_rows)]
                    # Raised inside DuckDB's scan; kept here so the caller re-raises it.
                    errors.append(ValidationError(_summary(name, problems), problems))
                    raise errors[-1] from None
            elif field.name == "component":
                cols.append(pa.array([0] * batch.num_rows, pa.int16()))
            else:
                cols.append(pa.nulls(batch.num_rows, pa.float64()))
        out = pa.RecordBatch.from_arrays(cols, schema=schema)
        if levels is not None:
            levels.update(quantiles.batch_levels(out))
        return out

    stream = (cast(b) for b in itertools.chain([first], it))
    return pa.RecordBatchReader.from_batches(schema, stream), has_sigma


def _forecast_rows(view: str, space: str, quantile: bool = False) -> str:
    """SELECT of eval.forecasts rows from the registered view; dollars are standardized
    with the origin's parameters (a forecast for a non-origin gets a NULL mu: left out).
    The standardization is monotone, so a quantile grid stays a quantile grid; a quantile
    row's component is its level's place in the grid."""
    component = quantiles.component_sql("f.quantile_level") if quantile else "f.component"
    sigma = "CAST(NULL AS DOUBLE)" if quantile else "f.sigma"
    if space == "standardized":
        return (f"SELECT ?, f.firm_id, f.origin_q, f.item_id, f.horizon, {component}, f.mu, "
                f"{sigma} FROM {view} AS f")
    return f"""
        SELECT ?, f.firm_id, f.origin_q, f.item_id, f.horizon, {component},
               panel.pf_standardize(f.mu, k.k, o.z, p.mu, p.sigma), {sigma}
        FROM {view} AS f
        LEFT JOIN panel.origins AS o ON o.firm_id = f.firm_id AND o.origin_q = f.origin_q
        LEFT JOIN panel.item_k AS k ON k.item_id = f.item_id
        LEFT JOIN panel.origin_params AS p ON p.item_id = f.item_id AND p.q = f.origin_q"""


@contextlib.contextmanager
def _spooled(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatchReader]:
    """The reader's batches written to an Arrow IPC file under the temp directory, here in
    the caller's thread, then read back. A model's batches are usually a lazy generator
    (the forward passes or fits happen as DuckDB pulls them); handed to DuckDB directly,
    its scan threads would run the model (each with its own thread pool and allocator:
    5 GB and --threads ignored for Forma on the demo) and hold the write transaction open
    for the whole run."""
    from app.settings import get_settings

    folder = get_settings().temp_directory
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="forecasts-", suffix=".arrows", dir=folder)
    os.close(fd)
    path = Path(tmp)
    try:
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_stream(f, reader.schema) as w:
            for batch in reader:
                w.write_batch(batch)
        with pa.OSFile(str(path), "rb") as src:
            yield pa.ipc.open_stream(src)
    finally:
        path.unlink(missing_ok=True)


def ingest_forecasts(
    wh: Warehouse,
    name: str,
    batches: Iterable[pa.RecordBatch] | pa.RecordBatchReader | pa.Table,
    *,
    family: str = "gaussian",
    df: float | None = None,
    source: str = "model",
    metadata: dict | None = None,
    replace: bool | None = None,
    space: str = "standardized",
) -> int:
    """Store a model's forecasts (Arrow batches, docs/contracts.md "Forecasts").

    Same checks as uploads, on the integer keys; returns the submission_id. A model
    re-using a name replaces its earlier forecasts unless replace=False.
    space="dollars": `mu` is in reported units (a raw dollar forecast); it is
    standardized here exactly as the truth is (origin's z, k, mu, sigma; clipped at +-6,
    the SQL macro panel.pf_standardize), so models that forecast dollars (LLMs,
    Chronos-2 quantiles, reconciled statements) need no copy of the transform. Such
    forecasts carry no sigma (a dollar sd has no single standardized counterpart).
    family="quantile": batches in quantiles.QUANTILE_SCHEMA (quantile_level and mu, the
    quantile's value, one row per cell and level); the levels form the grid, which every
    cell must carry with values non-decreasing in the level (checked after
    standardization).
    """
    _check_family(family, df)
    _require_panel(wh)
    if space not in SPACES:
        raise UserError(f"Unknown forecast space {space!r}: use one of {', '.join(SPACES)}")
    replace = (source != "upload") if replace is None else replace
    hasher = BatchHasher()
    errors: list[ValidationError] = []
    quantile = family == quantiles.FAMILY
    levels: set[float] | None = set() if quantile else None
    # A quantile grid must be known before the rows are stored, so its batches are always
    # spooled (their levels are collected on the way).
    in_memory = not quantile and isinstance(batches, (pa.Table, pa.RecordBatch, list, tuple))
    reader, has_sigma = _conform(batches, hasher, name, errors, levels)
    if space == "dollars" and has_sigma:
        raise UserError("Forecasts in dollars carry no sigma: drop the column, or send "
                        "standardized forecasts (space='standardized') with their sigma")
    if space == "dollars":
        metadata = {**(metadata or {}), "forecast_space": "dollars"}
    view = "__forecasts_in"
    with contextlib.ExitStack() as stack:
        if not in_memory:
            reader = stack.enter_context(_spooled(reader))
        grid = None
        if levels is not None:
            grid = quantiles.grid_of(levels)
            found = quantiles.grid_problems(grid)
            if found:
                problems = [_problem(text, 0) for text in found]
                raise ValidationError(_summary(name, problems), problems)
            wh.set_params({"quantile_grid": grid})
        wh.con.register(view, reader)
        stack.callback(wh.con.unregister, view)
        with wh.transaction():
            _claim_name(wh, name, replace)
            sid = _new_submission(wh, name, source, family, df, has_sigma, "pending", metadata)
            try:
                wh.execute(f"INSERT INTO eval.forecasts {_forecast_rows(view, space, quantile)}",
                           [sid])
            except (duckdb.Error, ValidationError):
                if errors:
                    raise errors[0] from None
                raise
            wh.execute("UPDATE eval.submissions SET checksum = ? WHERE submission_id = ?",
                       [hasher.hexdigest(), sid])
            _finish(wh, sid, name, [], grid)
    return sid


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
        family = str(meta.get("family", "gaussian")).lower()
        df = meta.get("df")
        df = None if df is None else float(df)
    except (ValueError, TypeError, AttributeError, OSError) as exc:
        raise UserError(f"Cannot read the family sidecar {side.name}: {exc}") from None
    _check_family(family, df)
    return family, df
