"""The one door every forecast file comes in by (an upload to the static benchmark, a
file for a round): the user's daily limit checked before the body streams, the body
streamed to disk under the size cap, the parquet footer and the column names checked,
the file renamed to its final place and a `service.jobs` row inserted, atomically with
the limit's count. The job worker then checks, stores and (for the benchmark) scores
it. A door differs only in the form it reads and the job it describes (issue 47)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.concurrency import run_in_threadpool
from starlette.requests import Request

from proforma.app.api import auth
from proforma.app.api.auth import User
from proforma.app.api.job_queue import JobQueue
from proforma.app.api.job_store import NewJob, get_job
from proforma.app.api.upload_form import check_parquet
from proforma.app.api.uploads import ReceivedUpload, receive_upload
from proforma.app.read.errors import RateLimited
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse


@dataclass(frozen=True)
class Admitted:
    job_id: int
    job: NewJob
    received: ReceivedUpload
    #: check_parquet's figures: rows, warnings about column names
    info: dict[str, Any]


def upload_metadata(user: User, received: ReceivedUpload) -> dict[str, Any]:
    """What every door records of who sent which file."""
    return {"uploaded_by": user.name, "filename": received.filename, "sha256": received.sha256}


def _used_up(user: User, limit: int) -> RateLimited:
    return RateLimited(
        f"User {user.name!r} has used today's {limit} upload(s) (files for rounds count "
        f"too); the limit resets at 00:00 UTC."
    )


async def admit(
    request: Request,
    user: User,
    wh: Warehouse,
    jobs: JobQueue,
    settings: Settings,
    describe: Callable[[ReceivedUpload], NewJob],
) -> Admitted:
    """Receive the request's file and queue its job; `describe` reads the door's form
    fields (raising a 4xx for a bad one) and says what the job is. Nothing is left on
    disk when anything is refused."""
    limit = auth.daily_limit(user, settings.uploads_per_day)
    # Checked before the body streams (no upload past the limit costs a transfer) and
    # again, atomically with the insert of the job, once it has (concurrent uploads).
    if await run_in_threadpool(auth.uploads_today, wh, user) >= limit:
        raise _used_up(user, limit)
    received = await receive_upload(request, Path(settings.upload_dir), settings.upload_max_bytes)
    try:
        job = await run_in_threadpool(describe, received)
        info = await run_in_threadpool(check_parquet, received.path)
        final = received.path.with_name(
            f"upload-{received.sha256[:16]}-{secrets.token_hex(4)}.parquet"
        )
        received.path.rename(final)
        received.path = final
        job = dataclasses.replace(job, upload_path=final)
        job_id = await run_in_threadpool(functools.partial(jobs.submit, daily_limit=limit), wh, job)
        if job_id is None:
            raise _used_up(user, limit)
    except BaseException:
        received.path.unlink(missing_ok=True)
        raise
    return Admitted(job_id, job, received, info)


async def finished_job(wh: Warehouse, job_id: int, timeout_s: float) -> dict[str, Any] | None:
    """The job once it is done or failed, or None when it is still running after
    `timeout_s` (a long scoring pass ahead of it in the queue)."""
    deadline = time.monotonic() + timeout_s
    while True:
        job = await run_in_threadpool(get_job, wh, job_id)
        if job is not None and job["status"] in ("done", "failed"):
            return job
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(0.05)
