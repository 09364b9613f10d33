"""Prospective rounds (docs/rounds.md): list, one round with its resolution and
leaderboard, the live leaderboard across rounds; submit forecasts to an open round
(token); open a round and resolve (admin)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from proforma.app.api.admission import admit, finished_job, upload_metadata
from proforma.app.api.deps import AdminUser, CurrentUser, JobsDep, SettingsDep, WarehouseDep
from proforma.app.api.job_store import FAMILY_FROM_FILE, NewJob
from proforma.app.api.uploads import ReceivedUpload
from proforma.app.read.disclosure import disclosed_live, disclosed_round
from proforma.app.read.errors import BadUpload
from proforma.app.read.formats import clean
from proforma.app.store.warehouse import Warehouse
from proforma.contracts import families

router = APIRouter(prefix="/rounds", tags=["rounds"])


def inputs_root(settings: Any) -> Path:
    """`rounds/` beside the warehouse, as the CLI writes them."""
    return Path(settings.warehouse).parent / "rounds"


@router.get("", summary="All rounds with their deadlines and resolution")
def list_rounds(wh: WarehouseDep) -> dict[str, Any]:
    from proforma.app.rounds import list_rounds as rounds

    return clean({"rounds": rounds(wh) if wh.table_exists("rounds.rounds") else []})


@router.get("/live", summary="The live leaderboard: models ranked across rounds")
def live(wh: WarehouseDep, settings: SettingsDep) -> dict[str, Any]:
    from proforma.app.rounds import live_leaderboard

    board = live_leaderboard(wh)
    return clean({"models": disclosed_live(wh, board, settings.public_min_cells)})


@router.get("/{name}", summary="One round: frozen inputs, resolution per horizon, leaderboard")
def get_round(name: str, wh: WarehouseDep, settings: SettingsDep) -> dict[str, Any]:
    from proforma.app.rounds import leaderboard

    return clean(disclosed_round(wh, leaderboard(wh, name), settings.public_min_cells))


#: How long a round submission's request waits for its job (a scoring pass of static
#: uploads may be ahead of it in the queue); after that it answers 202 with the job.
ROUND_JOB_WAIT_S = 60.0


@router.post(
    "/{name}/submissions",
    status_code=201,
    summary="Submit a parquet forecast file to an open round (token); checked and stored now",
    responses={202: {"description": "Queued behind other jobs: follow status_url"}},
)
async def submit(
    name: str,
    request: Request,
    user: CurrentUser,
    wh: WarehouseDep,
    jobs: JobsDep,
    settings: SettingsDep,
) -> Any:
    """multipart/form-data: `file` (firm, target, origin, horizon, prediction[, sigma,
    component, quantile_level]), `name` (the model; one submission per name and round),
    optional `family` (a density family of contracts/families.py, quantile or point;
    docs/models.md, "Density families") and `df` (a family's degrees of freedom).
    The file comes in by the uploads' door (the same limits, daily count, file checks
    and job worker) and is checked by the static benchmark's reader. Late (403),
    duplicate or changed (409) and refused (422) submissions store nothing."""

    def describe(received: ReceivedUpload) -> NewJob:
        model = (received.fields.get("name") or "").strip()
        if not model:
            raise BadUpload("The form needs a `name` field: the model's name in this round.")
        family = (received.fields.get("family") or "").strip() or None
        df_text = (received.fields.get("df") or "").strip()
        try:
            df = float(df_text) if df_text else None
        except ValueError:
            raise BadUpload(f"`df` must be a number (got {df_text!r})") from None
        check_round_form(wh, name, model, family, df)
        return NewJob(
            user.user_id,
            model,
            family or FAMILY_FROM_FILE,
            df,
            upload_metadata(user, received),
            received.path,
            received.size,
            received.sha256,
            round_name=name,
        )

    admitted = await admit(request, user, wh, jobs, settings, describe)
    job = await finished_job(wh, admitted.job_id, ROUND_JOB_WAIT_S)
    status_url = f"/api/v1/jobs/{admitted.job_id}"
    if job is None:
        return JSONResponse(
            {"job_id": admitted.job_id, "status": "queued", "status_url": status_url},
            status_code=202,
        )
    report = job.get("report") or {}
    if job["status"] == "failed":
        return JSONResponse(
            {
                "detail": job["message"],
                **({"problems": report["problems"]} if report.get("problems") else {}),
                "job_id": admitted.job_id,
            },
            status_code=int(report.get("status_code") or 500),
        )
    return clean({**report.get("record", {}), "job_id": admitted.job_id, "status_url": status_url})


def check_round_form(
    wh: Warehouse, round_name: str, model: str, family: str | None, df: float | None
) -> None:
    """What the form alone says against the round (before the file is queued): the round
    exists and takes files, the family and df are ones a round scores."""
    from proforma.app.rounds import get_round
    from proforma.app.rounds.submit import round_families

    get_round(wh, round_name)  # 404 for an unknown round
    known = round_families()
    if family is not None and family not in known:
        raise BadUpload(f"Rounds score the families {', '.join(known)} (got {family!r})")
    spec = families.FAMILIES.get(family or "")
    if spec is not None and spec.params:
        from proforma.app.scoring.submissions.checks import check_family

        check_family(family or "", df)
    elif df is not None:
        owners = " or ".join(families.families_with("df"))
        raise BadUpload(f"`df` applies only to family {owners}, not {family or 'the default'}")


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
