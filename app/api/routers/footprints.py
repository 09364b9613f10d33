"""Footprints (fixed cell sets that define a common sample): list, inspect; admins
create new ones (or new versions), which are then scored in the background."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import BaseModel, Field

from proforma.app.api.deps import AdminUser, JobsDep, WarehouseDep
from proforma.app.api.responses import FootprintDetail, FootprintTable
from proforma.app.read import queries
from proforma.app.read.errors import NotFound
from proforma.app.read.formats import TABLE_RESPONSE, Format, FormatQuery, clean, table_response

router = APIRouter(prefix="/footprints", tags=["footprints"])


@router.get(
    "",
    summary="All footprints (every version); JSON or CSV",
    responses={200: {**TABLE_RESPONSE, "model": FootprintTable}},
)
def list_footprints(wh: WarehouseDep, format: FormatQuery = Format.json) -> Response:
    return table_response(queries.footprint_table(wh), format, "footprints")


@router.get(
    "/{name}",
    summary="One footprint: its versions, size and membership counts",
    response_model=FootprintDetail,
    response_model_exclude_unset=True,
)
def get_footprint(name: str, wh: WarehouseDep) -> dict[str, Any]:
    versions = queries.footprint_versions(wh, name)
    if not versions:
        raise NotFound(f"No footprint {name!r}.")
    return clean({"name": name, "versions": versions})


class NewFootprint(BaseModel):
    name: str = Field(min_length=1, max_length=64, description="Letters, digits, - and _")
    predicate: str = Field("TRUE", description="SQL over firm, origin, item, horizon")
    submissions: list[int] | None = Field(
        None, description="Freeze these submissions' common sample"
    )
    n_origins: int | None = Field(
        None, ge=1, description="A seeded calendar-balanced origin sample"
    )
    seed: int | None = None
    split: str = "test"
    description: str | None = Field(None, max_length=2000)


@router.post("", status_code=201, summary="Create a footprint or a new version of one (admin)")
def create_footprint(
    body: NewFootprint, _: AdminUser, wh: WarehouseDep, jobs: JobsDep
) -> dict[str, Any]:
    """Creates the footprint now; scoring every current submission on it is queued."""
    from proforma.app import scoring

    kwargs: dict[str, Any] = {
        "predicate": body.predicate,
        "submissions": body.submissions,
        "n_origins": body.n_origins,
        "split": body.split,
        "description": body.description,
    }
    if body.seed is not None:
        kwargs["seed"] = body.seed
    footprint_id = scoring.create_footprint(wh, body.name, **kwargs)
    jobs.request_score(body.name)
    return clean({**queries.footprint_record(wh, footprint_id), "scoring": "queued"})
