"""GET /api/v1/health: every part's state, versions and queue (the compose healthcheck)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter

from proforma.app import __version__
from proforma.app.api.deps import JobsDep, SettingsDep, WarehouseDep
from proforma.app.api.job_queue import scoring_health
from proforma.app.api.responses import Health
from proforma.app.read import queries
from proforma.app.read.snapshot import snapshot_health
from proforma.contracts.provenance import utcnow

router = APIRouter(tags=["health"])


@router.get(
    "/health",
    summary="Service health, versions and queue depth",
    response_model=Health,
    response_model_exclude_unset=True,
)
def health(wh: WarehouseDep, jobs: JobsDep, settings: SettingsDep) -> dict[str, Any]:
    """`ok` when every part is, else `degraded` with `failing` listing each failing part:
    `warehouse` (it does not answer), `snapshot` (the last publication of the public
    snapshot failed: `snapshot.last_failure` says why; pages and the SQL console serve the
    previous one), `scoring` (the worker's last scoring pass left submissions out or a
    footprint unscored: `scoring.last_failure`), `rounds` (the latest round resolution
    failed as a whole, `rounds.last_failure`, or left entries unscored,
    `rounds.failed_entries`), `worker` (the job worker thread has stopped). A part that
    cannot even be read is failing too, its error in `errors`. Also the schema version,
    the queue and the limits."""
    from proforma.app.rounds.resolve import resolution_health

    parts: dict[str, Callable[[], dict[str, Any]]] = {
        "snapshot": lambda: snapshot_health(wh),
        "scoring": lambda: scoring_health(wh),
        "rounds": lambda: resolution_health(wh),
        "worker": lambda: _worker_health(wh, jobs),
    }
    out: dict[str, Any] = {"version": __version__, "jobs_pending": jobs.pending()}
    failing: list[str] = []
    errors: dict[str, str] = {}
    try:
        out["schema_version"] = queries.schema_version(wh)
    except Exception as exc:  # noqa: BLE001 - reported, the other parts still are
        out["schema_version"] = None
        failing.append("warehouse")
        errors["warehouse"] = _line(exc)
    for name, read in parts.items():
        try:
            out[name] = read()
        except Exception as exc:  # noqa: BLE001 - one broken part hides no other
            failing.append(name)
            errors[name] = _line(exc)
            continue
        if out[name].get("status") == "failing":
            failing.append(name)
    out["status"] = "degraded" if failing else "ok"
    out["failing"] = failing
    if errors:
        out["errors"] = errors
    out["limits"] = {
        "upload_max_bytes": settings.upload_max_bytes,
        "uploads_per_day": settings.uploads_per_day,
        "query_max_rows": settings.query_max_rows,
        "query_timeout_s": settings.query_timeout_s,
    }
    return out


def _line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:300]}"


def _worker_health(wh: Any, jobs: Any) -> dict[str, Any]:
    """The job worker: running, and how long the oldest unfinished job has waited."""
    oldest = wh.scalar(
        "SELECT min(created_at) FROM service.jobs "
        "WHERE status IN ('queued', 'validating', 'scoring')"
    )
    age = None if oldest is None else round((utcnow() - oldest).total_seconds(), 1)
    state = "ok" if jobs.alive() else ("failing" if jobs.started else "off")
    return {"status": state, "oldest_job_age_s": age}
