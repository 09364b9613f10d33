"""Submissions to a round (docs/rounds.md): accepted until the deadline (server time),
stored with their checksum and time, immutable afterwards; one per model name and round
(a new version is a new name). Late, duplicate, changed and wrong-round files, and files
whose keys are not the round's cells, are refused with one line and write nothing.

A file has the columns of a static submission (firm, target, origin, horizon, prediction,
optional sigma, component and quantile_level; the aliases firm_id, quarter,
forecast_horizon). Families, as the static scorer's: the density families of
contracts/families.py (a sigma; the registry's first is the default, a family with a
shape parameter takes it: Student-t's df), point (no sigma column), mixtures of one density
family (a component column: every cell carries the same components) and quantile forecasts
(a quantile_level column: every cell carries the same grid, values non-decreasing in
the level).
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from proforma.app.rounds.store import get_round
from proforma.app.scoring.submissions.checks import check_model_name, rejection_summary
from proforma.app.scoring.submissions.uploads import (
    ForecastFile,
    close_forecast_file,
    file_report,
    open_forecast_file,
    read_failure,
)
from proforma.app.store.warehouse import Warehouse
from proforma.contracts import families
from proforma.contracts.errors import UserError, ValidationError
from proforma.contracts.families import POINT_FAMILY, QUANTILE_FAMILY
from proforma.contracts.forecasts import LEVEL_COLUMN
from proforma.contracts.provenance import file_sha256, utcnow
from proforma.contracts.quarters import quarter_label


class RoundClosed(UserError):
    """A submission after the round's deadline (the API answers 403)."""

    status_code = 403


class SubmissionExists(UserError):
    """A model name that already has a submission in the round (the API answers 409)."""

    status_code = 409


class WrongRound(UserError):
    """Forecasts from another origin quarter than the round's (the API answers 422)."""

    status_code = 422


def round_families() -> tuple[str, ...]:
    """Families a round scores (sql/rounds/040-042): the static scorer's, and point (no
    sigma)."""
    return (*families.submission_families(), POINT_FAMILY)


#: Mixture components are 0..1023 (as in the static scorer).
MAX_COMPONENTS = 1024
_views = itertools.count()


def _gate(wh: Warehouse, round_name: str, name: str, sha256: str, now: dt.datetime) -> dict:
    """The round, if it takes this submission now; a UserError (nothing written) if not."""
    rnd = get_round(wh, round_name, now)
    if now >= rnd["deadline"]:
        raise RoundClosed(
            f"Round {round_name!r} closed at {rnd['deadline']:%Y-%m-%d %H:%M:%S} UTC "
            f"(server time now {now:%Y-%m-%d %H:%M:%S} UTC): late submissions are refused"
        )
    check_model_name(name)
    prior = wh.fetchone(
        "SELECT sha256, received_at FROM rounds.submissions WHERE round_id = ? AND name = ?",
        [rnd["round_id"], name],
    )
    if prior is not None:
        if prior[0] == sha256:
            raise SubmissionExists(
                f"Duplicate: {name!r} submitted this same file to round {round_name!r} at "
                f"{prior[1]:%Y-%m-%d %H:%M:%S} UTC; nothing was written"
            )
        raise SubmissionExists(
            f"Changed: {name!r} already has a submission in round {round_name!r} (received "
            f"{prior[1]:%Y-%m-%d %H:%M:%S} UTC) and submissions are immutable; submit a new "
            "version under a new name"
        )
    return rnd


def _round_family(family: str | None, opened: ForecastFile) -> str:
    """The family a round scores the opened file as: its quantile forecast, a density (with
    sigma), or point (no sigma column). A family asked for that the file's columns
    contradict is refused, never silently changed."""
    if opened.quantile:
        if family not in (None, QUANTILE_FAMILY):
            raise UserError(
                f"A file with a {LEVEL_COLUMN} column is a quantile forecast (family "
                f"{QUANTILE_FAMILY}), not {family}"
            )
        return QUANTILE_FAMILY
    if family == QUANTILE_FAMILY:
        raise UserError(f"A quantile submission needs a {LEVEL_COLUMN} column")
    if not opened.has_sigma:
        if families.is_density(family):
            raise UserError(
                f"Family {family} needs a sigma column (the file has "
                f"{', '.join(opened.columns.values())}); without one it would be scored as "
                "a point forecast, so nothing was written"
            )
        return POINT_FAMILY
    if family == POINT_FAMILY:
        raise UserError(
            "A point submission has no sigma column: drop it, or give the file's density family"
        )
    return family or families.DEFAULT_FAMILY


def submit_file(
    wh: Warehouse,
    round_name: str,
    path: Path,
    name: str,
    *,
    family: str | None = None,
    df: float | None = None,
    metadata: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
    kind: str = "upload",
) -> dict[str, Any]:
    """Check and store a parquet submission file for a round; returns the record (with
    the file's warnings). The file is opened and checked by the static benchmark's own
    reader (proforma.app.scoring.submissions.uploads.open_forecast_file and its row
    checks: columns, aliases, types, time zones, ranges), then against the round (its
    origin, its cells, one row per cell). A file with a quantile_level column is a
    quantile forecast; a family with a shape parameter needs it (Student-t's `df`); a file
    without sigma is a point forecast
    unless a density family is asked for, which is then refused."""
    now = now or utcnow()
    path = Path(path)
    known = round_families()
    if family is not None and family not in known:
        raise UserError(f"Rounds score the families {', '.join(known)} (got {family!r})")
    if family == POINT_FAMILY and df is not None:
        raise UserError("; ".join(families.param_problems(family, {"df": df}, option="--")))
    if not path.is_file():
        raise UserError(f"No such file: {path.name}")
    sha = file_sha256(path)
    rnd = _gate(wh, round_name, name, sha, now)
    density = (
        family if family is not None and families.is_density(family) else families.DEFAULT_FAMILY
    )
    opened = open_forecast_file(wh, path, name, family=density, df=df, checksum=sha)
    view = f"round_in_{next(_views)}"
    try:
        family = _round_family(family, opened)
        try:
            found = file_report(wh, opened)
        except duckdb.Error as exc:  # a damaged page past the footer
            raise read_failure(name, opened, exc) from None
        errors = [p for p in found if p["severity"] == "error"]
        if errors:
            raise ValidationError(rejection_summary(name, errors), found)
        # Rows without a finite prediction are left out (a warning, as on the static
        # benchmark): the entry then does not cover those cells, which is its own loss.
        # A mixture's or a grid's cell goes whole or not at all.
        cell = "firm, target, horizon_num"  # an origin other than the round's is refused
        wh.execute(
            f"""CREATE OR REPLACE TEMP TABLE {view} AS
                SELECT s.firm AS gvkey, s.target, s.origin_q, s.horizon_num AS horizon,
                       s.prediction AS mu, s.sigma, s.component::DOUBLE AS component,
                       s.quantile_level AS level
                FROM submission_in AS s
                ANTI JOIN (SELECT DISTINCT {cell} FROM submission_in
                           WHERE prediction IS NULL OR NOT isfinite(prediction)) AS gone
                  USING ({cell})"""
        )
        record = _store(
            wh, rnd, name, kind, family, opened.df, sha, view, metadata, now, opened.grid
        )
    finally:
        wh.execute(f"DROP TABLE IF EXISTS {view}")
        close_forecast_file(wh)
    record["warnings"] = [
        f"{p['problem']} ({p['count']:,} rows)" if p["count"] else p["problem"]
        for p in [*opened.notes, *found]
        if p["severity"] == "warning"
    ]
    return record


def submit_table(
    wh: Warehouse,
    round_name: str,
    name: str,
    table: pa.Table,
    *,
    kind: str,
    family: str,
    df: float | None = None,
    metadata: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Enter forecasts made here (columns gvkey, target, origin_q, horizon, mu, sigma;
    optional component, a mixture's member, and level, a quantile forecast's level): they
    are written as a submission file and go through submit_file, the door every
    researcher's file takes."""
    import tempfile

    import pyarrow.parquet as pq

    names = table.schema.names
    columns: dict[str, Any] = {
        "firm": table.column("gvkey").cast(pa.string()),
        "target": table.column("target").cast(pa.string()),
        "origin": pa.array(
            [quarter_label(int(q)) for q in table.column("origin_q").to_pylist()], pa.string()
        ),
        "horizon": table.column("horizon").cast(pa.int64()),
        "prediction": table.column("mu").cast(pa.float64()),
    }
    if family not in (POINT_FAMILY, QUANTILE_FAMILY):
        columns["sigma"] = table.column("sigma").cast(pa.float64())
    if "level" in names and family == QUANTILE_FAMILY:
        columns[LEVEL_COLUMN] = table.column("level").cast(pa.float64())
    elif "component" in names:
        columns["component"] = table.column("component").cast(pa.int64())
    with tempfile.TemporaryDirectory(prefix="round-entry-") as folder:
        path = Path(folder) / "entry.parquet"  # (a name may hold any printable character)
        pq.write_table(pa.table(columns), path)
        return submit_file(
            wh,
            round_name,
            path,
            name,
            family=family,
            df=df,
            metadata=metadata,
            now=now,
            kind=kind,
        )


def _store(
    wh: Warehouse,
    rnd: dict[str, Any],
    name: str,
    kind: str,
    family: str,
    df: float | None,
    sha: str,
    view: str,
    metadata: dict[str, Any] | None,
    now: dt.datetime,
    grid: list[float] | None = None,
) -> dict[str, Any]:
    """Store the rows of temp table `view` in the round. A quantile forecast's `grid` is the
    file's, as the static reader settled and checked it (its rows' components are their
    levels' places in it already)."""
    quantile = family == QUANTILE_FAMILY
    grid = grid or []
    total, n_components = _count_in_round(wh, rnd, view)
    problems = _cell_problems(wh, rnd, view, family, n_components, grid)
    if problems:
        raise ValidationError(
            "Submission refused, nothing was written: " + "; ".join(problems),
            [{"problem": p} for p in problems],
        )
    width = len(grid) if quantile else n_components
    row = [rnd["round_id"], name, kind, family, sha, total, now, json.dumps(metadata or {}), df]
    sid = _insert_submission(
        wh, view, family, row + [width, grid or None], quantile or n_components > 1
    )
    return {
        "submission_id": sid,
        "round": rnd["name"],
        "name": name,
        "kind": kind,
        "family": family,
        "df": df,
        "components": len(grid) if quantile else int(n_components),
        "sha256": sha,
        "rows": int(total),
        "received_at": now,
    }


def _count_in_round(wh: Warehouse, rnd: dict[str, Any], view: str) -> tuple[int, int]:
    """The rows of `view` and its distinct components, refusing a file with no row or with
    rows from another origin than the round's."""
    # Keys, ranges, sigmas, components and levels were checked by the static reader's
    # row checks (submit_file); what is left is the round's own: its origin, its cells.
    total, wrong_origin, origins, n_components = wh.one(
        f"""SELECT count(*),
               count(*) FILTER (WHERE origin_q IS DISTINCT FROM ?),
               string_agg(DISTINCT qlabel(origin_q), ', ') FILTER (WHERE origin_q <> ?),
               count(DISTINCT component)
           FROM {view}""",
        [rnd["origin_q"], rnd["origin_q"]],
    )
    if total == 0:
        raise UserError("The submission has no row with a finite prediction; nothing was written")
    if wrong_origin:
        raise WrongRound(
            f"Wrong round: {wrong_origin:,} row(s) forecast from origin(s) {origins or 'unknown'}, "
            f"but round {rnd['name']!r} freezes origin {quarter_label(rnd['origin_q'])}; "
            "nothing was written"
        )
    return total, n_components


def _cell_problems(
    wh: Warehouse,
    rnd: dict[str, Any],
    view: str,
    family: str,
    n_components: int,
    grid: list[float],
) -> list[str]:
    """What keeps `view` out of the round, in the order a submitter fixes it: a point mixture,
    then duplicate keys and rows outside the round's cells, then (for several rows a cell)
    cells without every component or level and quantile values that decrease."""
    quantile = family == QUANTILE_FAMILY
    problems = []
    if not quantile and n_components > 1 and family == POINT_FAMILY:
        problems.append("a mixture (several components) needs a sigma per component")
    multi = quantile or n_components > 1
    if not problems:
        problems += _key_problems(wh, rnd, view, multi)
    if not problems and multi:
        problems += _shape_problems(wh, view, quantile, len(grid) if quantile else n_components)
    return problems


def _key_problems(wh: Warehouse, rnd: dict[str, Any], view: str, multi: bool) -> list[str]:
    """Duplicate keys in `view` and rows for a firm or item that is not a cell of the round."""
    problems = []
    key = "gvkey, target, horizon" + (", component" if multi else "")
    dup, foreign = wh.one(
        f"""SELECT
              (SELECT count(*) FROM (SELECT {key} FROM {view}
                                     GROUP BY ALL HAVING count(*) > 1)),
              (SELECT count(*) FROM {view} s JOIN ref.items i ON i.item = s.target
               WHERE NOT EXISTS (SELECT 1 FROM rounds.baselines b WHERE b.round_id = ?
                                 AND b.gvkey = s.gvkey AND b.item_id = i.item_id))""",
        [rnd["round_id"]],
    )
    if dup:
        problems.append(f"{dup:,} duplicate ({key.replace('gvkey', 'firm')}) key(s)")
    if foreign:
        problems.append(
            f"{foreign:,} row(s) for a firm or item that is not a cell of round "
            f"{rnd['name']!r} (its cells: cells__{rnd['name']}.parquet among its inputs)"
        )
    return problems


def _shape_problems(wh: Warehouse, view: str, quantile: bool, width: int) -> list[str]:
    """Cells of a mixture or quantile forecast without all `width` rows, and (quantile only)
    cells whose values decrease as the level rises."""
    problems = []
    incomplete, decreasing = wh.one(
        f"""SELECT
              (SELECT count(*) FROM (SELECT gvkey, target, horizon FROM {view}
                                     GROUP BY ALL HAVING count(*) <> ?)),
              (SELECT count(DISTINCT (gvkey, target, horizon)) FROM (
                  SELECT gvkey, target, horizon, mu, lag(mu) OVER (
                      PARTITION BY gvkey, target, horizon ORDER BY component) AS below
                  FROM {view}) WHERE {"TRUE" if quantile else "FALSE"}
                    AND isfinite(mu) AND isfinite(below) AND mu < below)""",
        [width],
    )
    if incomplete:
        what = f"every level of the grid ({width})" if quantile else f"all {width} components"
        problems.append(f"{incomplete:,} cell(s) without {what}: every cell needs the same")
    if decreasing:
        problems.append(f"{decreasing:,} cell(s) whose quantile values decrease as the level rises")
    return problems


def _insert_submission(
    wh: Warehouse, view: str, family: str, submission: list[Any], multi: bool
) -> int:
    """Insert the submission's row (`submission`: the rounds.submissions columns in order)
    and its forecasts, one transaction; returns the new submission_id."""
    table = "rounds.forecast_components" if multi else "rounds.forecasts"
    component = "s.component::SMALLINT, " if multi else ""
    with wh.transaction():
        sid = wh.scalar(
            "INSERT INTO rounds.submissions (round_id, name, kind, family, sha256, rows, "
            "received_at, metadata, df, n_components, quantile_levels) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING submission_id",
            submission,
        )
        wh.execute(
            f"""INSERT INTO {table}
                SELECT ?, s.gvkey, i.item_id, s.horizon::TINYINT, {component}s.mu,
                       {"NULL" if family in (POINT_FAMILY, QUANTILE_FAMILY) else "s.sigma"}
                FROM {view} s JOIN ref.items i ON i.item = s.target""",
            [sid],
        )
    return sid
