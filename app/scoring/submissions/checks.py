"""The checks and the report every submission goes through, whether a file upload
(proforma.app.scoring.submissions.uploads), a model's batches (.batches) or a reference baseline.

A submission row is claimed and its rows inserted inside the caller's transaction; the
integer-level checks (sql/eval/030_forecast_checks.sql, 032 for quantile forecasts, 035 for
usability) then either finish its record or raise a ValidationError carrying every
problem with its count and example rows, and the caller rolls everything back.
"""

from __future__ import annotations

from typing import Any

from proforma.app.scoring import quantiles
from proforma.app.scoring.cells import forget_cell_scores
from proforma.app.scoring.provenance import current_build_id, to_json
from proforma.app.store.warehouse import Warehouse
from proforma.contracts import families
from proforma.contracts.errors import UserError, ValidationError
from proforma.contracts.provenance import utcnow

MAX_EXAMPLES = 3
#: The largest |prediction| accepted (sql/eval/010 and 030 hold the same number): ten times
#: the clamp of the standardized space (|x| <= 6), far beyond any standardized forecast.
MAX_ABS_PREDICTION = 60
#: sigma must lie in the normal range of the 32-bit floats the published rules score it
#: in (sql/eval/050 casts it to FLOAT; 010 and 030 hold the same numbers): a larger one
#: cannot be cast, a smaller one becomes 0 and every score of its cell infinite.
SIGMA_MIN = 1.1754943508222875e-38
SIGMA_MAX = 3.4028234663852886e38
BAD_SIGMA = "sigma missing, not finite, or outside [1.2e-38, 3.4e38] (the 32-bit float range)"
HUGE_PREDICTION = (
    f"|prediction| > {MAX_ABS_PREDICTION}: predictions are standardized levels, clipped to "
    f"|x| <= 6; values this large are almost surely raw reported units (dollars). "
    f'Standardize them first (docs/scoring.md, "Units")'
)


def new_problem(
    problem: str, count: int, examples: list[Any] | None = None, *, blocking: bool = True
) -> dict:
    return {
        "problem": problem,
        "count": int(count),
        "examples": examples or [],
        "severity": "error" if blocking else "warning",
    }


def check_family(family: str, df: float | None) -> None:
    """The family a submission names and its shape parameters (df), as the family registry
    defines them (contracts/families.py): one rule for every door, and the only check of
    a family name since eval.submissions has no CHECK on it (migration V0190)."""
    if family not in families.submission_families():
        known = ", ".join(families.submission_families())
        raise UserError(f"Unknown family {family!r}: use one of {known}")
    problems = families.param_problems(family, {"df": df}, option="--")
    if problems:
        raise UserError("; ".join(problems))


def check_model_name(name: str) -> None:
    """The one rule for a model's name, on every door (uploads, rounds, the in-house
    models): 1 to 200 printable characters, not only spaces."""
    if not name or not name.strip() or len(name) > 200 or not name.isprintable():
        raise UserError(
            f"A model name is 1 to 200 printable characters, not only spaces (got {name!r})"
        )


def claim_name(wh: Warehouse, name: str, replace: bool) -> None:
    check_model_name(name)
    old = wh.fetchall(
        "SELECT submission_id FROM eval.submissions WHERE name = ? AND retired_at IS NULL", [name]
    )
    if old and not replace:
        raise UserError(
            f"A submission named {name!r} exists (id {old[0][0]}); choose another name "
            f"or replace it"
        )
    for (sid,) in old:
        # The old forecasts (and their stored cell scores) go; its row and past scores
        # stay for the record.
        wh.execute("DELETE FROM eval.forecast_rows WHERE submission_id = ?", [sid])
        wh.execute("DELETE FROM eval.forecast_points WHERE submission_id = ?", [sid])
        # a stored upload file stays in the store (other uploads of the same bytes share it)
        wh.execute("DELETE FROM eval.submission_files WHERE submission_id = ?", [sid])
        forget_cell_scores(wh, [sid])
        wh.execute(
            "UPDATE eval.submissions SET retired_at = ? WHERE submission_id = ?", [utcnow(), sid]
        )


def new_submission(
    wh: Warehouse,
    name: str,
    source: str,
    family: str,
    df: float | None,
    has_sigma: bool,
    checksum: str,
    metadata: dict | None,
) -> int:
    check_family(family, df)
    sid = int(wh.scalar("SELECT nextval('eval.submission_id_seq')"))
    wh.execute(
        "INSERT INTO eval.submissions (submission_id, name, source, family, df, has_sigma, "
        "n_components, rows, cells, checksum, build_id, warnings, metadata, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, 1, 0, 0, ?, ?, '[]', ?, ?)",
        [
            sid,
            name,
            source,
            family,
            df,
            has_sigma,
            checksum,
            current_build_id(wh),
            to_json(metadata or {}),
            utcnow(),
        ],
    )
    return sid


def decode_key(wh: Warehouse, key: int, grid: list[float] | None = None) -> str:
    """A packed (cell, component) key as firm/target/origin/horizon/component text (a
    quantile submission's component as its level)."""
    component, cell = key % 1024, key // 1024
    member = (
        f"quantile_level={grid[component]:g}"
        if grid and component < len(grid)
        else f"component={component}"
    )
    return f"{quantiles.describe_cell(wh, cell)} {member}"


def check_and_finish(
    wh: Warehouse,
    sid: int,
    name: str,
    file_warnings: list[dict] | None,
    grid: list[float] | None = None,
    *,
    points: bool = False,
    staged: bool = False,
    notes: list[dict] | None = None,
) -> dict[str, Any]:
    """Run the integer-level checks on the inserted rows; raise (caller rolls back) or
    finish, and return the checks' row (030, 033 or 034: counts, and for a written upload
    its origin range). `grid`: a quantile submission's levels (its checks run too). `points`: the
    rows are in eval.forecast_points (021), where 033 does 030's work at a third of the
    cost; `staged`: they are a file written to the upload store (a point file or a
    single-family density file: 034 checks the file, `upload_file`, and 031 and 035 read
    its decoded rows, upload_points; proforma.app.scoring.submissions.store.stage). `notes`: warnings found before (a file's unknown columns), kept
    with the rest."""
    tables = {
        "points": "upload_points" if staged else "eval.forecast_points",
        "forecasts": "upload_points" if staged else "eval.forecasts",
    }
    row = _checks_row(wh, sid, tables, points=points, staged=staged)
    problems = _row_problems(wh, sid, row, tables, grid)
    grid_warnings: list[dict] = []
    if grid is not None:
        errors, grid_notes = quantiles.check_rows(wh, sid, grid)
        problems += [new_problem(text, n, ex) for text, n, ex in errors]
        grid_warnings = [new_problem(text, n, ex, blocking=False) for text, n, ex in grid_notes]
    if problems:
        raise ValidationError(rejection_summary(name, problems), problems)
    usable = _usable_or_refuse(wh, sid, name, row, tables)
    warnings = list(file_warnings or [])
    if not file_warnings and row["non_finite_prediction_n"]:
        warnings.append(
            new_problem(
                "prediction is null, NaN or infinite (cell left out)",
                row["non_finite_prediction_n"],
                [decode_key(wh, k, grid) for k in usable["non_finite_ex"] or []],
                blocking=False,
            )
        )
    warnings += grid_warnings + list(notes or [])
    _finish(wh, sid, row, grid, warnings)
    return row


def _checks_row(
    wh: Warehouse, sid: int, tables: dict[str, str], *, points: bool, staged: bool
) -> dict[str, Any]:
    """The checks' row of counts and examples: 034 over a staged file (030 over its keyed
    rows when it has null keys), 033 over point rows, else 030."""
    if staged:
        row = wh.query_step(
            "eval/034_stored_upload_checks", identifiers={"stored": "upload_file"}
        ).to_pylist()[0]
        if row["null_key_n"]:
            # rejected: 030 over the keyed rows (022's upload_rows) tells the null keys
            # from origins out of range, with examples
            keyed = {"points": "upload_rows", "forecasts": "upload_rows"}
            row = wh.query_step(
                "eval/030_forecast_checks", {"submission_id": sid}, identifiers=keyed
            ).to_pylist()[0]
    elif points:
        row = wh.query_step(
            "eval/033_point_forecast_checks", {"submission_id": sid}, identifiers=tables
        ).to_pylist()[0]
    else:
        row = wh.query_step(
            "eval/030_forecast_checks", {"submission_id": sid}, identifiers=tables
        ).to_pylist()[0]
    return row


def _row_problems(
    wh: Warehouse, sid: int, row: dict[str, Any], tables: dict[str, str], grid: list[float] | None
) -> list[dict]:
    """The blocking problems the checks' row counts: no rows, bad keys, sigmas missing on
    some rows, duplicate keys (031 finds examples) and huge predictions."""
    problems: list[dict] = []
    if row["n_rows"] == 0:
        problems.append(new_problem("no rows: the submission is empty", 0))
    checks = [
        ("null_key", "null key (firm_id, origin_q, item_id or horizon)", None),
        ("unknown_firm", "unknown firm_id (not in panel.firms)", "unknown_firm_ex"),
        ("unknown_item", "unknown item_id (not one of the 78 items)", "unknown_item_ex"),
        ("bad_origin", "origin_q outside 0..16383", "bad_origin_ex"),
        ("horizon_out_of_range", "horizon outside 1..20", "horizon_out_of_range_ex"),
        ("bad_component", "component null or outside 0..1023", None),
        ("bad_sigma", BAD_SIGMA, "bad_sigma_ex"),
    ]
    for key, text, ex in checks:
        if row[f"{key}_n"] and not (grid is not None and key == "bad_component"):
            problems.append(new_problem(text, row[f"{key}_n"], row[ex] if ex else None))
    if row["sigma_present_n"] and row["sigma_null_n"]:
        problems.append(
            new_problem("sigma missing on some rows of a density submission", row["sigma_null_n"])
        )
    if row["duplicate_excess"]:
        dup = wh.query_step(
            "eval/031_duplicate_keys", {"submission_id": sid}, identifiers=tables
        ).to_pylist()[0]
        examples = [decode_key(wh, k, grid) for k in dup["duplicate_key_ex"] or []]
        what = (
            "duplicate key (firm, target, origin, horizon, quantile_level)"
            if grid is not None
            else "duplicate key (firm, target, origin, horizon, component)"
        )
        problems.append(new_problem(what, dup["duplicate_key_n"], examples))
    if row["huge_prediction_n"]:
        problems.append(
            new_problem(
                HUGE_PREDICTION,
                row["huge_prediction_n"],
                [f"prediction={v:g}" for v in row["huge_prediction_ex"]],
            )
        )
    return problems


def _usable_or_refuse(
    wh: Warehouse, sid: int, name: str, row: dict[str, Any], tables: dict[str, str]
) -> dict[str, Any]:
    """035's usable-cell counts when they are needed (no usable cell found at once, or
    non-finite predictions to report), refusing a submission no cell of which can be
    scored; empty otherwise."""
    # the common case, a usable cell found at once (036), skips 035's read of every row
    usable: dict[str, Any] = {}
    found = wh.query_step(
        "eval/036_forecast_usable_any", {"submission_id": sid}, identifiers=tables
    ).to_pylist()[0]["any_usable"]
    if not found or row["non_finite_prediction_n"]:
        usable = wh.query_step(
            "eval/035_forecast_usable", {"submission_id": sid}, identifiers=tables
        ).to_pylist()[0]
        unusable = _unusable(wh, usable, row["n_rows"])
        if unusable:
            raise ValidationError(rejection_summary(name, unusable), unusable)
    return usable


def _finish(
    wh: Warehouse, sid: int, row: dict[str, Any], grid: list[float] | None, warnings: list[dict]
) -> None:
    """Record the accepted submission's counts, components, sigma and warnings."""
    n_components = len(grid) if grid is not None else int(row["n_components"])
    wh.execute(
        "UPDATE eval.submissions SET rows = ?, cells = ?, n_components = ?, "
        "has_sigma = ?, warnings = ?, quantile_levels = ? WHERE submission_id = ?",
        [
            row["n_rows"],
            row["n_rows"] // max(n_components, 1),
            n_components,
            bool(row["sigma_present_n"]),
            to_json(warnings),
            grid,
            sid,
        ],
    )


def _unusable(wh: Warehouse, usable: dict, n_rows: int) -> list[dict]:
    """The rejection of a submission none of whose cells can ever be scored (035): no
    finite prediction, no origin in a scored split, or no eligible (firm, origin)."""
    if n_rows == 0:
        return []  # reported as an empty submission already
    splits = usable["scored_splits"] or []
    span = (
        "; ".join(
            f"{s['split']} {wh.scalar('SELECT qlabel(?)', [s['first_q']])}.."
            f"{wh.scalar('SELECT qlabel(?)', [s['last_q']])}"
            for s in splits
        )
        or "none in the panel"
    )
    if not usable["finite_n"]:
        return [
            new_problem(
                "no usable forecast: every prediction is null, NaN or infinite",
                n_rows,
                [decode_key(wh, k) for k in usable["non_finite_ex"] or []],
            )
        ]
    if not usable["in_scored_split_n"]:
        first, last = (
            wh.scalar("SELECT qlabel(?)", [usable[k]]) for k in ("first_origin_q", "last_origin_q")
        )
        return [
            new_problem(
                f"no cell in the test split: its origins run {first}..{last}, but only origins "
                f"in a scored split can be scored ({span}); forecasts made at training-period "
                f"origins are never scored",
                usable["finite_n"],
            )
        ]
    if not usable["usable_n"]:
        return [
            new_problem(
                f"no usable cell: none of its (firm, origin) pairs is an eligible origin of the "
                f"panel ({span}; panel.origins lists them), so no cell has a truth to score",
                usable["in_scored_split_n"],
                [decode_key(wh, k) for k in usable["not_eligible_ex"] or []],
            )
        ]
    return []


def rejection_summary(name: str, problems: list[dict]) -> str:
    parts = "; ".join(f"{p['problem']} ({p['count']:,} rows)" for p in problems)
    return f"Submission {name!r} rejected, nothing written: {parts}"
