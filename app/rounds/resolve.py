"""Resolution and leaderboards of rounds (docs/rounds.md).

`resolve` runs after every ingest that adds quarters (and the build on it): it writes the
truth of every newly realized cell of every round past its deadline, standardized with the
round's frozen parameters, and scores those cells for every submission of the round, in
one transaction (sql/rounds/030, 040). A cell resolves once and never changes: its truth
is the first value reported after the origin. `leaderboard` computes a round's metrics
over its submissions' common sample (sql/rounds/050); `live_leaderboard` ranks models
across rounds, with Diebold-Mariano tests against the best once two or more rounds have
resolved cells (one loss differential per round, as the static test takes one per origin
quarter).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from proforma.app.rounds.store import get_round
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.metrics import METRIC_NAMES
from proforma.contracts.provenance import utcnow

#: n and every metric of contracts/metrics.py (the columns sql/rounds/050 finishes)
METRICS = ("n", *METRIC_NAMES)


def resolve(
    wh: Warehouse, now: dt.datetime | None = None, *, panel: Path | None = None
) -> dict[str, Any]:
    """Resolve every round's newly realized cells; returns counts of this resolution.

    The realized values come from this warehouse's current build, or, with `panel`, from
    the build of another warehouse file that holds a later vintage of the same panel
    (attached read-only; the demo grows its panel there, so that its static benchmark
    keeps its own vintage)."""
    now = now or utcnow()
    if not wh.table_exists("rounds.rounds"):
        raise UserError("This warehouse has no rounds tables: run `proforma migrate`.")
    try:
        return _resolve_from(wh, now, panel)
    except Exception as exc:
        record_failure(wh, exc)  # /health says so until a resolution succeeds
        raise


def record_failure(wh: Warehouse, exc: BaseException) -> None:
    """Record a resolution that failed as a whole (V0160); never hides the error itself."""
    if wh.in_transaction or not wh.table_exists("rounds.resolution_failures"):
        return  # the caller's transaction rolls back; nothing could be kept
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:500]
    with contextlib.suppress(Exception):
        wh.execute(
            "INSERT INTO rounds.resolution_failures (failed_at, error, after_resolution_id) "
            "SELECT ?, ?, (SELECT max(resolution_id) FROM rounds.resolutions)",
            [utcnow(), f"{type(exc).__name__}: {text}"],
        )


def _resolve_from(wh: Warehouse, now: dt.datetime, panel: Path | None) -> dict[str, Any]:
    t0 = time.perf_counter()
    if panel is None:
        wh.require_panel("panel.values", "panel.firms")
        schema, source = "panel", "warehouse"
    else:
        if not panel.is_file():
            raise UserError(f"No warehouse file {panel}")
        path = str(panel.resolve()).replace("'", "''")
        wh.execute("DETACH DATABASE IF EXISTS next_vintage")
        wh.execute(f"ATTACH '{path}' AS next_vintage (READ_ONLY)")
        schema, source = "next_vintage.panel", str(panel.resolve())
        found = wh.scalar(
            "SELECT count(*) FROM information_schema.tables WHERE table_catalog = "
            "'next_vintage' AND table_schema = 'panel' AND table_name IN ('values', 'firms')"
        )
        if found != 2:
            wh.execute("DETACH DATABASE next_vintage")
            raise UserError(f"{panel} holds no built panel: run `proforma build` there first.")
    try:
        wh.execute(f"CREATE OR REPLACE TEMP VIEW resolve_values AS SELECT * FROM {schema}.values")
        wh.execute(f"CREATE OR REPLACE TEMP VIEW resolve_firms AS SELECT * FROM {schema}.firms")
        return _resolve(wh, now, source, t0, own=panel is None)
    finally:
        wh.execute("DROP VIEW IF EXISTS resolve_values")
        wh.execute("DROP VIEW IF EXISTS resolve_firms")
        if panel is not None:
            wh.execute("DETACH DATABASE IF EXISTS next_vintage")


def _resolve(
    wh: Warehouse, now: dt.datetime, source: str, t0: float, *, own: bool
) -> dict[str, Any]:
    ingest_id = wh.scalar("SELECT max(ingest_id) FROM raw.ingests") if own else None
    build_id = wh.scalar("SELECT max(build_id) FROM meta.builds") if own else None
    last_q = wh.scalar("SELECT max(q) FROM resolve_values")
    waiting = [
        r[0]
        for r in wh.fetchall(
            "SELECT name FROM rounds.rounds WHERE deadline > ? ORDER BY round_id", [now]
        )
    ]
    # The truth first, in one transaction; then each entry's cells in a transaction of
    # their own, so that one entry that fails to score (a file an older release let in,
    # a bug) is isolated and recorded while the others resolve; then the metrics.
    with wh.transaction():
        rid = wh.scalar(
            "INSERT INTO rounds.resolutions (ingest_id, build_id, last_q, panel_source, "
            "cells_new, scores_new, resolved_at, seconds) VALUES (?, ?, ?, ?, 0, 0, ?, 0) "
            "RETURNING resolution_id",
            [ingest_id, build_id, last_q, source, now],
        )
        params = {"resolution_id": rid, "ingest_id": ingest_id, "now": now}
        wh.run_step("rounds/030_resolve_truth", params)
    cells = wh.scalar("SELECT count(*) FROM rounds.truth WHERE resolution_id = ?", [rid])
    before = wh.scalar("SELECT count(*) FROM rounds.cell_scores")
    failed = _score_cells(wh, rid, params, now)
    scores = wh.scalar("SELECT count(*) FROM rounds.cell_scores") - before
    with wh.transaction():
        # every round with resolved cells: an entry's cells scored late (after an
        # isolated failure) change its round's board too
        for (round_id,) in wh.fetchall("SELECT DISTINCT round_id FROM rounds.truth"):
            _store_metrics(wh, round_id, rid)
        per_round = wh.fetchall(
            "SELECT r.name, count(*) FROM rounds.truth t JOIN rounds.rounds r USING (round_id) "
            "WHERE t.resolution_id = ? GROUP BY r.name ORDER BY r.name",
            [rid],
        )
        seconds = time.perf_counter() - t0
        wh.execute(
            "UPDATE rounds.resolutions SET cells_new = ?, scores_new = ?, seconds = ? "
            "WHERE resolution_id = ?",
            [cells, scores, seconds, rid],
        )
    return {
        "resolution_id": rid,
        "cells_new": int(cells),
        "scores_new": int(scores),
        "per_round": dict(per_round),
        "waiting": waiting,
        "failed": failed,
        "seconds": seconds,
        "last_q": last_q,
    }


def _score_cells(
    wh: Warehouse, resolution_id: int, params: dict[str, Any], now: dt.datetime
) -> list[dict[str, Any]]:
    """Score every entry's resolved cells it has no score for yet (this resolution's, and
    any an earlier one failed on), one entry at a time and each in its own transaction,
    with the static scorer's per-cell terms (sql/eval/057 single, 054 mixture, 056
    quantile forecast) over the entry's forecasts of those cells (sql/rounds/040), under its
    round's rule set, into rounds.cell_scores (041). An entry that fails is rolled back,
    recorded in rounds.entry_failures and returned; the others go on."""
    from proforma.app.scoring.cells import register_functions

    register_functions(wh)
    subs = wh.arrow(
        """SELECT s.submission_id, s.name, r.name AS round, s.family, s.df, s.n_components,
                  s.quantile_levels, r.rules
           FROM rounds.submissions s JOIN rounds.rounds r USING (round_id)
           WHERE s.round_id IN (SELECT DISTINCT round_id FROM rounds.truth)
           ORDER BY s.submission_id"""
    ).to_pylist()
    failed = []
    for sub in subs:
        try:
            with wh.transaction():
                _score_entry(wh, sub, params)
            _drop_entry_views(wh)
        except Exception as exc:
            if isinstance(exc, duckdb.InterruptException):
                raise
            error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
            failed.append(
                {
                    "submission_id": int(sub["submission_id"]),
                    "name": sub["name"],
                    "round": sub["round"],
                    "error": error,
                }
            )
            _drop_entry_views(wh)
            wh.execute(
                "INSERT INTO rounds.entry_failures VALUES (?, ?, ?, ?)",
                [resolution_id, int(sub["submission_id"]), error, now],
            )
    return failed


def _score_entry(wh: Warehouse, sub: dict[str, Any], params: dict[str, Any]) -> None:
    from proforma.app.scoring.cells import cell_terms, family_params, rule_params
    from proforma.contracts.rules import RuleSet

    one = {
        **params,
        "submission_id": int(sub["submission_id"]),
        **family_params(sub),
        "has_sigma": True,  # a round's density families all carry a sigma
        **rule_params(RuleSet.parse(sub["rules"], "The round records")),
    }
    # a mixture's components are in rounds.forecast_components (a single forecast's in
    # rounds.forecasts, as component 0)
    first_component = wh.scalar(
        "SELECT min(component) FROM rounds.forecast_components WHERE submission_id = ?",
        [int(sub["submission_id"])],
    )
    terms, one = cell_terms(
        wh,
        sub,
        one,
        "round_forecast_cells",
        step="rounds/040_cell_scores",
        first_component=first_component,
    )
    # the absolute track: a quantile forecast's median residual, else the residual
    r_abs = "r_abs" if sub["family"] == "quantile" else "r"
    wh.run_step(
        "rounds/041_cell_scores_insert",
        one,
        identifiers={"terms": terms, "r_abs": r_abs},
    )


def _drop_entry_views(wh: Warehouse) -> None:
    """What _score_entry left (outside its transaction: an aborted one takes no statement)."""
    from proforma.app.scoring.cells import drop_cell_terms

    drop_cell_terms(wh)
    wh.execute("DROP VIEW IF EXISTS round_forecast_cells")
    wh.execute("DROP TABLE IF EXISTS round_cells")


def resolution_health(wh: Warehouse) -> dict[str, Any]:
    """The rounds part of /api/v1/health: `idle` (no resolution yet), `ok`, or `failing`
    while the latest resolution had entries whose cells could not be scored (isolated:
    the others resolved; the next resolution tries them again)."""
    if not wh.table_exists("rounds.entry_failures"):
        return {"status": "idle"}
    row = wh.fetchone(
        "SELECT resolution_id, resolved_at FROM rounds.resolutions "
        "ORDER BY resolution_id DESC LIMIT 1"
    )
    failure = (
        wh.fetchone(
            "SELECT failed_at, error, after_resolution_id FROM rounds.resolution_failures "
            "ORDER BY failure_id DESC LIMIT 1"
        )
        if wh.table_exists("rounds.resolution_failures")
        else None
    )
    if failure is not None and failure[2] == (row[0] if row is not None else None):
        # the latest resolution failed as a whole: nothing of it was kept
        out_failed: dict[str, Any] = {
            "status": "failing",
            "last_failure": {"failed_at": failure[0], "error": failure[1]},
        }
        if row is not None:
            out_failed |= {"last_resolution_id": row[0], "last_resolved_at": row[1]}
        return out_failed
    if row is None:
        return {"status": "idle"}
    failed = [
        {"submission_id": r[0], "name": r[1], "round": r[2], "error": r[3]}
        for r in wh.fetchall(
            "SELECT f.submission_id, s.name, r.name, f.error FROM rounds.entry_failures f "
            "JOIN rounds.submissions s USING (submission_id) JOIN rounds.rounds r USING "
            "(round_id) WHERE f.resolution_id = ? ORDER BY f.submission_id",
            [row[0]],
        )
    ]
    out: dict[str, Any] = {
        "status": "failing" if failed else "ok",
        "last_resolution_id": row[0],
        "last_resolved_at": row[1],
    }
    if failed:
        out["failed_entries"] = failed
    return out


def _metric_rows(wh: Warehouse, round_id: int, submission_ids: Sequence[int]) -> list[dict]:
    """sql/rounds/050 over the common sample of `submission_ids` (one round's)."""
    wh.execute("CREATE OR REPLACE TEMP TABLE round_subs (submission_id INTEGER, shapes BOOLEAN)")
    try:
        wh.execute(
            "INSERT INTO round_subs SELECT submission_id, kind <> 'upload' "
            "FROM rounds.submissions WHERE submission_id IN (SELECT unnest(?::INTEGER[]))",
            [list(submission_ids)],
        )
        return wh.query_step("rounds/050_metrics", {"round_id": round_id}).to_pylist()
    finally:
        wh.execute("DROP TABLE IF EXISTS round_subs")


def board_members(wh: Warehouse, round_id: int, submission_ids: Sequence[int]) -> dict[int, float]:
    """{submission_id: share of the round's resolved cells it scored}. Entries that cover
    at least MIN_COVERAGE of them share the common board; the static footprints' rule
    (proforma.app.scoring.runs.MIN_COVERAGE), so that a partial entry never shrinks the
    others' sample: it is ranked on its own cells instead."""
    if not submission_ids:
        return {}
    rows = wh.fetchall(
        """WITH resolved AS (
               SELECT count(*) AS n FROM rounds.truth
               WHERE round_id = ? AND isfinite(actual) AND isfinite(baseline))
           SELECT s.sid, coalesce(c.n, 0) / greatest((SELECT n FROM resolved), 1)
           FROM (SELECT unnest(?::INTEGER[]) AS sid) AS s
           LEFT JOIN (SELECT submission_id, count(*) AS n FROM rounds.cell_scores
                      GROUP BY submission_id) AS c ON c.submission_id = s.sid""",
        [round_id, list(submission_ids)],
    )
    return {int(sid): float(share) for sid, share in rows}


def _split_board(shares: dict[int, float]) -> tuple[list[int], list[int]]:
    from proforma.app.scoring.runs import MIN_COVERAGE

    common = [sid for sid, share in shares.items() if share >= MIN_COVERAGE]
    return common, [sid for sid in shares if sid not in common]


def _board_rows(wh: Warehouse, round_id: int, submission_ids: Sequence[int]) -> list[dict]:
    """Metric rows of the covering entries over their common sample, and of each other
    entry over its own cells (`sample` says which)."""
    common, own = _split_board(board_members(wh, round_id, submission_ids))
    rows = [{**r, "sample": "common"} for r in _metric_rows(wh, round_id, common)] if common else []
    for sid in own:
        rows += [{**r, "sample": "own"} for r in _metric_rows(wh, round_id, [sid])]
    return rows


def _store_metrics(wh: Warehouse, round_id: int, resolution_id: int) -> None:
    """rounds.metrics of a round, replaced: its covering entries over their common
    sample, each other entry over its own cells."""
    subs = [
        r[0]
        for r in wh.fetchall(
            "SELECT submission_id FROM rounds.submissions WHERE round_id = ?", [round_id]
        )
    ]
    wh.execute("DELETE FROM rounds.metrics WHERE round_id = ?", [round_id])
    if not subs:
        return
    rows = _board_rows(wh, round_id, subs)
    if not rows:
        return
    cols = ("submission_id", "horizon", *METRICS, "sample")
    table = pa.table({c: [r[c] for r in rows] for c in cols})
    table = table.append_column("round_id", pa.array([round_id] * len(rows), pa.int32()))
    table = table.append_column("resolution_id", pa.array([resolution_id] * len(rows), pa.int32()))
    wh.write_arrow("rounds.metrics", table)


def leaderboard(
    wh: Warehouse, round_name: str, models: Sequence[str] | None = None
) -> dict[str, Any]:
    """A round's metrics: {"round", "models": [{name, kind, family, global metrics,
    coverage, common_sample, by_horizon: [...]}], "n_common"}. The entries (or `models`)
    that cover at least MIN_COVERAGE of the resolved cells are ranked over their common
    sample, best R2 first; each other entry follows, over its own cells and marked so."""
    rnd = get_round(wh, round_name)
    subs = wh.fetchall(
        "SELECT submission_id, name, kind, family FROM rounds.submissions WHERE round_id = ? "
        "ORDER BY submission_id",
        [rnd["round_id"]],
    )
    if models:
        unknown = sorted(set(models) - {s[1] for s in subs})
        if unknown:
            raise UserError(f"Round {round_name!r} has no submission {', '.join(unknown)}")
        subs = [s for s in subs if s[1] in set(models)]
    rows: list[dict] = []
    shares = board_members(wh, rnd["round_id"], [s[0] for s in subs])
    common_ids = set(shares)  # before any cell resolves, every entry is on the board
    if subs and rnd["cells_resolved"]:
        rows = _board_rows(wh, rnd["round_id"], [s[0] for s in subs])
        common_ids = set(_split_board(shares)[0])
    out = []
    for sid, name, kind, family in subs:
        mine = [r for r in rows if r["submission_id"] == sid]
        overall = next((r for r in mine if r["horizon"] is None), None)
        on_board = sid in common_ids
        entry: dict[str, Any] = {
            "submission_id": sid,
            "name": name,
            "kind": kind,
            "family": family,
            "coverage": shares.get(sid, 0.0),
            "common_sample": on_board,
        }
        if not on_board:
            entry["note"] = (
                f"scores {shares.get(sid, 0.0):.1%} of the resolved cells: ranked on its "
                "own cells, off the common board"
            )
        entry.update({m: (overall or {}).get(m) for m in METRICS})
        entry["n"] = int(entry["n"] or 0)
        entry["by_horizon"] = [
            {"horizon": r["horizon"], **{m: r[m] for m in METRICS}}
            for r in mine
            if r["horizon"] is not None
        ]
        out.append(entry)
    out.sort(
        key=lambda e: (
            not e["common_sample"],
            -(e["r2"] if e["r2"] is not None and not math.isnan(e["r2"]) else -1e300),
        )
    )
    rank_round_board(out)
    common = [e for e in out if e["common_sample"]]
    return {
        "round": rnd,
        "models": out,
        "n_common": common[0]["n"] if common else 0,
    }


def rank_round_board(models: list[dict[str, Any]]) -> None:
    """Each entry's rank on the common board, in the order given (best R2 first); None
    for an entry ranked on its own cells."""
    rank = 0
    for e in models:
        if e["common_sample"]:
            rank += 1
        e["rank"] = rank if e["common_sample"] else None


def live_leaderboard(wh: Warehouse) -> list[dict[str, Any]]:
    """Models ranked across rounds by MSE: every metric of each model's resolved cells in
    every round it entered, pooled (sql/rounds/055, from the metric definitions: R2 over
    the pooled cells with the truth-only denominator of those cells, the MAE from the
    median of a quantile forecast), the rounds entered, and a Diebold-Mariano test
    of squared loss against the leader (the best model that entered no round by upload)
    over the rounds both entered (one mean loss
    differential per round, on the cells both scored; bandwidth 0, needs two rounds)."""
    if not wh.table_exists("rounds.rounds"):
        return []
    out = [
        {**row, "rounds": int(row["rounds"]), "n": int(row["n"])}
        for row in wh.query_step("rounds/055_live_metrics").to_pylist()
    ]
    out.sort(key=lambda e: e["mse"])
    # the leader of the tests: the best model that entered no round by upload, so that
    # no test reads an upload's cells (docs/service.md, "The truth: threat model")
    uploaders = {
        r[0]
        for r in wh.fetchall("SELECT DISTINCT name FROM rounds.submissions WHERE kind = 'upload'")
    }
    lead = next((e["name"] for e in out if e["name"] not in uploaders), None)
    if lead is not None:
        from proforma.app.scoring import diebold_mariano

        leader = lead
        for e in out:
            d = [
                r[0]
                for r in wh.fetchall(
                    """SELECT avg(a.r * a.r - b.r * b.r) FROM rounds.cell_scores a
                       JOIN rounds.submissions sa USING (submission_id)
                       JOIN rounds.submissions sb ON sb.round_id = sa.round_id AND sb.name = ?
                       JOIN rounds.cell_scores b ON b.submission_id = sb.submission_id
                        AND b.gvkey = a.gvkey AND b.item_id = a.item_id AND b.horizon = a.horizon
                       WHERE sa.name = ? GROUP BY sa.round_id ORDER BY sa.round_id""",
                    [leader, e["name"]],
                )
            ]
            _, stat, p = (
                diebold_mariano(np.asarray(d, dtype=float), 1)
                if e["name"] != leader
                else (0, None, None)
            )
            e["dm_stat"], e["dm_p"], e["dm_periods"] = stat, p, len(d)
    return out
