"""The local check of a forecast file, with the server's own code: the form's fields and
the file's cheap checks of the door (proforma.app.scoring.submissions.form), then the
reader every door opens a file with (open_forecast_file: readable, family, columns and
types) and the row checks of sql/eval/010 (null keys, unknown firms and items, origins,
horizons, components, levels, sigma, predictions) and its repeated keys (019, 030,
031), run in DuckDB in memory on a warehouse made by the server's migrations and
reference data, its firms the server's own (GET /reference/keys). A file that passes is
not refused for any of these reasons; what needs the panel's values (whether any cell
can ever be scored, a quantile forecast's cells checked level by level, a round's own cells)
is the server's to say."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from proforma.client.errors import FileRefused
from proforma.contracts.errors import UserError, ValidationError


@dataclass
class CheckReport:
    path: Path
    rows: int
    family: str
    columns: list[str]
    #: problems that do not refuse the file (unknown columns, non-finite predictions)
    warnings: list[dict[str, Any]] = field(default_factory=list)


def _warehouse(firms: list[str]) -> Any:
    """An in-memory warehouse as the server's (its migrations and reference data) whose
    panel.firms holds the server's firm keys."""
    from proforma.app.flows.warehouse import prepare
    from proforma.app.store.warehouse import Warehouse

    wh = Warehouse(duckdb.connect(), ":memory:")
    prepare(wh)
    wh.execute("CREATE SCHEMA IF NOT EXISTS panel")
    wh.execute(
        "CREATE TABLE panel.firms AS SELECT CAST(row_number() OVER () AS INTEGER) AS firm_id, "
        "gvkey FROM (SELECT unnest(CAST(? AS VARCHAR[])) AS gvkey)",
        [list(firms)],
    )
    return wh


def form_fields(
    name: str,
    *,
    training_cutoff: str,
    leakage_statement: str,
    family: str | None = None,
    df: float | None = None,
    description: str = "",
    code_url: str = "",
) -> dict[str, str]:
    """The upload form's fields as the server reads them (empty ones left out)."""
    fields = {
        "name": name,
        "training_cutoff": training_cutoff,
        "leakage_statement": leakage_statement,
        "family": family or "",
        "df": "" if df is None else repr(float(df)),
        "description": description,
        "code_url": code_url,
    }
    return {k: v for k, v in fields.items() if v}


def check_form(fields: dict[str, str]) -> None:
    """The static benchmark's form fields, checked as the door checks them."""
    from proforma.app.scoring.submissions.form import FormRefused, parse_meta

    try:
        parse_meta(fields)
    except FormRefused as exc:
        raise FileRefused(str(exc), exc.problems) from None


def check_file(
    path: str | Path,
    firms: list[str],
    *,
    family: str | None = None,
    df: float | None = None,
    name: str = "local check",
) -> CheckReport:
    """Check `path` as the server will; raises FileRefused with every problem found."""
    from proforma.app.scoring.submissions.form import FormRefused, check_parquet
    from proforma.app.scoring.submissions.uploads import (
        close_forecast_file,
        file_report,
        open_forecast_file,
    )

    path = Path(path)
    if not path.is_file():
        raise FileRefused(f"No file {path}")
    try:
        info = check_parquet(path)
    except FormRefused as exc:
        raise FileRefused(str(exc), exc.problems) from None
    wh = _warehouse(firms)
    try:
        try:
            opened = open_forecast_file(wh, path, name, family=family or "gaussian", df=df)
        except ValidationError as exc:
            raise FileRefused(str(exc), exc.problems) from None
        except UserError as exc:  # the family and the file disagree
            raise FileRefused(str(exc)) from None
        try:
            problems = file_report(wh, opened)
            if not any(p["severity"] == "error" for p in problems):
                problems += duplicate_report(wh, opened.grid)
        finally:
            close_forecast_file(wh)
    finally:
        wh.close()
    errors = [p for p in problems if p["severity"] == "error"]
    warnings = opened.notes + [p for p in problems if p["severity"] != "error"]
    if errors:
        from proforma.app.scoring.submissions.checks import rejection_summary

        raise FileRefused(rejection_summary(name, errors), errors + warnings)
    return CheckReport(path, info["rows"], opened.family, info["columns"], warnings)


#: The keyed rows as the forecast tables hold them, for the server's row checks 030/031.
_KEYED = "local_keyed_rows"


def duplicate_report(wh: Any, grid: list[float] | None) -> list[dict[str, Any]]:
    """A key that occurs twice: the server's steps as its ingest runs them (019 keys the
    rows, 030 counts the repeated keys, 031 names them), over the file in place."""
    from proforma.app.scoring.submissions.checks import decode_key, new_problem

    wh.run_step("eval/019_submission_keyed")
    wh.execute(
        f"CREATE OR REPLACE TEMP VIEW {_KEYED} AS SELECT 0 AS submission_id, firm_id, "
        "origin_q, item_id, horizon, component, prediction AS mu, sigma FROM submission_keyed"
    )
    try:
        tables = {"forecasts": _KEYED}
        row = wh.query_step(
            "eval/030_forecast_checks", {"submission_id": 0}, identifiers=tables
        ).to_pylist()[0]
        if not row["duplicate_excess"]:
            return []
        dup = wh.query_step(
            "eval/031_duplicate_keys", {"submission_id": 0}, identifiers=tables
        ).to_pylist()[0]
    finally:
        wh.execute(f"DROP VIEW IF EXISTS {_KEYED}")
        wh.execute("DROP VIEW IF EXISTS submission_keyed")
    member = "quantile_level" if grid is not None else "component"
    return [
        new_problem(
            f"duplicate key (firm, target, origin, horizon, {member})",
            dup["duplicate_key_n"],
            [decode_key(wh, k, grid) for k in dup["duplicate_key_ex"] or []],
        )
    ]
