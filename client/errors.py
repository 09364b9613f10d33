"""The errors a client user meets, each one clear line (the command line prints it and
exits 2, as every UserError): the server out of reach, a refused token, the daily limit
(with when it resets), a refused file (the server's or the local check's reasons), a busy
server. `status` is the HTTP status where the server answered."""

from __future__ import annotations

import datetime as dt
from typing import Any

from proforma.contracts.errors import UserError


class ClientError(UserError):
    """Anything the server answered with an error, or could not answer."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None):
        super().__init__(message)
        self.status = status
        self.body = body


class Unreachable(ClientError):
    """No answer: the server is down, the URL is wrong, or the network failed."""


class BadToken(ClientError):
    """401: no token, or one the server does not know (revoked, mistyped)."""


class Forbidden(ClientError):
    """403: the token is good but the resource is another user's (or admins' only), or
    a round's deadline has passed."""


class NotFound(ClientError):
    """404: no such submission, job, round or footprint."""


class Conflict(ClientError):
    """409: the model name is taken, or an idempotency key names another file."""


class LimitReached(ClientError):
    """429 on an upload: the user's uploads of the UTC day are used up."""

    def __init__(self, message: str, *, resets_at: dt.datetime, **kw: Any):
        super().__init__(message, **kw)
        self.resets_at = resets_at


class FileRefused(ClientError):
    """The file fails the checks (422 from the server, or the same checks run locally):
    `problems` lists each with its count and example rows."""

    def __init__(self, message: str, problems: list[dict[str, Any]] | None = None, **kw: Any):
        super().__init__(message, **kw)
        self.problems = problems or []


class ServerBusy(ClientError):
    """503 (the warehouse held by a command, no snapshot yet) or the SQL console's 429:
    try again after `retry_after_s` when the server said."""

    def __init__(self, message: str, *, retry_after_s: float | None = None, **kw: Any):
        super().__init__(message, **kw)
        self.retry_after_s = retry_after_s


def next_reset(now: dt.datetime | None = None) -> dt.datetime:
    """When a daily limit resets: the next 00:00 UTC."""
    now = now or dt.datetime.now(dt.UTC)
    return (now + dt.timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
