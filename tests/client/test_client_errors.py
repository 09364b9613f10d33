"""The client's side of failures, without a server (httpx's mock transport): every error
answer becomes the error of its kind with the server's words, and an upload answered
503 (a restarting server behind a proxy) is sent again under the same key after asking
whether it arrived."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx
import pytest

from proforma.client import (
    BadToken,
    ClientError,
    Conflict,
    FileRefused,
    LimitReached,
    ServerBusy,
    Unreachable,
)
from proforma.client.config import Config
from proforma.client.http import Http, error_for
from proforma.client.upload import post_file

SERVER = "http://pf.test"


def _answer(status: int, body: object, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers)


@pytest.mark.parametrize(
    "status, body, headers, kind, words",
    [
        (401, {"detail": "Unknown token."}, None, BadToken, "refused the token (Unknown token.)"),
        (409, {"detail": "A submission named 'm' exists already"}, None, Conflict, "exists"),
        (
            422,
            {"detail": "rejected", "problems": [{"problem": "unknown firm", "count": 2}]},
            None,
            FileRefused,
            "rejected",
        ),
        (
            503,
            {"detail": "No public snapshot is published yet."},
            {"Retry-After": "5"},
            ServerBusy,
            "busy",
        ),
        (
            429,
            {"detail": "Too many console queries"},
            {"Retry-After": "7"},
            ServerBusy,
            "retry after 7",
        ),
        (500, {"detail": "boom"}, None, ClientError, "The server failed (500): boom"),
    ],
)
def test_each_error_answer_is_its_kind(
    status: int, body: dict, headers: dict | None, kind: type, words: str
) -> None:
    error = error_for(_answer(status, body, headers), SERVER)
    assert type(error) is kind and words in str(error) and error.status == status
    if isinstance(error, FileRefused):
        assert error.problems == body["problems"]
    if isinstance(error, ServerBusy) and headers:
        assert error.retry_after_s == float(headers["Retry-After"])


def test_the_daily_limit_says_when_it_resets() -> None:
    error = error_for(_answer(429, {"detail": "User 'a' has used today's 2 upload(s)."}), SERVER)
    assert isinstance(error, LimitReached)
    now = dt.datetime.now(dt.UTC)
    assert error.resets_at > now and error.resets_at - now <= dt.timedelta(days=1)
    assert (error.resets_at.hour, error.resets_at.minute) == (0, 0)
    assert f"{error.resets_at:%Y-%m-%d} 00:00 UTC" in str(error)


def test_an_upload_answered_503_is_sent_again_under_its_key(tmp_path: Path) -> None:
    seen: list[tuple[str, str, str | None]] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.path, request.headers.get("idempotency-key")))
        if request.method == "GET":  # did the first attempt arrive? no
            assert request.url.params["idempotency_key"] == "key-0001-abcd"
            return _answer(200, [])
        request.read()
        if sum(1 for m, _, _ in seen if m == "POST") == 1:
            return _answer(503, {"detail": "restarting"})
        return _answer(202, {"job_id": 7, "repeated": False})

    file = tmp_path / "f.parquet"
    file.write_bytes(b"PAR1" + b"x" * 1000 + b"PAR1")
    told: list[str] = []
    http = Http(
        Config(SERVER, "pf_token", "flag"),
        transport=httpx.MockTransport(server),
        sleep=lambda s: None,
    )
    with http:
        status, body = post_file(
            http, "/submissions", file, {"name": "m"}, key="key-0001-abcd", on_retry=told.append
        )
    assert (status, body["job_id"]) == (202, 7)
    assert [m for m, _, _ in seen] == ["POST", "GET", "POST"]
    assert {k for m, _, k in seen if m == "POST"} == {"key-0001-abcd"}
    assert "busy" in told[0] and "trying again in 1 s" in told[0]


def test_an_unreachable_server_after_every_try(tmp_path: Path) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    file = tmp_path / "f.parquet"
    file.write_bytes(b"PAR1PAR1")
    http = Http(
        Config(SERVER, "t", "flag"), transport=httpx.MockTransport(down), sleep=lambda s: None
    )
    with http, pytest.raises(Unreachable, match="Cannot reach the server at http://pf.test"):
        post_file(http, "/submissions", file, {}, key="key-0002-abcd", waits=(0.0, 0.0))
