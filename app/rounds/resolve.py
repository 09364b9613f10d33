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

import datetime as dt
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
        _score_cells(wh, rid, params)
        scores = wh.scalar("SELECT count(*) FROM rounds.cell_scores") - before
        for (round_id,) in wh.fetchall(
            "SELECT DISTINCT round_id FROM rounds.truth WHERE resolution_id = ?", [rid]
        ):
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
        "seconds": seconds,
        "last_q": last_q,
    }


def _score_cells(wh: Warehouse, resolution_id: int, params: dict[str, Any]) -> None:
    """Score the cells of this resolution for every submission of their rounds, one
    submission at a time, with the static scorer's per-cell terms (sql/eval/057 single,
    054 mixture, 056 quantile grid) over the submission's forecasts of the resolved cells
    (sql/rounds/040), under its round's rule set, into rounds.cell_scores (041)."""
    from proforma.app.scoring.cells import (
        cell_terms,
        drop_cell_terms,
        register_functions,
        rule_params,
    )
    from proforma.contracts.panel import RuleSet

    register_functions(wh)
    subs = wh.arrow(
        """SELECT s.submission_id, s.family, s.df, s.n_components, s.quantile_levels, r.rules
           FROM rounds.submissions s JOIN rounds.rounds r USING (round_id)
           WHERE s.round_id IN (SELECT DISTINCT round_id FROM rounds.truth
                                WHERE resolution_id = ?)
           ORDER BY s.submission_id""",
        [resolution_id],
    ).to_pylist()
    try:
        for sub in subs:
            one = {
                **params,
                "submission_id": int(sub["submission_id"]),
                "family": sub["family"],
                "df": sub["df"],
                "has_sigma": True,  # a round's density families all carry a sigma
                **rule_params(RuleSet(sub["rules"])),
            }
            terms, one = cell_terms(
                wh, sub, one, "round_forecast_cells", step="rounds/040_cell_scores"
            )
            # the absolute track: a quantile grid's median residual, else the residual
            r_abs = "r_abs" if sub["family"] == "quantile" else "r"
            wh.run_step(
                "rounds/041_cell_scores_insert",
                one,
                identifiers={"terms": terms, "r_abs": r_abs},
            )
    finally:
        drop_cell_terms(wh)
        wh.execute("DROP VIEW IF EXISTS round_forecast_cells")
        wh.execute("DROP TABLE IF EXISTS round_cells")


def _metric_rows(wh: Warehouse, round_id: int, submission_ids: Sequence[int]) -> list[dict]:
    """sql/rounds/050 over the common sample of `submission_ids` (one round's)."""
    wh.execute("CREATE OR REPLACE TEMP TABLE round_subs (submission_id INTEGER)")
    try:
        wh.execute("INSERT INTO round_subs SELECT unnest(?::INTEGER[])", [list(submission_ids)])
        return wh.query_step("rounds/050_metrics", {"round_id": round_id}).to_pylist()
    finally:
        wh.execute("DROP TABLE IF EXISTS round_subs")


def _store_metrics(wh: Warehouse, round_id: int, resolution_id: int) -> None:
    """rounds.metrics of a round: all its entries' common sample, replaced."""
    subs = [
        r[0]
        for r in wh.fetchall(
            "SELECT submission_id FROM rounds.submissions WHERE round_id = ?", [round_id]
        )
    ]
    wh.execute("DELETE FROM rounds.metrics WHERE round_id = ?", [round_id])
    if not subs:
        return
    rows = _metric_rows(wh, round_id, subs)
    cols = ("submission_id", "horizon", *METRICS)
    table = pa.table({c: [r[c] for r in rows] for c in cols})
    table = table.append_column("round_id", pa.array([round_id] * len(rows), pa.int32()))
    table = table.append_column("resolution_id", pa.array([resolution_id] * len(rows), pa.int32()))
    wh.write_arrow("rounds.metrics", table)


def leaderboard(
    wh: Warehouse, round_name: str, models: Sequence[str] | None = None
) -> dict[str, Any]:
    """A round's metrics over the common sample of its submissions (or of `models`):
    {"round", "models": [{name, kind, family, global metrics, by_horizon: [...]}],
    "resolved_by_horizon", "n_common"}, best R2 first."""
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
    if subs and rnd["cells_resolved"]:
        rows = _metric_rows(wh, rnd["round_id"], [s[0] for s in subs])
    out = []
    for sid, name, kind, family in subs:
        mine = [r for r in rows if r["submission_id"] == sid]
        overall = next((r for r in mine if r["horizon"] is None), None)
        entry: dict[str, Any] = {
            "submission_id": sid,
            "name": name,
            "kind": kind,
            "family": family,
        }
        entry.update({m: (overall or {}).get(m) for m in METRICS})
        entry["n"] = int(entry["n"] or 0)
        entry["by_horizon"] = [
            {"horizon": r["horizon"], **{m: r[m] for m in METRICS}}
            for r in mine
            if r["horizon"] is not None
        ]
        out.append(entry)
    out.sort(
        key=lambda e: -(e["r2"] if e["r2"] is not None and not math.isnan(e["r2"]) else -1e300)
    )
    return {
        "round": rnd,
        "models": out,
        "n_common": out[0]["n"] if out else 0,
    }


def live_leaderboard(wh: Warehouse) -> list[dict[str, Any]]:
    """Models ranked across rounds by MSE: every metric of each model's resolved cells in
    every round it entered, pooled (sql/rounds/055, from the metric definitions: R2 over
    the pooled cells with the truth-only denominator of those cells, the MAE from the
    median of a quantile grid), the rounds entered, and a Diebold-Mariano test
    of squared loss against the leader over the rounds both entered (one mean loss
    differential per round, on the cells both scored; bandwidth 0, needs two rounds)."""
    if not wh.table_exists("rounds.rounds"):
        return []
    out = [
        {**row, "rounds": int(row["rounds"]), "n": int(row["n"])}
        for row in wh.query_step("rounds/055_live_metrics").to_pylist()
    ]
    out.sort(key=lambda e: e["mse"])
    if out:
        from proforma.app.scoring import diebold_mariano

        leader = out[0]["name"]
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
