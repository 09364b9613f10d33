"""Submissions: upload a parquet forecast file (token), list submissions, one submission's
scores by footprint, horizon and item."""

from __future__ import annotations

import functools
import secrets
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from proforma.app.api import auth
from proforma.app.api.deps import CurrentUser, JobsDep, SettingsDep, WarehouseDep
from proforma.app.api.job_store import NewJob
from proforma.app.api.responses import SubmissionDetail, SubmissionTable
from proforma.app.api.upload_form import UPLOAD_SCHEMA, check_parquet, parse_meta
from proforma.app.api.uploads import receive_upload
from proforma.app.read import queries
from proforma.app.read.errors import Conflict, NotFound, RateLimited
from proforma.app.read.formats import TABLE_RESPONSE, Format, FormatQuery, clean, table_response
from proforma.app.store.warehouse import Warehouse

router = APIRouter(prefix="/submissions", tags=["submissions"])


def check_name_free(wh: Warehouse, name: str) -> None:
    """409 when a current submission or an unfinished job already uses the model name."""
    taken = queries.name_in_use(wh, name)
    if taken:
        raise Conflict(taken)


@router.post(
    "",
    status_code=202,
    summary="Upload a forecast parquet file (token); validation and scoring run in the background",
    openapi_extra=UPLOAD_SCHEMA,
)
async def upload(
    request: Request, user: CurrentUser, wh: WarehouseDep, jobs: JobsDep, settings: SettingsDep
) -> dict[str, Any]:
    """Streams the file to disk (size-capped), checks the form and the parquet footer,
    then queues the job. Follow `status_url` for validating -> scoring -> done/failed."""
    limit = auth.daily_limit(user, settings.uploads_per_day)
    used_up = RateLimited(
        f"User {user.name!r} has used today's {limit} upload(s); the limit resets at 00:00 UTC."
    )
    # Checked before the body streams (no upload past the limit costs a transfer) and
    # again, atomically with the insert of the job, once it has (concurrent uploads).
    if await run_in_threadpool(auth.uploads_today, wh, user) >= limit:
        raise used_up
    received = await receive_upload(request, Path(settings.upload_dir), settings.upload_max_bytes)
    try:
        meta = parse_meta(received.fields)
        await run_in_threadpool(check_name_free, wh, meta.name)
        info = await run_in_threadpool(check_parquet, received.path)
        final = received.path.with_name(
            f"upload-{received.sha256[:16]}-{secrets.token_hex(4)}.parquet"
        )
        received.path.rename(final)
        received.path = final
        metadata = {
            **meta.model_dump(exclude={"name", "family", "df"}),
            "uploaded_by": user.name,
            "filename": received.filename,
            "sha256": received.sha256,
        }
        job_id = await run_in_threadpool(
            functools.partial(jobs.submit, daily_limit=limit),
            wh,
            NewJob(
                user.user_id,
                meta.name,
                meta.family,
                meta.df,
                metadata,
                final,
                received.size,
                received.sha256,
            ),
        )
        if job_id is None:
            raise used_up
    except BaseException:
        received.path.unlink(missing_ok=True)
        raise
    return {
        "job_id": job_id,
        "status": "queued",
        "status_url": f"/api/v1/jobs/{job_id}",
        "name": meta.name,
        "bytes": received.size,
        "rows": info["rows"],
        "sha256": received.sha256,
        "warnings": info["warnings"],
    }


@router.get(
    "",
    summary="All submissions (public records); JSON or CSV",
    responses={200: {**TABLE_RESPONSE, "model": SubmissionTable}},
)
def list_submissions(wh: WarehouseDep, format: FormatQuery = Format.json) -> Response:
    return table_response(queries.submission_table(wh), format, "submissions")


@router.get(
    "/{submission_id}",
    summary="One submission: record and scores per footprint",
    response_model=SubmissionDetail,
    response_model_exclude_unset=True,
)
def get_submission(submission_id: int, wh: WarehouseDep) -> dict[str, Any]:
    record = queries.submission_record(wh, submission_id)
    if record is None:
        raise NotFound(f"No submission {submission_id}.")
    return clean({"submission": record, "scores": queries.submission_scores(wh, submission_id)})
