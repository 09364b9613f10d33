"""Errors the API reports as JSON 4xx: each carries its HTTP status and one clear message."""

from __future__ import annotations

from proforma.contracts.errors import UserError, ValidationError, WarehouseLocked


def http_status(exc: UserError) -> int:
    """The HTTP status a user's error answers with, wherever it is raised (a route, or
    the job worker that records it on the job)."""
    if isinstance(exc, ValidationError):
        return 422
    if isinstance(exc, WarehouseLocked):
        return 503
    return int(getattr(exc, "status_code", 400))


class ApiError(UserError):
    status_code = 400


class NotFound(ApiError):
    status_code = 404


class Forbidden(ApiError):
    status_code = 403


class Conflict(ApiError):
    status_code = 409


class TooLarge(ApiError):
    status_code = 413


class UnsupportedMedia(ApiError):
    status_code = 415


class BadUpload(ApiError):
    """A malformed upload or metadata field, caught before the job is queued."""

    status_code = 422

    def __init__(self, message: str, problems: list[dict] | None = None):
        super().__init__(message)
        self.problems = problems or []


class RateLimited(ApiError):
    status_code = 429
