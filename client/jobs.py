"""Following an upload's job to its end (queued -> validating -> scoring -> done or
failed), telling each change and message as it comes; a failed job becomes the error of
its kind, with the server's reasons."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from proforma.client.errors import ClientError, Conflict, FileRefused, Forbidden
from proforma.client.http import Http

#: Polling waits grow from the first to the last (seconds): quick for a small file, calm
#: for a long scoring pass.
POLL_FIRST_S, POLL_LAST_S = 0.2, 2.0


def job_error(job: dict[str, Any]) -> ClientError:
    """The error a failed job stands for: a refused file with its problems, a late
    round file (403), a taken name (409), or the server's message."""
    report = job.get("report") or {}
    message = job.get("message") or f"job {job['job_id']} failed"
    status = int(report.get("status_code") or (422 if report.get("valid") is False else 500))
    if status == 403:
        return Forbidden(message, status=status, body=job)
    if status == 409:
        return Conflict(message, status=status, body=job)
    if status in (400, 422):
        return FileRefused(message, report.get("problems") or [], status=status, body=job)
    return ClientError(f"Job {job['job_id']} failed: {message}", status=status, body=job)


def follow(
    http: Http,
    job_id: int,
    on_event: Callable[[str], None] = lambda text: None,
    *,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """Poll the job until it is done (its record) or failed (raises job_error)."""
    wait = POLL_FIRST_S
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    seen: tuple[Any, ...] = ()
    told: set[str] = set()
    while True:
        job = http.get_json(f"/jobs/{job_id}", token=True)
        state = (job["status"], job.get("message"))
        if state != seen:
            on_event(f"job {job_id}: {job['status']}" + (f" ({state[1]})" if state[1] else ""))
            seen = state
        for warning in (job.get("report") or {}).get("warnings") or []:
            text = f"warning: {warning.get('problem')} ({warning.get('count', 0):,} rows)"
            if text not in told:
                told.add(text)
                on_event(text)
        if job["status"] == "done":
            return job
        if job["status"] == "failed":
            raise job_error(job)
        if deadline is not None and time.monotonic() > deadline:
            raise ClientError(
                f"Job {job_id} is still {job['status']} after {timeout_s:g} s; follow it "
                f"later with `proforma remote job {job_id}`."
            )
        http.sleep(wait)
        wait = min(POLL_LAST_S, wait * 1.5)
