"""Submissions to a round (docs/rounds.md): accepted until the deadline (server time),
stored with their checksum and time, immutable afterwards; one per model name and round
(a new version is a new name). Late, duplicate, changed and wrong-round files, and files
whose keys are not the round's cells, are refused with one line and write nothing.

A file has the columns of a static submission (firm, target, origin, horizon, prediction,
optional sigma, component and quantile_level; the aliases firm_id, quarter,
forecast_horizon). Families, as the static scorer's: gaussian (a sigma, the default),
laplace, student_t (with its df), point (no sigma column), mixtures of one density
family (a component column: every cell carries the same components) and quantile grids
(a quantile_level column: every cell carries the same grid, values non-decreasing in
the level).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.rounds.store import get_round
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError, ValidationError
from proforma.contracts.forecasts import (
    DENSITY_FAMILIES,
    LEVEL_COLUMN,
    QUANTILE_FAMILY,
    SUBMISSION_COLUMNS,
    accepted_names,
)
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


#: Families a round scores (sql/rounds/040-042): the static scorer's, and "point" (no sigma).
ROUND_FAMILIES = (*DENSITY_FAMILIES, QUANTILE_FAMILY, "point")
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
    if (
        not name
        or len(name) > 100
        or not name.replace("-", "").replace("_", "").replace(".", "").isalnum()
    ):
        raise UserError(f"Model names use letters, digits, '.', '-' and '_' (got {name!r})")
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


def _column(names: list[str], canonical: str) -> str | None:
    for n in accepted_names(canonical):
        if n in names:
            return n
    return None


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
) -> dict[str, Any]:
    """Check and store a parquet submission file for a round; returns the record. A file
    with a quantile_level column is a quantile grid (family None or "quantile"); a
    student_t file needs `df`."""
    now = now or utcnow()
    if not path.is_file():
        raise UserError(f"No such file: {path}")
    sha = file_sha256(path)
    rnd = _gate(wh, round_name, name, sha, now)
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise UserError(f"Not a parquet file: {path} ({str(exc).splitlines()[0]})") from None
    cols = {c: _column(schema.names, c) for c in (*SUBMISSION_COLUMNS, "sigma", "component")}
    level_col = next((n for n in schema.names if n.lower() == LEVEL_COLUMN), None)
    missing = [c for c in SUBMISSION_COLUMNS if cols[c] is None]
    if missing:
        raise UserError(f"Missing column(s): {', '.join(missing)} (file has {schema.names})")
    if not pa.types.is_string(schema.field(cols["firm"]).type) and not pa.types.is_large_string(
        schema.field(cols["firm"]).type
    ):
        raise UserError(
            f"Column {cols['firm']} must hold gvkey strings, not {schema.field(cols['firm']).type}"
        )
    if level_col is not None:
        if family not in (None, QUANTILE_FAMILY):
            raise UserError(
                f"A file with a {LEVEL_COLUMN} column is a quantile grid (family "
                f"{QUANTILE_FAMILY}), not {family}"
            )
        family = QUANTILE_FAMILY
    elif family == QUANTILE_FAMILY:
        raise UserError(f"A quantile submission needs a {LEVEL_COLUMN} column")
    family = family or ("gaussian" if cols["sigma"] else "point")
    origin_type = schema.field(cols["origin"]).type
    o = f'"{cols["origin"]}"'
    if pa.types.is_string(origin_type) or pa.types.is_large_string(origin_type):
        origin = (
            f"CASE WHEN regexp_full_match(trim({o}), '\\d{{4}}[Qq][1-4]') "
            f"THEN CAST(left(trim({o}), 4) AS INTEGER) * 4 + CAST(right(trim({o}), 1) AS INTEGER) - 1 "
            f"ELSE qord(TRY_CAST({o} AS DATE)) END"
        )
    else:
        origin = f"qord(CAST({o} AS DATE))"
    sigma = f'CAST("{cols["sigma"]}" AS DOUBLE)' if cols["sigma"] else "CAST(NULL AS DOUBLE)"
    h = f'"{cols["horizon"]}"'
    component = f'TRY_CAST("{cols["component"]}" AS DOUBLE)' if cols["component"] else "0.0::DOUBLE"
    level = f'CAST("{level_col}" AS DOUBLE)' if level_col else "CAST(NULL AS DOUBLE)"
    select = (
        f'SELECT "{cols["firm"]}" AS gvkey, "{cols["target"]}" AS target, {origin} AS origin_q, '
        f'TRY_CAST({h} AS DOUBLE) AS horizon, CAST("{cols["prediction"]}" AS DOUBLE) AS mu, '
        f"{sigma} AS sigma, {component} AS component, {level} AS level FROM read_parquet(?)"
    )
    view = f"round_in_{next(_views)}"
    try:
        wh.execute(f"CREATE OR REPLACE TEMP TABLE {view} AS {select}", [str(path)])
    except duckdb.Error as exc:
        wh.execute(f"DROP TABLE IF EXISTS {view}")
        raise ValidationError(
            "Submission refused, nothing was written: cannot read its columns as a "
            f"forecast file ({str(exc).splitlines()[0]})"
        ) from None
    try:
        return _store(wh, rnd, name, "upload", family, df, sha, view, metadata, now)
    finally:
        wh.execute(f"DROP TABLE IF EXISTS {view}")


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
    """Store forecasts made here (columns gvkey, target, origin_q, horizon, mu, sigma;
    optional component, a mixture's member, and level, a quantile grid's level)."""
    now = now or utcnow()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as out:
        out.write_table(table)
    sha = hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()
    rnd = _gate(wh, round_name, name, sha, now)
    view = f"round_in_{next(_views)}"
    wh.con.register(view + "_arrow", table)
    try:
        names = table.schema.names
        component = "component::DOUBLE" if "component" in names else "0.0::DOUBLE"
        level = "level::DOUBLE" if "level" in names else "NULL::DOUBLE"
        wh.execute(
            f"CREATE OR REPLACE TEMP TABLE {view} AS SELECT gvkey, target, origin_q, horizon, "
            f"mu, sigma, {component} AS component, {level} AS level FROM {view}_arrow"
        )
        return _store(wh, rnd, name, kind, family, df, sha, view, metadata, now)
    finally:
        wh.con.unregister(view + "_arrow")
        wh.execute(f"DROP TABLE IF EXISTS {view}")


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
) -> dict[str, Any]:
    from proforma.app.scoring.quantiles import grid_of, grid_problems
    from proforma.app.scoring.submissions.checks import check_family

    if family not in ROUND_FAMILIES:
        raise UserError(f"Rounds score the families {', '.join(ROUND_FAMILIES)} (got {family!r})")
    if family != "point":
        check_family(family, df)
    elif df is not None:
        raise UserError("--df applies to family student_t only, not point")
    quantile = family == QUANTILE_FAMILY
    rid = rnd["round_id"]
    counts = wh.one(
        f"""SELECT count(*),
               count(*) FILTER (WHERE gvkey IS NULL OR target IS NULL OR origin_q IS NULL
                                OR horizon IS NULL),
               count(*) FILTER (WHERE horizon NOT BETWEEN 1 AND 20 OR horizon <> floor(horizon)),
               count(*) FILTER (WHERE origin_q IS DISTINCT FROM ?),
               string_agg(DISTINCT qlabel(origin_q), ', ') FILTER (WHERE origin_q <> ?),
               count(*) FILTER (WHERE target NOT IN (SELECT item FROM ref.items)),
               count(*) FILTER (WHERE sigma IS NOT NULL AND NOT (isfinite(sigma) AND sigma > 0)),
               count(*) FILTER (WHERE {"sigma IS NULL" if family not in ("point", QUANTILE_FAMILY) else "FALSE"}),
               count(*) FILTER (WHERE component IS NULL OR component <> floor(component)
                                OR NOT (component BETWEEN 0 AND {MAX_COMPONENTS - 1})),
               count(DISTINCT component),
               count(*) FILTER (WHERE {"sigma IS NOT NULL" if quantile else "FALSE"}),
               count(*) FILTER (WHERE {"level IS NULL OR NOT (level > 0 AND level < 1)" if quantile else "FALSE"})
           FROM {view}""",
        [rnd["origin_q"], rnd["origin_q"]],
    )
    (total, null_keys, bad_h, wrong_origin, origins, bad_item, bad_sigma, no_sigma) = counts[:8]
    bad_component, n_components, quantile_sigma, bad_level = counts[8:]
    if total == 0:
        raise UserError("The submission has no rows; nothing was written")
    if wrong_origin:
        raise WrongRound(
            f"Wrong round: {wrong_origin:,} row(s) forecast from origin(s) {origins or 'unknown'}, "
            f"but round {rnd['name']!r} freezes origin {quarter_label(rnd['origin_q'])}; "
            "nothing was written"
        )
    problems = []
    if null_keys:
        problems.append(f"{null_keys:,} row(s) with a missing key")
    if bad_h:
        problems.append(f"{bad_h:,} row(s) with a horizon outside the integers 1..20")
    if bad_item:
        problems.append(f"{bad_item:,} row(s) with an unknown target item")
    if bad_sigma:
        problems.append(f"{bad_sigma:,} row(s) with a sigma that is not finite and > 0")
    if no_sigma:
        problems.append(f"{no_sigma:,} row(s) without sigma in a {family} submission")
    if bad_component:
        problems.append(
            f"{bad_component:,} row(s) with a component that is not an integer in "
            f"0..{MAX_COMPONENTS - 1}"
        )
    grid: list[float] = []
    if quantile:
        if quantile_sigma:
            problems.append(f"{quantile_sigma:,} row(s) with a sigma in a quantile grid")
        if bad_level:
            problems.append(f"{bad_level:,} row(s) with a {LEVEL_COLUMN} missing or outside (0, 1)")
        grid = grid_of(r[0] for r in wh.fetchall(f"SELECT DISTINCT level FROM {view}"))
        problems += grid_problems(grid)
        if not problems:
            wh.execute(
                f"UPDATE {view} SET component = list_position(?::DOUBLE[], level) - 1", [grid]
            )
    elif n_components > 1 and family == "point":
        problems.append("a mixture (several components) needs a sigma per component")
    multi = quantile or n_components > 1
    if not problems:
        key = "gvkey, target, horizon" + (", component" if multi else "")
        dup, foreign = wh.one(
            f"""SELECT
                  (SELECT count(*) FROM (SELECT {key} FROM {view}
                                         GROUP BY ALL HAVING count(*) > 1)),
                  (SELECT count(*) FROM {view} s JOIN ref.items i ON i.item = s.target
                   WHERE NOT EXISTS (SELECT 1 FROM rounds.baselines b WHERE b.round_id = ?
                                     AND b.gvkey = s.gvkey AND b.item_id = i.item_id))""",
            [rid],
        )
        if dup:
            problems.append(f"{dup:,} duplicate ({key.replace('gvkey', 'firm')}) key(s)")
        if foreign:
            problems.append(
                f"{foreign:,} row(s) for a firm or item that is not a cell of round "
                f"{rnd['name']!r} (its cells: cells__{rnd['name']}.parquet among its inputs)"
            )
    if not problems and multi:
        width = len(grid) if quantile else n_components
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
            what = (
                f"every level of the grid ({len(grid)})" if quantile else f"all {width} components"
            )
            problems.append(f"{incomplete:,} cell(s) without {what}: every cell needs the same")
        if decreasing:
            problems.append(
                f"{decreasing:,} cell(s) whose quantile values decrease as the level rises"
            )
    if problems:
        raise ValidationError(
            "Submission refused, nothing was written: " + "; ".join(problems),
            [{"problem": p} for p in problems],
        )
    table = "rounds.forecast_components" if multi else "rounds.forecasts"
    component = "s.component::SMALLINT, " if multi else ""
    with wh.transaction():
        sid = wh.scalar(
            "INSERT INTO rounds.submissions (round_id, name, kind, family, sha256, rows, "
            "received_at, metadata, df, n_components, quantile_levels) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING submission_id",
            [
                rid,
                name,
                kind,
                family,
                sha,
                total,
                now,
                json.dumps(metadata or {}),
                df,
                len(grid) if quantile else n_components,
                grid or None,
            ],
        )
        wh.execute(
            f"""INSERT INTO {table}
                SELECT ?, s.gvkey, i.item_id, s.horizon::TINYINT, {component}s.mu,
                       {"NULL" if family in ("point", QUANTILE_FAMILY) else "s.sigma"}
                FROM {view} s JOIN ref.items i ON i.item = s.target""",
            [sid],
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
