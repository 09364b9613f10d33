"""The upload jobs' store: `service.jobs` rows (status queued, validating, scoring, done,
failed; the validation report; the submission and score runs). The worker that moves
jobs through these states is proforma.app.api.job_queue; routes read jobs from here."""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proforma.app.read.disclosure import grant
from proforma.app.read.errors import Conflict
from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.provenance import utcnow

UNFINISHED = ("queued", "validating", "scoring")
#: A round job whose form named no family: the file's columns settle it (sigma or none,
#: a quantile_level column). service.jobs.family is NOT NULL.
FAMILY_FROM_FILE = "from-file"

JOB_COLUMNS = (
    "job_id",
    "user_id",
    "model_name",
    "family",
    "df",
    "metadata",
    "upload_path",
    "upload_bytes",
    "upload_sha256",
    "status",
    "message",
    "report",
    "submission_id",
    "score_runs",
    "attempts",
    "created_at",
    "started_at",
    "finished_at",
    "round_name",
    "idempotency_key",
)


@dataclass(frozen=True)
class NewJob:
    user_id: int
    model_name: str
    family: str
    df: float | None
    metadata: dict[str, Any]
    upload_path: Path
    upload_bytes: int
    upload_sha256: str
    #: the round the file enters; None: the static benchmark
    round_name: str | None = None
    #: the client's name for this upload (the Idempotency-Key header): a repeat of it by
    #: the same user is answered with this job
    idempotency_key: str | None = None


@dataclass(frozen=True)
class Queued:
    job_id: int
    #: True when an earlier request with the same idempotency key made the job: nothing
    #: new was recorded or counted
    repeated: bool = False


def _decode(row: tuple[Any, ...]) -> dict[str, Any]:
    job = dict(zip(JOB_COLUMNS, row, strict=True))
    for key in ("metadata", "report", "score_runs"):
        if isinstance(job[key], str):
            job[key] = json.loads(job[key])
    return job


def get_job(wh: Warehouse, job_id: int) -> dict[str, Any] | None:
    row = wh.fetchone(
        f"SELECT {', '.join(JOB_COLUMNS)} FROM service.jobs WHERE job_id = ?", [job_id]
    )
    return _decode(row) if row else None


def list_jobs(
    wh: Warehouse, *, user_id: int | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    where = "WHERE user_id = ?" if user_id is not None else ""
    params: list[Any] = [user_id] if user_id is not None else []
    rows = wh.fetchall(
        f"SELECT {', '.join(JOB_COLUMNS)} FROM service.jobs {where} ORDER BY job_id DESC LIMIT {int(limit)}",
        params,
    )
    return [_decode(r) for r in rows]


#: Counting a user's jobs of the day and inserting the next one happen under this lock:
#: the server is the warehouse's one writer (docs/architecture.md), so no other process
#: inserts jobs, and two uploads of one user that finish streaming at the same moment
#: cannot both see the last free place (DuckDB's optimistic transactions would let two
#: inserts of different rows both commit).
_ADMIT = threading.Lock()


def uploads_since(wh: Warehouse, user_id: int, start: Any) -> int:
    """Jobs (uploads) of a user created at or after `start`."""
    return int(
        wh.scalar(
            "SELECT count(*) FROM service.jobs WHERE user_id = ? AND created_at >= ?",
            [user_id, start],
        )
    )


def job_for_key(wh: Warehouse, user_id: int, key: str) -> dict[str, Any] | None:
    """The job `user_id` made with idempotency key `key`, if any."""
    row = wh.fetchone(
        f"SELECT {', '.join(JOB_COLUMNS)} FROM service.jobs "
        "WHERE user_id = ? AND idempotency_key = ? ORDER BY job_id LIMIT 1",
        [user_id, key],
    )
    return _decode(row) if row else None


def check_repeat(earlier: dict[str, Any], sha256: str, key: str) -> None:
    """A request repeating key `key` must send the file the key's job received; a key
    reused for another file is refused (409), never taken as that job."""
    if earlier["upload_sha256"] != sha256:
        raise Conflict(
            f"The idempotency key {key!r} names job {earlier['job_id']}, an upload of another "
            f"file (model {earlier['model_name']!r}); use a new key for a new upload."
        )


def recorded_job(record: dict[str, Any]) -> NewJob:
    """The NewJob a `service.jobs` row was inserted from (a repeated request's answer)."""
    return NewJob(
        record["user_id"],
        record["model_name"],
        record["family"],
        record["df"],
        record["metadata"],
        Path(record["upload_path"]),
        record["upload_bytes"],
        record["upload_sha256"],
        record["round_name"],
        record["idempotency_key"],
    )


def insert_job(wh: Warehouse, job: NewJob, *, daily_limit: int | None = None) -> Queued | None:
    """Record a queued job (committed when this returns); None when `daily_limit` is
    given and the user has already made that many jobs today (UTC): the count and the
    insert are one atomic step. A job whose idempotency key the user has used already is
    not recorded again: the earlier job comes back (`repeated`), whatever the limit."""
    with _ADMIT:
        if job.idempotency_key is not None:
            earlier = job_for_key(wh, job.user_id, job.idempotency_key)
            if earlier is not None:
                check_repeat(earlier, job.upload_sha256, job.idempotency_key)
                return Queued(int(earlier["job_id"]), repeated=True)
        now = utcnow()
        if daily_limit is not None:
            start = now.replace(hour=0, minute=0, second=0, microsecond=0)
            if uploads_since(wh, job.user_id, start) >= daily_limit:
                return None
        job_id = wh.scalar(
            """
            INSERT INTO service.jobs (user_id, model_name, family, df, metadata, upload_path,
                upload_bytes, upload_sha256, status, created_at, round_name, idempotency_key)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)
            RETURNING job_id
            """,
            [
                job.user_id,
                job.model_name,
                job.family,
                job.df,
                json.dumps(job.metadata),
                str(job.upload_path),
                job.upload_bytes,
                job.upload_sha256,
                now,
                job.round_name,
                job.idempotency_key,
            ],
        )
        # the noise its public numbers will carry, from the user's uploads of the week
        # (both doors); fixed now, never drawn again
        grant(wh, int(job_id), job.user_id, now, daily_limit or get_settings().uploads_per_day)
    return Queued(int(job_id))


def unfinished_jobs(wh: Warehouse) -> list[tuple[Any, ...]]:
    """(job_id, status, attempts, upload_path) of jobs a stopped server left unfinished,
    oldest first."""
    return wh.fetchall(
        "SELECT job_id, status, attempts, upload_path FROM service.jobs "
        "WHERE status IN ('queued', 'validating', 'scoring') ORDER BY job_id"
    )


def set_job(wh: Warehouse, job_id: int, **values: Any) -> None:
    """Update columns of a job (the report and score runs as JSON)."""
    cols = ", ".join(f"{k} = ?" for k in values)
    params = [
        json.dumps(v) if k in ("report", "score_runs") and v is not None else v
        for k, v in values.items()
    ]
    wh.execute(f"UPDATE service.jobs SET {cols} WHERE job_id = ?", [*params, job_id])


def finish_job(wh: Warehouse, job_id: int, status: str, **values: Any) -> None:
    """Close a job (done or failed) and remove its uploaded file."""
    set_job(wh, job_id, status=status, finished_at=utcnow(), **values)
    job = get_job(wh, job_id)
    if job is not None:
        with contextlib.suppress(OSError):
            Path(job["upload_path"]).unlink(missing_ok=True)


def sweep_upload_dir(wh: Warehouse, folder: Path) -> list[Path]:
    """Remove what a stopped server left in the upload folder: files still streaming when
    it stopped (`*.partial`) and received files whose job was never recorded (a stop
    between the rename and the insert). Files of unfinished jobs stay: those jobs are
    taken up again. Runs at start, before any request; returns what it removed."""
    if not folder.is_dir():
        return []
    kept = {Path(row[3]).name for row in unfinished_jobs(wh)}
    removed = []
    for path in [*folder.glob("upload-*.partial"), *folder.glob("upload-*.parquet")]:
        if path.name in kept:
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed.append(path)
    return removed
