"""FastAPI dependencies as `Annotated` aliases: settings, a per-request warehouse cursor,
the job queue, and the caller (token holder, admin)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from proforma.app.api.auth import User, authenticate
from proforma.app.api.errors import Forbidden
from proforma.app.api.job_queue import JobQueue
from proforma.app.settings import Settings
from proforma.app.warehouse import Warehouse

_bearer = HTTPBearer(
    auto_error=False,
    description="An API token `pf_...` from `proforma users add NAME` (shown once).",
)


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_warehouse(request: Request) -> Iterator[Warehouse]:
    """A cursor of the server's warehouse connection for this request (its own transactions)."""
    cursor = request.app.state.wh.cursor()
    try:
        yield cursor
    finally:
        cursor.close()


def get_jobs(request: Request) -> JobQueue:
    return request.app.state.jobs


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
WarehouseDep = Annotated[Warehouse, Depends(get_warehouse)]
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
