"""Submissions: upload a parquet forecast file (token), list submissions, one submission's
scores by footprint, horizon and item."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from proforma.app.api.admission import admit, upload_metadata
from proforma.app.api.deps import CurrentUser, JobsDep, SettingsDep, WarehouseDep
from proforma.app.api.job_store import NewJob, get_job
from proforma.app.api.responses import SubmissionDetail, SubmissionTable
from proforma.app.api.upload_form import UPLOAD_SCHEMA, parse_meta
from proforma.app.api.uploads import ReceivedUpload
from proforma.app.read import queries
from proforma.app.read.card_filters import filter_records
from proforma.app.read.errors import Conflict, NotFound
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

    def describe(received: ReceivedUpload) -> NewJob:
        meta = parse_meta(received.fields)
        check_name_free(wh, meta.name)
        metadata = {
            **meta.model_dump(exclude={"name", "family", "df"}),
            **upload_metadata(user, received),
        }
        return NewJob(
            user.user_id,
            meta.name,
            meta.family,
            meta.df,
            metadata,
            received.path,
            received.size,
            received.sha256,
        )

    admitted = await admit(request, user, wh, jobs, settings, describe)
    # a repeated key's job may have moved on since its first request
    found = await run_in_threadpool(get_job, wh, admitted.job_id) if admitted.repeated else None
    status = (found or {}).get("status")
    return {
        "job_id": admitted.job_id,
        "status": status or "queued",
        "status_url": f"/api/v1/jobs/{admitted.job_id}",
        "name": admitted.job.model_name,
        "bytes": admitted.received.size,
        "rows": admitted.info["rows"],
        "sha256": admitted.received.sha256,
        "warnings": admitted.info["warnings"],
        # an earlier request with the same Idempotency-Key made the job (a client's retry)
        "repeated": admitted.repeated,
    }


@router.get(
    "",
    summary="All submissions (public records); JSON or CSV",
    responses={200: {**TABLE_RESPONSE, "model": SubmissionTable}},
)
def list_submissions(
    wh: WarehouseDep,
    format: FormatQuery = Format.json,
    model_family: Annotated[str | None, Query(description="Model family (the card)")] = None,
    uploaded_by: Annotated[str | None, Query(description="Uploader")] = None,
    source: Annotated[str | None, Query(description="upload, or an in-house kind")] = None,
    max_parameters: Annotated[
        int | None, Query(ge=0, description="Declared parameters at most")
    ] = None,
    has_code: Annotated[bool | None, Query(description="With (or without) a code link")] = None,
) -> Response:
    table = filter_records(
        queries.submission_table(wh),
        model_family=model_family,
        uploaded_by=uploaded_by,
        source=source,
        max_parameters=max_parameters,
        has_code=has_code,
    )
    return table_response(table, format, "submissions")


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
