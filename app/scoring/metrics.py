"""Score runs: common sample, metrics, PIT, Diebold-Mariano, coverage, provenance.

All data semantics are the sql/eval steps 040-070; this module orders them, keeps a
run in one transaction, and records the run's provenance (build, scoring-SQL version,
submission checksums, time).
"""

from __future__ import annotations

import time
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
from duckdb.sqltypes import DOUBLE
from scipy import special

from app.errors import UserError
from app.scoring.footprints import (
    _drop_temp,
    ensure_standard_footprints,
    get_footprint,
    prepare_footprint,
)
from app.scoring.provenance import current_build, eval_sql_version, now, to_json
from app.scoring.significance import run_dm_tests
from app.warehouse import Warehouse


def _t_cdf(x: pa.Array, nu: pa.Array) -> pa.Array:
    """Student-t CDF for the SQL UDF eval_t_cdf (SQL has no incomplete beta function)."""
    xs = x.to_numpy(zero_copy_only=False).astype(float)
    ns = nu.to_numpy(zero_copy_only=False).astype(float)
    return pa.array(special.stdtr(ns, xs), mask=np.isnan(xs) | np.isnan(ns))


def register_functions(wh: Warehouse) -> None:
    """Register the scoring UDFs on this connection (idempotent)."""
    try:
        wh.con.create_function("eval_t_cdf", _t_cdf, [DOUBLE, DOUBLE], DOUBLE, type="arrow")
    except duckdb.Error as exc:
        if "already" not in str(exc).lower():
            raise


def prepare_run_subs(wh: Warehouse, submission_ids: list[int]) -> None:
    """Temp table run_subs: family, df, mixture size and sigma flag of each submission;
    run_mixture_subs: the mixtures among them that 060's mixture view scores."""
    wh.set_params({"submission_ids": [int(s) for s in submission_ids]})
    wh.execute(
        "CREATE OR REPLACE TEMP TABLE run_subs AS "
        "SELECT submission_id, family, df, n_components, has_sigma FROM eval.submissions "
        "WHERE list_contains(getvariable('submission_ids'), submission_id)")
    wh.execute("CREATE OR REPLACE TEMP TABLE run_mixture_subs AS "
               "SELECT submission_id FROM run_subs WHERE n_components > 1")


def aggregate_cells(wh: Warehouse) -> None:
    """Temp table run_agg (065) for the run's submissions: the single forecasts in one
    chunk, then each mixture on its own, so that only one mixture's per-cell tables are in
    memory at a time."""
    kinds = dict(wh.fetchall("SELECT n_components > 1, list(submission_id ORDER BY submission_id) "
                             "FROM run_subs GROUP BY ALL"))
    mixtures = kinds.get(True, [])
    # With no single forecast the single-forecast chunk is skipped, unless it is the only
    # one (an empty run still gets an empty run_agg).
    chunks = [("cell_scores_single", None)] if kinds.get(False) or not mixtures else []
    chunks += [("cell_scores_mixture", m) for m in mixtures]
    wh.execute("DROP TABLE IF EXISTS run_agg")
    for n, (view, mixture) in enumerate(chunks):
        if mixture is not None:
            wh.execute("CREATE OR REPLACE TEMP TABLE run_mixture_subs AS "
                       "SELECT ?::INTEGER AS submission_id", [mixture])
        wh.run_step("eval/065_cell_aggregates", identifiers={"cell_scores": view})
        wh.execute("CREATE TEMP TABLE run_agg AS FROM run_agg_chunk" if n == 0
                   else "INSERT INTO run_agg FROM run_agg_chunk")


def common_sample(wh: Warehouse, submission_ids: list[int]) -> None:
    """common_cells for 060 (and run_valid with several submissions); needs fp_truth, run_subs."""
    if len(submission_ids) == 1:
        wh.run_step("eval/051_common_sample_single")
    else:
        wh.run_step("eval/050_common_sample")
        wh.run_step("eval/052_common_cells")


#: A submission enters a footprint's default run (no explicit list) only when it
#: predicts at least this share of the footprint's cells. Models that restrict coverage
#: (chained GBM's 25 items, the oracle's origin sample, a partial upload) are scored on
#: the footprints they cover instead of shrinking everyone's common sample
#: (the paper's "one footprint per group" protocol).
MIN_COVERAGE = 0.95


def entering_submissions(wh: Warehouse, ids: list[int], n_fp: int,
                         min_coverage: float) -> list[int]:
    """The candidates (run_valid computed for all of them) that cover enough of the footprint."""
    counts = dict(wh.fetchall("SELECT submission_id, count(*) FROM run_valid GROUP BY 1"))
    return [s for s in ids if n_fp and counts.get(s, 0) >= min_coverage * n_fp]


#: A submission's firm ids and standardized values belong to the panel it was ingested
#: against. Builds with the same SQL, parameters, regularization statistics and raw
#: ingest make the same panel (the build is deterministic); any other build may number
#: firms differently and standardize differently, so its submissions are stale.
_PANEL_OF_SUBMISSIONS = """
WITH current_build AS (
    SELECT * FROM meta.builds WHERE status = 'succeeded' ORDER BY build_id DESC LIMIT 1
)
SELECT s.submission_id, s.name, s.build_id, b.raw_ingest_id,
       s.build_id IS NULL OR c.build_id IS NULL OR s.build_id = c.build_id
       OR (b.sql_checksum = c.sql_checksum AND CAST(b.parameters AS VARCHAR) = CAST(c.parameters AS VARCHAR)
           AND b.reg_stats = c.reg_stats
           AND b.reg_stats_checksum IS NOT DISTINCT FROM c.reg_stats_checksum
           AND b.raw_ingest_id IS NOT DISTINCT FROM c.raw_ingest_id) AS same_panel,
       c.build_id AS current_build_id, c.raw_ingest_id AS current_raw_ingest_id
FROM eval.submissions s
LEFT JOIN meta.builds b ON b.build_id = s.build_id
LEFT JOIN current_build c ON TRUE
"""


def stale_submissions(wh: Warehouse, ids: list[int] | None = None) -> dict[int, str]:
    """{submission_id: why} for submissions ingested against another panel than the current."""
    if not wh.table_exists("meta.builds"):
        return {}
    rows = wh.fetchall(f"SELECT * FROM ({_PANEL_OF_SUBMISSIONS}) WHERE NOT same_panel"
                       + (" AND list_contains(?, submission_id)" if ids is not None else ""),
                       [ids] if ids is not None else None)
    return {sid: (f"submission {name!r} was ingested against build {build} (raw ingest {raw}); the "
                  f"panel is now build {cur} (raw ingest {cur_raw}), whose firm ids and "
                  f"standardization may differ: submit it again")
            for sid, name, build, raw, _, cur, cur_raw in rows}


def active_submissions(wh: Warehouse) -> list[int]:
    """Current submissions (not retired, with rows, made against the current panel) in id order."""
    ids = [r[0] for r in wh.fetchall(
        "SELECT submission_id FROM eval.submissions WHERE retired_at IS NULL AND rows > 0 "
        "ORDER BY submission_id")]
    stale = stale_submissions(wh, ids)
    return [s for s in ids if s not in stale]


def resolve_submissions(wh: Warehouse, submissions: list[int | str] | None) -> list[int]:
    """Ids for a list of ids or names (None: every current submission)."""
    if submissions is None:
        ids = active_submissions(wh)
        if not ids:
            raise UserError("No submissions to score: submit a file or run a model first")
        return ids
    out = []
    for s in submissions:
        if isinstance(s, int) or (isinstance(s, str) and s.isdigit()):
            row = wh.fetchone("SELECT submission_id, retired_at FROM eval.submissions "
                              "WHERE submission_id = ?", [int(s)])
        else:
            row = wh.fetchone("SELECT submission_id, retired_at FROM eval.submissions "
                              "WHERE name = ? ORDER BY retired_at NULLS FIRST, submission_id DESC "
                              "LIMIT 1", [s])
        if row is None:
            raise UserError(f"No submission {s!r}")
        if row[1] is not None:
            raise UserError(f"Submission {s!r} was replaced; its forecasts are gone")
        out.append(int(row[0]))
    if len(set(out)) != len(out):
        raise UserError("A submission is listed twice")
    stale = stale_submissions(wh, out)
    if stale:
        raise UserError("; ".join(stale.values()))
    if not out:
        raise UserError("No submissions to score")
    return out


def score(
    wh: Warehouse,
    footprint: str = "full",
    submissions: list[int | str] | None = None,
    *,
    coherence: bool = True,
    baselines: bool = True,
    min_coverage: float = MIN_COVERAGE,
) -> int:
    """Score submissions (default: all current ones) on a footprint; returns score_run_id.

    The common sample is the footprint's finite truth cells that every submission
    predicts finitely. With no explicit list, only submissions covering at least
    `min_coverage` of the footprint enter the run; the others get a coverage row only. Results: eval.metrics, eval.quarter_losses, eval.pit,
    eval.dm_tests, eval.coverage, eval.score_runs (provenance); eval.coherence per
    submission when the panel's standardization tables exist.
    """
    for table in ("panel.truth", "panel.firms"):
        if not wh.table_exists(table):
            raise UserError("No panel in the warehouse: run `proforma build` first")
    if baselines and submissions is None:
        from app.scoring.baselines import run_reference_baselines

        run_reference_baselines(wh)
    ensure_standard_footprints(wh)
    fp = get_footprint(wh, footprint)
    ids = candidates = resolve_submissions(wh, submissions)
    register_functions(wh)
    started, t0 = now(), time.perf_counter()
    version = eval_sql_version()
    build = current_build(wh)
    with wh.transaction():
        run_id = int(wh.scalar("SELECT nextval('eval.score_run_id_seq')"))
        n_fp = prepare_footprint(wh, fp, recount=False)
        prepare_run_subs(wh, ids)
        if submissions is None and len(ids) > 1:
            # Coverage of every candidate first (050), then the common sample of those
            # that enter (052, once).
            wh.run_step("eval/050_common_sample")
            ids = entering_submissions(wh, candidates, n_fp, min_coverage)
            if not ids:
                raise UserError(
                    f"No submission covers {min_coverage:.0%} of footprint "
                    f"{fp['name']}@{fp['version']}; name the submissions to score explicitly")
            if ids != candidates:
                prepare_run_subs(wh, ids)
            wh.run_step("eval/052_common_cells")
        else:
            common_sample(wh, ids)
        wh.run_step("eval/060_cell_scores")
        aggregate_cells(wh)
        wh.run_step("eval/070_metrics", {"score_run_id": run_id})
        n = int(wh.scalar("SELECT coalesce(max(n), 0) FROM eval.metrics WHERE score_run_id = ? "
                          "AND level = 'global'", [run_id]))
        if len(candidates) == 1:
            coverage = {ids[0]: n}  # one submission: its sample is its coverage
        else:
            coverage = dict(wh.fetchall(
                "SELECT submission_id, count(*) FROM run_valid GROUP BY 1"))
        for sid in candidates:
            got = int(coverage.get(sid, 0))
            wh.execute("INSERT INTO eval.coverage VALUES (?, ?, ?, ?, ?)",
                       [run_id, sid, n_fp, got, got / n_fp if n_fp else None])
        if n == 0:
            names = dict(wh.fetchall("SELECT submission_id, name FROM eval.submissions"))
            detail = ", ".join(f"{names[s]}: {int(coverage.get(s, 0)):,}" for s in ids)
            raise UserError(
                f"The common sample is empty: footprint {fp['name']}@{fp['version']} has "
                f"{n_fp:,} scoreable cells; cells predicted per submission: {detail}")
        run_dm_tests(wh, run_id, ids)
        checksums = dict(wh.fetchall(
            "SELECT CAST(submission_id AS VARCHAR), checksum FROM eval.submissions "
            "WHERE list_contains(?, submission_id)", [ids]))
        wh.execute(
            "INSERT INTO eval.score_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [run_id, fp["footprint_id"], fp["name"], fp["version"], ids, n_fp, n,
             (build or {}).get("build_id"), to_json(build), version, to_json(checksums),
             started, now(), time.perf_counter() - t0])
    for view in ("run_agg_chunk", "cell_scores", "cell_scores_single", "cell_scores_mixture"):
        wh.execute(f"DROP VIEW IF EXISTS {view}")
    wh.execute("DROP TABLE IF EXISTS run_agg")
    wh.execute("DROP TABLE IF EXISTS run_mixture_subs")
    wh.execute("DROP TABLE IF EXISTS run_fine")
    _drop_temp(wh)
    if coherence:
        from app.scoring.coherence import ensure_coherence

        ensure_coherence(wh, ids)
    return run_id


def run_summary(wh: Warehouse, score_run_id: int) -> dict[str, Any]:
    """The score run's record with each submission's name and coverage."""
    rows = wh.arrow("SELECT * FROM eval.score_runs WHERE score_run_id = ?",
                    [score_run_id]).to_pylist()
    if not rows:
        raise UserError(f"No score run {score_run_id}")
    run = rows[0]
    run["coverage"] = wh.arrow(
        "SELECT c.submission_id, s.name, c.predicted_cells, c.footprint_cells, c.coverage "
        "FROM eval.coverage c JOIN eval.submissions s USING (submission_id) "
        "WHERE c.score_run_id = ? ORDER BY c.submission_id", [score_run_id]).to_pylist()
    return run
