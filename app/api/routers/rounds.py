"""Prospective rounds (docs/rounds.md): list, one round with its resolution and
leaderboard, the live leaderboard across rounds; submit forecasts to an open round
(token); open a round and resolve (admin)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from proforma.app.api.deps import AdminUser, CurrentUser, SettingsDep, WarehouseDep
from proforma.app.api.uploads import receive_upload
from proforma.app.read.disclosure import disclosed_round
from proforma.app.read.errors import BadUpload
from proforma.app.read.formats import clean

router = APIRouter(prefix="/rounds", tags=["rounds"])


def inputs_root(settings: Any) -> Path:
    """`rounds/` beside the warehouse, as the CLI writes them."""
    return Path(settings.warehouse).parent / "rounds"


@router.get("", summary="All rounds with their deadlines and resolution")
def list_rounds(wh: WarehouseDep) -> dict[str, Any]:
    from proforma.app.rounds import list_rounds as rounds

    return clean({"rounds": rounds(wh) if wh.table_exists("rounds.rounds") else []})


@router.get("/live", summary="The live leaderboard: models ranked across rounds")
def live(wh: WarehouseDep) -> dict[str, Any]:
    from proforma.app.rounds import live_leaderboard

    return clean({"models": live_leaderboard(wh)})


@router.get("/{name}", summary="One round: frozen inputs, resolution per horizon, leaderboard")
def get_round(name: str, wh: WarehouseDep) -> dict[str, Any]:
    from proforma.app.rounds import leaderboard

    return clean(disclosed_round(wh, leaderboard(wh, name)))


@router.post(
    "/{name}/submissions",
    status_code=201,
    summary="Submit a parquet forecast file to an open round (token); checked and stored now",
)
async def submit(
    name: str, request: Request, user: CurrentUser, wh: WarehouseDep, settings: SettingsDep
) -> dict[str, Any]:
    """multipart/form-data: `file` (firm, target, origin, horizon, prediction[, sigma,
    component, quantile_level]), `name` (the model; one submission per name and round),
    optional `family` (gaussian, laplace, student_t, quantile, point) and `df` (Student-t).
    Late (403), duplicate or changed (409) and wrong-round (422)
    submissions are refused with nothing stored."""
    from proforma.app.rounds import submit_file

    received = await receive_upload(request, Path(settings.upload_dir), settings.upload_max_bytes)
    try:
        model = (received.fields.get("name") or "").strip()
        if not model:
            raise BadUpload("The form needs a `name` field: the model's name in this round.")
        family = (received.fields.get("family") or "").strip() or None
        df_text = (received.fields.get("df") or "").strip()
        try:
            df = float(df_text) if df_text else None
        except ValueError:
            raise BadUpload(f"`df` must be a number (got {df_text!r})") from None
        record = await run_in_threadpool(
            lambda: submit_file(
                wh,
                name,
                received.path,
                model,
                family=family,
                df=df,
                metadata={"uploaded_by": user.name, "filename": received.filename},
            )
        )
    finally:
        received.path.unlink(missing_ok=True)
    return clean(record)


class NewRound(BaseModel):
    name: str | None = Field(None, description="Default: the origin quarter, e.g. 2024Q4")
    deadline: dt.datetime | None = Field(None, description="UTC; default 14 days from now")
    entries: bool = Field(True, description="Enter the reference baselines (and the oracle)")


@router.post("", status_code=201, summary="Open a round at the data's last quarter (admin)")
def open_round(body: NewRound, _: AdminUser, wh: WarehouseDep, settings: SettingsDep) -> dict:
    from proforma.app.rounds import open_round as open_
    from proforma.app.rounds.entries import enter_entries

    rnd = open_(wh, inputs_root(settings), name=body.name, deadline=body.deadline)
    entered = enter_entries(wh, rnd["name"]) if body.entries else []
    return clean({**rnd, "entries": [e["name"] for e in entered]})


@router.post("/resolve", summary="Resolve the newly realized cells of every round (admin)")
def resolve(_: AdminUser, wh: WarehouseDep) -> dict[str, Any]:
    from proforma.app.rounds import resolve as resolve_

    return clean(resolve_(wh))
