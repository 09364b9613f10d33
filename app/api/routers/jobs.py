"""Upload jobs: status (queued, validating, scoring, done, failed) and validation report."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from proforma.app.api.deps import CurrentUser, WarehouseDep
from proforma.app.api.job_store import get_job, job_for_key, list_jobs
from proforma.app.api.responses import Job
from proforma.app.read.errors import Forbidden, NotFound
from proforma.app.read.formats import clean

router = APIRouter(prefix="/jobs", tags=["jobs"])

_PUBLIC = (
    "job_id",
    "model_name",
    "family",
    "df",
    "status",
    "message",
    "report",
    "submission_id",
    "score_runs",
    "attempts",
    "upload_bytes",
    "upload_sha256",
    "created_at",
    "started_at",
    "finished_at",
    "round_name",
    "idempotency_key",
)


def _view(job: dict[str, Any]) -> dict[str, Any]:
    out = {k: job[k] for k in _PUBLIC}
    out["metadata"] = job["metadata"]
    if job["submission_id"] is not None:
        out["submission_url"] = f"/api/v1/submissions/{job['submission_id']}"
    return clean(out)


@router.get(
    "",
    summary="The caller's jobs, newest first (admins: everyone's)",
    response_model=list[Job],
    response_model_exclude_unset=True,
)
def my_jobs(
    user: CurrentUser,
    wh: WarehouseDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    idempotency_key: Annotated[
        str | None,
        Query(description="Only the caller's job of this key (a client checking a retry)"),
    ] = None,
) -> list[dict[str, Any]]:
    if idempotency_key is not None:
        keyed = job_for_key(wh, user.user_id, idempotency_key)
        return [_view(keyed)] if keyed is not None else []
    jobs = list_jobs(wh, user_id=None if user.is_admin else user.user_id, limit=limit)
    return [_view(j) for j in jobs]


@router.get(
    "/{job_id}",
    summary="One job's status and validation report (owner or admin)",
    response_model=Job,
    response_model_exclude_unset=True,
)
def job_status(job_id: int, user: CurrentUser, wh: WarehouseDep) -> dict[str, Any]:
    job = get_job(wh, job_id)
    if job is None:
        raise NotFound(f"No job {job_id}.")
    if job["user_id"] != user.user_id and not user.is_admin:
        raise Forbidden(f"Job {job_id} belongs to another user.")
    return _view(job)
