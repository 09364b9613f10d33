"""GET /api/v1/health: liveness plus versions (used by the compose healthcheck)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from proforma.app import __version__
from proforma.app.api.deps import JobsDep, SettingsDep, WarehouseDep
from proforma.app.api.job_queue import scoring_health
from proforma.app.api.responses import Health
from proforma.app.read import queries
from proforma.app.read.snapshot import snapshot_health

router = APIRouter(tags=["health"])


@router.get(
    "/health",
    summary="Service health, versions and queue depth",
    response_model=Health,
    response_model_exclude_unset=True,
)
def health(wh: WarehouseDep, jobs: JobsDep, settings: SettingsDep) -> dict[str, Any]:
    """`ok` when the warehouse answers, the last publication of the public snapshot
    succeeded and the worker's last scoring pass had no failure; `degraded` while
    publishing fails (`snapshot.last_failure` says why; pages and the SQL console serve
    the previous snapshot) or scoring fails (`scoring.last_failure`: the submissions left
    out, the footprints not scored) or the latest round resolution left entries unscored
    (`rounds.failed_entries`; the others resolved). Also the schema version and queue."""
    from proforma.app.rounds.resolve import resolution_health

    snapshot = snapshot_health(wh)
    scoring = scoring_health(wh)
    rounds = resolution_health(wh)
    failing = "failing" in (snapshot["status"], scoring["status"], rounds["status"])
    return {
        "status": "degraded" if failing else "ok",
        "version": __version__,
        "schema_version": queries.schema_version(wh),
        "jobs_pending": jobs.pending(),
        "snapshot": snapshot,
        "scoring": scoring,
        "rounds": rounds,
        "limits": {
            "upload_max_bytes": settings.upload_max_bytes,
            "uploads_per_day": settings.uploads_per_day,
            "query_max_rows": settings.query_max_rows,
            "query_timeout_s": settings.query_timeout_s,
        },
    }
