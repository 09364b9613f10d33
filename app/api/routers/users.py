"""Users and tokens: who am I; admins list and create users, issue and revoke tokens."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, Field

from proforma.app.api import auth
from proforma.app.api.deps import AdminUser, CurrentUser, SettingsDep, WarehouseDep
from proforma.app.api.responses import Me
from proforma.app.read.errors import Conflict, NotFound

router = APIRouter(prefix="/users", tags=["users"])


class NewUser(BaseModel):
    name: str = Field(min_length=1, max_length=64, description="Letters, digits, '_', '.', '-'")
    admin: bool = False
    daily_limit: int | None = Field(default=None, ge=0, description="Uploads per UTC day")


@router.get("/me", summary="The caller's user, role and uploads left today", response_model=Me)
def me(user: CurrentUser, wh: WarehouseDep, settings: SettingsDep) -> dict[str, Any]:
    limit = auth.daily_limit(user, settings.uploads_per_day)
    used = auth.uploads_today(wh, user)
    return {
        "name": user.name,
        "is_admin": user.is_admin,
        "daily_limit": limit,
        "uploads_today": used,
        "uploads_left_today": max(limit - used, 0),
    }


@router.get("", summary="All users (admin)")
def list_users(_: AdminUser, wh: WarehouseDep) -> list[dict[str, Any]]:
    return auth.list_users(wh)


@router.post("", status_code=201, summary="Create a user and its first token (admin)")
def create_user(body: NewUser, _: AdminUser, wh: WarehouseDep) -> dict[str, Any]:
    """The token is in this response only; it is stored as a salted digest."""
    if auth.get_user(wh, body.name) is not None:
        raise Conflict(f"User {body.name!r} exists already.")
    user, token = auth.add_user(wh, body.name, admin=body.admin, daily_limit=body.daily_limit)
    return {
        "name": user.name,
        "is_admin": user.is_admin,
        "daily_limit": user.daily_limit,
        "token": token,
    }


@router.post("/{name}/tokens", status_code=201, summary="Issue another token for a user (admin)")
def issue_token(name: str, _: AdminUser, wh: WarehouseDep) -> dict[str, Any]:
    user = auth.get_user(wh, name)
    if user is None:
        raise NotFound(f"No user {name!r}.")
    return {"name": user.name, "token": auth.new_token(wh, user)}


@router.delete("/{name}/tokens", summary="Revoke all of a user's tokens (admin)")
def revoke(name: str, _: AdminUser, wh: WarehouseDep) -> dict[str, Any]:
    if auth.get_user(wh, name) is None:
        raise NotFound(f"No user {name!r}.")
    return {"name": name, "revoked": auth.revoke_tokens(wh, name)}
