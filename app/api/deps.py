"""FastAPI dependencies as `Annotated` aliases: the job queue and the caller (token
holder, admin); settings and the per-request warehouse cursor come from the read layer
(app/read/deps.py) and are re-exported for the routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from proforma.app.api.auth import User, authenticate
from proforma.app.api.job_queue import JobQueue
from proforma.app.read.deps import SettingsDep, WarehouseDep
from proforma.app.read.errors import Forbidden

__all__ = ["AdminUser", "CurrentUser", "JobsDep", "SettingsDep", "WarehouseDep"]

_bearer = HTTPBearer(
    auto_error=False,
    description="An API token `pf_...` from `proforma users add NAME` (shown once).",
)


def get_jobs(request: Request) -> JobQueue:
    return request.app.state.jobs


JobsDep = Annotated[JobQueue, Depends(get_jobs)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def get_current_user(wh: WarehouseDep, credentials: Credentials, request: Request) -> User:
    token = credentials.credentials if credentials else None
    if token is None and request.headers.get("authorization"):
        # A header that is not 'Bearer ...' (HTTPBearer drops it silently).
        token = request.headers["authorization"]
        if not token.lower().startswith("bearer "):
            from proforma.app.api.auth import AuthError

            raise AuthError("Send the token as 'Authorization: Bearer pf_...'.")
    return authenticate(wh, token)


CurrentUser = Annotated[User, Depends(get_current_user)]


def get_admin(user: CurrentUser) -> User:
    if not user.is_admin:
        raise Forbidden(f"User {user.name!r} is not an admin; this route needs the admin role.")
    return user


AdminUser = Annotated[User, Depends(get_admin)]
