"""Leaderboards by footprint and track, broken down by horizon, item or statement, with
Diebold-Mariano marks; JSON or CSV. The ranking itself is app.scoring.leaderboard."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import pyarrow as pa
from fastapi import APIRouter, Query
from fastapi.responses import Response

from app.api.deps import WarehouseDep
from app.api.errors import NotFound
from app.api.formats import Format, FormatQuery, clean, table_response
from app.warehouse import Warehouse

router = APIRouter(prefix="/leaderboards", tags=["leaderboards"])

#: The tracks of the paper's results table: squared error on conditional means (R²),
#: absolute error on medians (MAE), proper scores on densities (CRPS, NLL).
TRACKS: list[dict[str, str]] = [
    {"name": "squared", "label": "Squared error: R² (means)", "metric": "r2"},
    {"name": "absolute", "label": "Absolute error: MAE (medians)", "metric": "mae"},
    {"name": "density", "label": "Density: CRPS, NLL, coverage", "metric": "crps"},
]


class Track(str, Enum):
    squared = "squared"
    absolute = "absolute"
    density = "density"


class By(str, Enum):
    global_ = "global"
    horizon = "horizon"
    item = "item"
    statement = "statement"


def footprint_names(wh: Warehouse) -> list[str]:
    """Footprints that exist, scored ones first in name order."""
    if not wh.table_exists("eval.footprints"):
        return []
    return [r[0] for r in wh.fetchall(
        "SELECT name FROM eval.footprints GROUP BY name ORDER BY name = 'full' DESC, name")]


def latest_run(wh: Warehouse, footprint: str) -> dict[str, Any] | None:
    """The newest score run of a footprint with its provenance (build and eval versions)."""
    table = wh.arrow(
        """
        SELECT score_run_id, footprint_name, footprint_version, submission_ids, footprint_cells,
               n_cells, build_id, json_extract_string(build, '$.sql_checksum') AS build_sql_version,
               eval_sql_version, started_at, finished_at, elapsed_s
        FROM eval.score_runs WHERE footprint_name = ?
        ORDER BY score_run_id DESC LIMIT 1
        """,
        [footprint],
    )
    return table.to_pylist()[0] if table.num_rows else None


def leaderboard_table(wh: Warehouse, footprint: str, track: str, by: str,
                      against: str | None = None) -> pa.Table:
    from app import scoring

    return scoring.leaderboard(wh, footprint, track, None if by == "global" else by,
                               against=against or None)


@router.get("", summary="Footprints with their latest score run, and the tracks")
def index(wh: WarehouseDep) -> dict[str, Any]:
    return clean({
        "tracks": TRACKS,
        "breakdowns": [b.value for b in By],
        "footprints": [
            {"footprint": f, "latest_run": latest_run(wh, f),
             "url": f"/api/v1/leaderboards/{f}"}
            for f in footprint_names(wh)
        ],
    })


@router.get("/{footprint}", summary="One leaderboard: footprint x track, by global/horizon/item/statement")
def leaderboard(
    footprint: str,
    wh: WarehouseDep,
    track: Annotated[Track, Query(description="squared (R²), absolute (MAE) or density (CRPS, NLL)")] = Track.squared,
    by: Annotated[By, Query(description="global, horizon, item or statement")] = By.global_,
    format: FormatQuery = Format.json,
    against: Annotated[str | None, Query(
        description="Diebold-Mariano reference: a submission name or id scored on this "
                    "footprint (default: the leader). Stars mark the reference better.")] = None,
) -> Response:
    if footprint not in footprint_names(wh):
        raise NotFound(f"No footprint {footprint!r}; GET /api/v1/footprints lists them.")
    run = latest_run(wh, footprint)
    if run is None:
        raise NotFound(f"Footprint {footprint!r} has not been scored yet.")
    table = leaderboard_table(wh, footprint, track.value, by.value, against)
    return table_response(
        table, format, f"leaderboard-{footprint}-{track.value}-{by.value}",
        extra={"footprint": footprint, "track": track.value, "by": by.value, "score_run": run,
               "against": against or "leader"},
    )
