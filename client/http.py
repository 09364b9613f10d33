"""The client's one HTTP session: the server's URL and token, timeouts, a few retries of
reads that fail in transit, and every error answer turned into the client's error of its
kind (proforma.client.errors) with the server's own message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Self

import httpx

from proforma.client.config import Config
from proforma.client.errors import (
    BadToken,
    ClientError,
    Conflict,
    FileRefused,
    Forbidden,
    LimitReached,
    NotFound,
    ServerBusy,
    Unreachable,
    next_reset,
)

API = "/api/v1"
#: Reads that fail in transit are tried this many times in all, waiting 0.5, 1, 2 s.
READ_ATTEMPTS = 4


def _detail(response: httpx.Response) -> tuple[str, list[dict[str, Any]], Any]:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300] or response.reason_phrase, [], None
    if isinstance(body, dict):
        return str(body.get("detail") or body), list(body.get("problems") or []), body
    return str(body), [], body


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def error_for(response: httpx.Response, server: str) -> ClientError:
    """The client's error for an error answer."""
    status = response.status_code
    detail, problems, body = _detail(response)
    kw: dict[str, Any] = {"status": status, "body": body}
    if status == 401:
        return BadToken(
            f"The server at {server} refused the token ({detail}); set one with "
            f"`proforma remote login`, --token or PROFORMA_TOKEN.",
            **kw,
        )
    if status == 403:
        return Forbidden(detail, **kw)
    if status == 404:
        return NotFound(detail, **kw)
    if status == 409:
        return Conflict(detail, **kw)
    if status == 429:
        wait = _retry_after(response)
        if wait is not None:  # the SQL console's rate and concurrency bounds
            return ServerBusy(f"{detail} (retry after {wait:g} s)", retry_after_s=wait, **kw)
        resets = next_reset()
        left = resets - resets.now(resets.tzinfo)
        hours, minutes = divmod(int(left.total_seconds()) // 60, 60)
        return LimitReached(
            f"{detail} Next upload possible at {resets:%Y-%m-%d %H:%M} UTC "
            f"(in {hours} h {minutes} min).",
            resets_at=resets,
            **kw,
        )
    if status in (413, 415, 422):
        return FileRefused(detail, problems, **kw)
    if status == 503:
        wait = _retry_after(response)
        return ServerBusy(f"The server is busy: {detail}", retry_after_s=wait, **kw)
    if status >= 500:
        return ClientError(f"The server failed ({status}): {detail}", **kw)
    return ClientError(detail, **kw)


class Http:
    """One connection pool to one server; `close` it (or use it as a context manager)."""

    def __init__(
        self,
        config: Config,
        *,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.config = config
        self.sleep = sleep
        self.client = httpx.Client(
            base_url=config.server,
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=transport,
            headers={"User-Agent": "proforma-client"},
        )

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def auth(self) -> dict[str, str]:
        if not self.config.token:
            raise BadToken(
                "This needs a token: `proforma remote login`, --token or PROFORMA_TOKEN "
                "(an admin issues one with `proforma users add NAME`)."
            )
        return {"Authorization": f"Bearer {self.config.token}"}

    def unreachable(self, exc: httpx.TransportError) -> Unreachable:
        return Unreachable(
            f"Cannot reach the server at {self.config.server} ({type(exc).__name__}: "
            f"{str(exc) or 'no answer'}); is it running, and is the address right "
            f"(--server, PROFORMA_SERVER)?"
        )

    def send(self, method: str, path: str, *, token: bool = False, **kw: Any) -> httpx.Response:
        """One request, no retry; an error answer raises the client's error."""
        headers = {**kw.pop("headers", {}), **(self.auth() if token else {})}
        try:
            response = self.client.request(method, API + path, headers=headers, **kw)
        except httpx.TransportError as exc:
            raise self.unreachable(exc) from None
        if response.status_code >= 400:
            raise error_for(response, self.config.server)
        return response

    def get(self, path: str, *, token: bool = False, **kw: Any) -> httpx.Response:
        """A read, tried again when it fails in transit (it changes nothing)."""
        for attempt in range(READ_ATTEMPTS):
            try:
                return self.send("GET", path, token=token, **kw)
            except Unreachable:
                if attempt == READ_ATTEMPTS - 1:
                    raise
                self.sleep(0.5 * 2**attempt)
        raise AssertionError("unreachable")

    def get_json(self, path: str, *, token: bool = False, **kw: Any) -> Any:
        return self.get(path, token=token, **kw).json()

    def download(self, path: str, out: Any, *, token: bool = False, **kw: Any) -> httpx.Headers:
        """Stream a file answer into the open binary file `out`; its headers."""
        headers = {**kw.pop("headers", {}), **(self.auth() if token else {})}
        try:
            with self.client.stream("GET", API + path, headers=headers, **kw) as response:
                if response.status_code >= 400:
                    response.read()
                    raise error_for(response, self.config.server)
                for chunk in response.iter_bytes(1 << 20):
                    out.write(chunk)
                return response.headers
        except httpx.TransportError as exc:
            raise self.unreachable(exc) from None
