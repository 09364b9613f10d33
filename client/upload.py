"""Sending a forecast file to the service's one door, once: the upload carries an
Idempotency-Key, so a retry after a network failure (the connection dropped before the
answer came, the server restarted) never makes a second job nor spends a second upload
of the daily limit. Before sending again the client asks whether the first request got
through (GET /jobs?idempotency_key=...): a file that arrived is not sent twice."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, cast

import httpx

from proforma.client.errors import ServerBusy, Unreachable
from proforma.client.http import API, Http, error_for

#: Waits before each new attempt after a failure in transit (seconds): six tries in all
#: over about half a minute.
RETRY_WAITS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0)
#: Answers of a proxy or a restarting server that mean "not received: send again".
_TRY_AGAIN = (502, 503, 504)
_PARQUET = "application/vnd.apache.parquet"


class _Counted:
    """A file read for upload that reports each chunk it hands on (the progress bar)."""

    def __init__(self, f: BinaryIO, on_bytes: Callable[[int], None]):
        self._f = f
        self._on_bytes = on_bytes

    def read(self, n: int = -1) -> bytes:
        chunk = self._f.read(n)
        self._on_bytes(len(chunk))
        return chunk

    def __getattr__(self, name: str) -> Any:  # seek, tell, fileno, name: the file's own
        return getattr(self._f, name)


def new_key() -> str:
    """A fresh idempotency key: one per upload, kept across its retries."""
    return uuid.uuid4().hex


def post_file(
    http: Http,
    path: str,
    file: Path,
    fields: dict[str, str],
    *,
    key: str,
    on_bytes: Callable[[int], None] = lambda n: None,
    on_retry: Callable[[str], None] = lambda text: None,
    waits: Sequence[float] = RETRY_WAITS,
) -> tuple[int, dict[str, Any]]:
    """POST `file` with the form `fields` to `path` (under /api/v1) until the server
    answers; returns (status, body). An answer that follows an earlier attempt's arrival
    is that attempt's job: {"job_id", "repeated": True}."""
    headers = {**http.auth(), "Idempotency-Key": key}
    last: Exception | None = None
    for attempt in range(len(waits) + 1):
        if attempt:
            on_retry(f"{last}; trying again in {waits[attempt - 1]:g} s")
            http.sleep(waits[attempt - 1])
            arrived = _arrived(http, key)
            if arrived is not None:
                on_retry(f"the server has the file already: job {arrived['job_id']}")
                return 200, {**arrived, "repeated": True}
        try:
            with open(file, "rb") as f:
                response = http.client.post(
                    API + path,
                    headers=headers,
                    data=fields,
                    files={"file": (file.name, cast(BinaryIO, _Counted(f, on_bytes)), _PARQUET)},
                )
        except httpx.TransportError as exc:
            last = http.unreachable(exc)
            on_bytes(-1)  # the bar starts again
            continue
        if response.status_code in _TRY_AGAIN:
            last = error_for(response, http.config.server)
            on_bytes(-1)
            continue
        if response.status_code >= 400:
            raise error_for(response, http.config.server)
        return response.status_code, response.json()
    assert last is not None
    if isinstance(last, (Unreachable, ServerBusy)):
        raise last
    raise Unreachable(str(last))


def _arrived(http: Http, key: str) -> dict[str, Any] | None:
    """The job the server made of an earlier attempt with `key`, if it got through."""
    try:
        jobs = http.get_json("/jobs", token=True, params={"idempotency_key": key})
    except Unreachable:
        return None
    return jobs[0] if jobs else None
