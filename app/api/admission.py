"""The one door every forecast file comes in by (an upload to the static benchmark, a
file for a round): the user's daily limit checked before the body streams, the body
streamed to disk under the size cap, the parquet footer and the column names checked,
the file renamed to its final place and a `service.jobs` row inserted, atomically with
the limit's count. The job worker then checks, stores and (for the benchmark) scores
it. A door differs only in the form it reads and the job it describes (issue 47).

A request may name its upload with an `Idempotency-Key` header (issue 52): a repeat of a
key the user has used (a client retrying after a dropped connection that never saw the
answer) is answered with the first request's job; it records no second job, counts
nothing against the limit (the early limit check lets it through, as the insert's
check does) and leaves no second file."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import re
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
from proforma.app.api.job_store import (
    NewJob,
    check_repeat,
    get_job,
    job_for_key,
    recorded_job,
)
from proforma.app.api.upload_form import check_parquet
from proforma.app.api.uploads import ReceivedUpload, receive_upload
from proforma.app.read.errors import ApiError, Conflict, RateLimited
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse


@dataclass(frozen=True)
class Admitted:
    job_id: int
    job: NewJob
    received: ReceivedUpload
    #: check_parquet's figures: rows, warnings about column names
    info: dict[str, Any]
    #: the job of an earlier request with the same idempotency key (nothing new queued)
    repeated: bool = False


#: What an idempotency key may be: a client's token (a UUID, a checksum), not free text.
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{7,199}")


def idempotency_key(request: Request) -> str | None:
    """The request's Idempotency-Key header, checked; None without one."""
    key = request.headers.get("idempotency-key")
    if key is None:
        return None
    if not _KEY.fullmatch(key):
        raise ApiError(
            "The Idempotency-Key header must be 8-200 letters, digits or . _ : - "
            "(a UUID, for example)."
        )
    return key


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
    disk when anything is refused, nor when the request repeats an idempotency key."""
    limit = auth.daily_limit(user, settings.uploads_per_day)
    key = idempotency_key(request)
    earlier = await _keyed_job(wh, user, key)
    # Checked before the body streams (no upload past the limit costs a transfer) and
    # again, atomically with the insert of the job, once it has (concurrent uploads). A
    # repeat of a key is no new upload and is answered whatever the count.
    if earlier is None and await run_in_threadpool(auth.uploads_today, wh, user) >= limit:
        # the place may have gone to this key's first request a moment ago
        earlier = await _keyed_job(wh, user, key)
        if earlier is None:
            raise _used_up(user, limit)
    received = await receive_upload(request, Path(settings.upload_dir), settings.upload_max_bytes)
    try:
        # the first request of the key may have finished while this one streamed
        earlier = earlier or await _keyed_job(wh, user, key)
        if earlier is not None:
            return await _repeated(received, earlier, key)
        try:
            job = await run_in_threadpool(describe, received)
        except Conflict:
            # a repeat racing its first request, whose job now holds the model's name
            earlier = await _keyed_job(wh, user, key)
            if earlier is None:
                raise
            return await _repeated(received, earlier, key)
        info = await run_in_threadpool(check_parquet, received.path)
        final = received.path.with_name(
            f"upload-{received.sha256[:16]}-{secrets.token_hex(4)}.parquet"
        )
        received.path.rename(final)
        received.path = final
        job = dataclasses.replace(job, upload_path=final, idempotency_key=key)
        queued = await run_in_threadpool(functools.partial(jobs.submit, daily_limit=limit), wh, job)
        if queued is None:
            raise _used_up(user, limit)
        if queued.repeated:  # the two requests met at the insert: the first one's job
            received.path.unlink(missing_ok=True)
    except BaseException:
        received.path.unlink(missing_ok=True)
        raise
    return Admitted(queued.job_id, job, received, info, repeated=queued.repeated)


async def _keyed_job(wh: Warehouse, user: User, key: str | None) -> dict[str, Any] | None:
    if key is None:
        return None
    return await run_in_threadpool(job_for_key, wh, user.user_id, key)


async def _repeated(received: ReceivedUpload, earlier: dict[str, Any], key: str | None) -> Admitted:
    """The answer to a request that repeats `earlier`'s key: its job, the file just
    received checked against the job's and removed."""
    assert key is not None
    try:
        check_repeat(earlier, received.sha256, key)
        info = await run_in_threadpool(check_parquet, received.path)
    finally:
        received.path.unlink(missing_ok=True)
    return Admitted(int(earlier["job_id"]), recorded_job(earlier), received, info, repeated=True)


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
