"""Leaderboards by footprint and track, broken down by horizon, item or statement, with
Diebold-Mariano marks; JSON or CSV. The ranking itself is proforma.app.scoring.leaderboard."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import Response

from proforma.app.api.deps import WarehouseDep
from proforma.app.api.responses import LeaderboardIndex, LeaderboardTable
from proforma.app.read import queries
from proforma.app.read.errors import NotFound
from proforma.app.read.formats import TABLE_RESPONSE, Format, FormatQuery, clean, table_response
from proforma.app.scoring.cards import CardFilter
from proforma.contracts.metrics import METRICS
from proforma.contracts.tracks import Track

router = APIRouter(prefix="/leaderboards", tags=["leaderboards"])


class By(str, Enum):
    global_ = "global"
    horizon = "horizon"
    item = "item"
    statement = "statement"


@router.get(
    "",
    summary="Footprints with their latest score run, and the tracks",
    response_model=LeaderboardIndex,
    response_model_exclude_unset=True,
)
def index(wh: WarehouseDep) -> dict[str, Any]:
    return clean(
        {
            "tracks": queries.TRACK_INFO,
            "breakdowns": [b.value for b in By],
            "footprints": [
                {
                    "footprint": f,
                    "latest_run": queries.score_run(wh, f),
                    "url": f"/api/v1/leaderboards/{f}",
                }
                for f in queries.footprint_names(wh)
            ],
        }
    )


@router.get(
    "/{footprint}",
    summary="One leaderboard: footprint x track, by global/horizon/item/statement",
    responses={200: {**TABLE_RESPONSE, "model": LeaderboardTable}},
)
def leaderboard(
    footprint: str,
    wh: WarehouseDep,
    track: Annotated[
        Track, Query(description="squared (R²), absolute (MAE) or density (CRPS, NLL)")
    ] = Track.squared,
    by: Annotated[By, Query(description="global, horizon, item or statement")] = By.global_,
    format: FormatQuery = Format.json,
    against: Annotated[
        str | None,
        Query(
            description="Diebold-Mariano reference: a submission name or id scored on this "
            "footprint (default: the leader). Stars mark the reference better."
        ),
    ] = None,
    clean_after: Annotated[
        str | None,
        Query(
            description="Rank on a clean slice: the origins after this quarter (e.g. 2015Q4), "
            "among the members whose declared training cutoff is at or before it",
        ),
    ] = None,
    all_entries: Annotated[
        bool,
        Query(
            description="Every entry (default: each uploader's latest per model family; "
            "every in-house model)"
        ),
    ] = False,
    model_family: Annotated[str | None, Query(description="Only this model family")] = None,
    max_parameters: Annotated[
        int | None, Query(ge=0, description="Only models declaring at most this many parameters")
    ] = None,
    run_id: Annotated[
        int | None,
        Query(
            alias="run",
            description="An older score run of this footprint, by id (default: the latest); "
            "every run stays in the warehouse, the public snapshot holds the latest few",
        ),
    ] = None,
) -> Response:
    if footprint not in queries.footprint_names(wh):
        raise NotFound(f"No footprint {footprint!r}; GET /api/v1/footprints lists them.")
    run = queries.score_run(wh, footprint, run_id)
    if run is None:
        if run_id is not None:
            raise NotFound(f"No score run {run_id} of footprint {footprint!r}.")
        raise NotFound(f"Footprint {footprint!r} has not been scored yet.")
    table = queries.leaderboard_table(
        wh,
        footprint,
        track.value,
        by.value,
        against,
        score_run_id=run["score_run_id"],
        clean_after=clean_after,
        cards=CardFilter(all_entries, model_family, max_parameters),
    )
    return table_response(
        table,
        format,
        f"leaderboard-{footprint}-{track.value}-{by.value}",
        extra={
            "footprint": footprint,
            "track": track.value,
            "by": by.value,
            "score_run": run,
            "against": against or "leader",
            "clean_after": clean_after,
            # which way each metric column improves (contracts/metrics.py `better`)
            "better": {c: METRICS[c].better.value for c in table.column_names if c in METRICS},
            "all_entries": all_entries,
            "model_family": model_family,
            "max_parameters": max_parameters,
        },
    )
