"""JSON and CSV renderings of tabular answers (Arrow tables or rows), NaN-safe."""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import math
from enum import Enum
from typing import Annotated, Any

import pyarrow as pa
import pyarrow.csv as pacsv
from fastapi import Query
from fastapi.responses import JSONResponse, Response


class Format(str, Enum):
    json = "json"
    csv = "csv"


FormatQuery = Annotated[Format, Query(description="json or csv (a download)")]

#: OpenAPI of a route answering with `table_response`: its JSON model (the route adds
#: "model") or the same rows as a CSV download.
TABLE_RESPONSE: dict[str, Any] = {
    "description": "JSON (format=json) or a CSV download (format=csv)",
    "content": {"text/csv": {"schema": {"type": "string"}}},
}


def clean(value: Any) -> Any:
    """A JSON-safe value: NaN and infinities become null, dates ISO strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return clean(float(value))
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


def records(table: pa.Table) -> list[dict[str, Any]]:
    return [clean(r) for r in table.to_pylist()]


def csv_bytes(table: pa.Table) -> bytes:
    """CSV with nested values (lists, structs, JSON) written as JSON text."""
    columns = []
    for col in table.columns:
        if pa.types.is_nested(col.type):
            col = pa.array(
                [None if v is None else json.dumps(clean(v)) for v in col.to_pylist()], pa.string()
            )
        columns.append(col)
    sink = io.BytesIO()
    pacsv.write_csv(pa.Table.from_arrays(columns, names=table.column_names), sink)
    return sink.getvalue()


def table_response(
    table: pa.Table, fmt: Format, filename: str, extra: dict[str, Any] | None = None
) -> Response:
    """`table` as CSV (download) or as JSON `{"rows": [...], **extra}`."""
    if fmt == Format.csv:
        return Response(
            csv_bytes(table),
            media_type="text/csv",
            headers={"Content-Disposition": f'attachment; filename="{filename}.csv"'},
        )
    return JSONResponse(
        clean({**(extra or {}), "columns": table.column_names, "rows": records(table)})
    )


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
