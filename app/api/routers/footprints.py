"""Footprints (fixed cell sets that define a common sample): list, inspect; admins add
and remove them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from app.api.deps import WarehouseDep
from app.api.errors import NotFound
from app.api.formats import Format, FormatQuery, clean, table_response

router = APIRouter(prefix="/footprints", tags=["footprints"])

_SQL = """
SELECT footprint_id, name, version, kind, predicate, split, description, n_cells, build_id, created_at
FROM eval.footprints
"""


@router.get("", summary="All footprints (every version); JSON or CSV")
def list_footprints(wh: WarehouseDep, format: FormatQuery = Format.json) -> Response:
    return table_response(wh.arrow(_SQL + " ORDER BY name, version"), format, "footprints")


@router.get("/{name}", summary="One footprint: its versions, size and membership counts")
def get_footprint(name: str, wh: WarehouseDep) -> dict[str, Any]:
    versions = wh.arrow(_SQL + " WHERE name = ? ORDER BY version", [name]).to_pylist()
    if not versions:
        raise NotFound(f"No footprint {name!r}.")
    for v in versions:
        v["origins"] = wh.scalar(
            "SELECT count(*) FROM eval.footprint_origins WHERE footprint_id = ?", [v["footprint_id"]])
        v["cells"] = wh.scalar(
            "SELECT count(*) FROM eval.footprint_cells WHERE footprint_id = ?", [v["footprint_id"]])
    return clean({"name": name, "versions": versions})
