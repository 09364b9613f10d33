"""The FastAPI dependencies a read needs, shared by the API's routes and the pages:
the server's settings and a per-request warehouse cursor (the API adds the job queue
and the caller in app/api/deps.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request

from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse


def get_settings_dep(request: Request) -> Settings:
    return request.app.state.settings


def get_warehouse(request: Request) -> Iterator[Warehouse]:
    """A cursor of the server's warehouse connection for this request (its own transactions)."""
    cursor = request.app.state.wh.cursor()
    try:
        yield cursor
    finally:
        cursor.close()


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
WarehouseDep = Annotated[Warehouse, Depends(get_warehouse)]
