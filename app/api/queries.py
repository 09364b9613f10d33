"""The service's reads of the warehouse: every SQL statement a route or page runs lives
here (or in the sql/ file it names), so routers only check access, call these and shape
the response."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from app.scoring.leaderboard import HAS_DENSITY
from app.sqlfiles import query_text
from app.warehouse import Warehouse
from contracts.tracks import TRACKS

# -- health ---------------------------------------------------------------------------------


def schema_version(wh: Warehouse) -> int | None:
    """The newest applied migration."""
    return wh.scalar("SELECT max(version) FROM schema_migrations")


# -- footprints ------------------------------------------------------------------------------

_FOOTPRINTS = """
SELECT footprint_id, name, version, kind, predicate, split, description, n_cells, build_id, created_at
FROM eval.footprints
"""


def footprint_table(wh: Warehouse) -> pa.Table:
    """Every footprint version, by name and version."""
    return wh.arrow(_FOOTPRINTS + " ORDER BY name, version")


def footprint_versions(wh: Warehouse, name: str) -> list[dict[str, Any]]:
    """A footprint's versions with their origin and cell membership counts."""
    versions = wh.arrow(_FOOTPRINTS + " WHERE name = ? ORDER BY version", [name]).to_pylist()
    for v in versions:
        v["origins"] = wh.scalar(
            "SELECT count(*) FROM eval.footprint_origins WHERE footprint_id = ?",
            [v["footprint_id"]],
        )
        v["cells"] = wh.scalar(
            "SELECT count(*) FROM eval.footprint_cells WHERE footprint_id = ?", [v["footprint_id"]]
        )
    return versions


def footprint_record(wh: Warehouse, footprint_id: int) -> dict[str, Any]:
    return wh.arrow(_FOOTPRINTS + " WHERE footprint_id = ?", [footprint_id]).to_pylist()[0]


def footprint_names(wh: Warehouse) -> list[str]:
    """Footprints that exist, `full` first, then by name."""
    if not wh.table_exists("eval.footprints"):
        return []
    return [
        r[0]
        for r in wh.fetchall(
            "SELECT name FROM eval.footprints GROUP BY name ORDER BY name = 'full' DESC, name"
        )
    ]


# -- leaderboards ----------------------------------------------------------------------------

#: The tracks of the paper's results table as the index and the pages list them.
TRACK_INFO: list[dict[str, str]] = [
    {"name": t.name, "label": t.label, "metric": t.metric} for t in TRACKS.values()
]


def latest_run(wh: Warehouse, footprint: str) -> dict[str, Any] | None:
    """The newest score run of a footprint with its provenance (build and eval versions)."""
    table = wh.arrow(
        """
        SELECT score_run_id, footprint_name, footprint_version, submission_ids, footprint_cells,
               n_cells, build_id, json_extract_string(build, '$.sql_checksum') AS build_sql_version,
               eval_sql_version, started_at, finished_at, elapsed_s
        FROM eval.score_runs WHERE footprint_name = ?
        ORDER BY score_run_id DESC LIMIT 1
        """,
        [footprint],
    )
    return table.to_pylist()[0] if table.num_rows else None


def leaderboard_table(
    wh: Warehouse, footprint: str, track: str, by: str, against: str | None = None
) -> pa.Table:
    """app.scoring's leaderboard, `by` = global for the overall ranking."""
    from app import scoring

    return scoring.leaderboard(
        wh, footprint, track, None if by == "global" else by, against=against or None
    )


def horizon_series(wh: Warehouse, score_run_id: int, metric: str) -> list[tuple[Any, ...]]:
    """(submission_id, name, horizon, value) of a run's metric by horizon (the page's chart)."""
    return wh.fetchall(
        f"""
        SELECT m.submission_id, s.name, m.horizon, m.{metric}
        FROM eval.metrics m JOIN eval.submissions s USING (submission_id)
        WHERE m.score_run_id = ? AND m.level = 'horizon'
        ORDER BY s.name, m.horizon
        """,
        [score_run_id],
    )


def density_coverage(wh: Warehouse, score_run_id: int) -> list[tuple[Any, ...]]:
    """(submission_id, name, cov50, cov80, cov90, cov95) of a run's density forecasts."""
    return wh.fetchall(
        f"""
        SELECT m.submission_id, s.name, m.cov50, m.cov80, m.cov90, m.cov95
        FROM eval.metrics m JOIN eval.submissions s USING (submission_id)
        WHERE m.score_run_id = ? AND m.level = 'global' AND {HAS_DENSITY}
        ORDER BY s.name
        """,
        [score_run_id],
    )


def pit_histograms(wh: Warehouse, score_run_id: int) -> list[tuple[Any, ...]]:
    """(submission_id, name, bin shares) of a run's density forecasts."""
    return wh.fetchall(
        f"""
        SELECT p.submission_id, s.name, list(p.share ORDER BY p.bin)
        FROM eval.pit p JOIN eval.submissions s USING (submission_id)
        WHERE p.score_run_id = ? AND {HAS_DENSITY} GROUP BY ALL ORDER BY s.name
        """,
        [score_run_id],
    )


# -- submissions -----------------------------------------------------------------------------


def submission_table(wh: Warehouse) -> pa.Table:
    """Every submission's record (sql/service/submission_records.sql), by id."""
    return wh.arrow(
        f"SELECT * FROM ({query_text('service/submission_records')}) AS s ORDER BY s.submission_id"
    )


def submission_record(wh: Warehouse, submission_id: int) -> dict[str, Any] | None:
    """The public record, with `stale`: why new score runs leave the submission out when
    it was made against an earlier panel (None when it is current)."""
    from app.scoring.submissions.registry import stale_submissions

    table = wh.arrow(
        f"SELECT * FROM ({query_text('service/submission_records')}) AS s "
        "WHERE s.submission_id = ?",
        [submission_id],
    )
    if not table.num_rows:
        return None
    record = table.to_pylist()[0]
    record["stale"] = stale_submissions(wh, [submission_id]).get(submission_id)
    return record


def submission_scores(wh: Warehouse, submission_id: int) -> list[dict[str, Any]]:
    """Per footprint, the latest score run that includes the submission: its metrics by
    level (global, horizon, item, statement), its coverage and its PIT histogram."""
    runs = wh.fetchall(
        """
        SELECT footprint_name, max(score_run_id)
        FROM eval.score_runs WHERE list_contains(submission_ids, ?)
        GROUP BY footprint_name ORDER BY footprint_name
        """,
        [submission_id],
    )
    out = []
    for footprint, run in runs:
        metrics = wh.arrow(
            """
            SELECT m.level, m.horizon, i.item, coalesce(m.statement, i.statement) AS statement,
                   m.n, m.r2, m.mse, m.mae, m.nll, m.crps, m.z2, m.cov50, m.cov80, m.cov90, m.cov95
            FROM eval.metrics m LEFT JOIN ref.items i USING (item_id)
            WHERE m.score_run_id = ? AND m.submission_id = ? AND m.level IN ('global', 'horizon', 'item', 'statement')
            ORDER BY m.level, m.horizon, m.item_id, m.statement
            """,
            [run, submission_id],
        ).to_pylist()
        coverage = wh.fetchone(
            "SELECT footprint_cells, predicted_cells, coverage FROM eval.coverage "
            "WHERE score_run_id = ? AND submission_id = ?",
            [run, submission_id],
        )
        pit = [
            r[0]
            for r in wh.fetchall(
                "SELECT share FROM eval.pit WHERE score_run_id = ? AND submission_id = ? ORDER BY bin",
                [run, submission_id],
            )
        ]
        by_level: dict[str, list[dict[str, Any]]] = {}
        for m in metrics:
            by_level.setdefault(m.pop("level"), []).append(m)
        out.append(
            {
                "footprint": footprint,
                "score_run_id": run,
                "coverage": dict(
                    zip(("footprint_cells", "predicted_cells", "coverage"), coverage, strict=True)
                )
                if coverage
                else None,
                "global": by_level["global"][0] if by_level.get("global") else None,
                "by_horizon": by_level.get("horizon", []),
                "by_item": by_level.get("item", []),
                "by_statement": by_level.get("statement", []),
                "pit": pit,
            }
        )
    return out


def submission_names(wh: Warehouse, submission_ids: list[int]) -> list[str]:
    """The names of these submissions, sorted."""
    return [
        n
        for (n,) in wh.fetchall(
            "SELECT name FROM eval.submissions WHERE list_contains(?, submission_id) ORDER BY name",
            [submission_ids],
        )
    ]


def name_in_use(wh: Warehouse, name: str) -> str | None:
    """Why a model name cannot be taken by a new upload (a current submission or an
    unfinished job already has it), or None."""
    taken = wh.fetchone(
        "SELECT submission_id FROM eval.submissions WHERE name = ? AND retired_at IS NULL", [name]
    )
    if taken:
        return f"A submission named {name!r} exists already (id {taken[0]}); choose another name."
    pending = wh.fetchone(
        "SELECT job_id FROM service.jobs WHERE model_name = ? AND status IN ('queued', 'validating', 'scoring')",
        [name],
    )
    if pending:
        return f"Job {pending[0]} is already processing a submission named {name!r}."
    return None
