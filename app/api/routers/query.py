"""Read-only SQL over the public snapshot (aggregates, scores, footprint membership)."""

from __future__ import annotations

import threading
from typing import Annotated, Any

import pyarrow as pa
from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel, Field

from proforma.app.api.console_gate import ConsoleGate
from proforma.app.api.deps import SettingsDep
from proforma.app.api.responses import PublicTables
from proforma.app.read.console_workers import ConsoleWorkers
from proforma.app.read.formats import Format, FormatQuery, clean, csv_bytes
from proforma.app.read.sqlguard import QueryResult, SnapshotMissing, run_query, snapshot_schema
from proforma.app.store.settings import Settings

router = APIRouter(prefix="/query", tags=["query"])


class QueryBody(BaseModel):
    sql: str = Field(description="One SELECT over the public tables (GET /api/v1/query/tables)")
    format: Format = Format.json


def _run(
    sql: str, settings: Settings, workers: ConsoleWorkers, waited_s: float = 0.0
) -> QueryResult:
    return run_query(
        sql,
        settings.public_snapshot,
        max_rows=settings.query_max_rows,
        timeout_s=max(0.1, settings.query_timeout_s - waited_s),
        timeout_label=settings.query_timeout_s,
        memory_limit=settings.query_memory_limit,
        workers=workers,
    )


def _respond(result: QueryResult, fmt: Format) -> Response | dict[str, Any]:
    if fmt == Format.csv:
        table = (
            pa.Table.from_pylist([dict(zip(result.columns, r, strict=True)) for r in result.rows])
            if result.rows
            else pa.table({c: pa.array([], pa.string()) for c in result.columns})
        )
        headers = {
            "Content-Disposition": 'attachment; filename="query.csv"',
            "X-Truncated": str(result.truncated).lower(),
        }
        return Response(csv_bytes(table), media_type="text/csv", headers=headers)
    return clean(
        {
            "columns": result.columns,
            "types": result.types,
            "rows": result.rows,
            "row_count": len(result.rows),
            "truncated": result.truncated,
            "elapsed_ms": round(result.elapsed_ms, 1),
            "tables": list(result.tables),
        }
    )


def _gate(request: Request, settings: Settings) -> ConsoleGate:
    gate = getattr(request.app.state, "console_gate", None)
    if gate is None:
        gate = request.app.state.console_gate = ConsoleGate.from_settings(settings)
    return gate


_workers_lock = threading.Lock()


def _workers(request: Request, settings: Settings) -> ConsoleWorkers:
    """The app's console worker processes, one per console place (started on the first
    query; the server's shutdown stops them)."""
    with _workers_lock:
        workers = getattr(request.app.state, "console_workers", None)
        if workers is None:
            workers = request.app.state.console_workers = ConsoleWorkers(
                _gate(request, settings).concurrency, settings.query_memory_limit
            )
        return workers


def _client_key(request: Request) -> str:
    """The client a console query counts against: its address as the server sees it."""
    return request.client.host if request.client else "unknown"


async def _bounded(request: Request, sql: str, settings: Settings) -> QueryResult:
    gate = _gate(request, settings)
    async with gate.admit(_client_key(request)) as waited:
        workers = await run_in_threadpool(_workers, request, settings)
        return await run_in_threadpool(_run, sql, settings, workers, waited)


@router.post("", summary="Run one SELECT on the public snapshot")
async def query_post(request: Request, body: QueryBody, settings: SettingsDep) -> Any:
    """Guarded by a sqlglot allow-list, then by DuckDB (read-only, no external access),
    with a row limit (`truncated` tells) and a time limit (408); bounded per client (rate
    and concurrency) and overall (429 with Retry-After)."""
    return _respond(await _bounded(request, body.sql, settings), body.format)


@router.get("", summary="Run one SELECT on the public snapshot (query string)")
async def query_get(
    request: Request,
    settings: SettingsDep,
    sql: Annotated[str, Query(description="One SELECT over the public tables")],
    format: FormatQuery = Format.json,
) -> Any:
    return _respond(await _bounded(request, sql, settings), format)


@router.get("/tables", summary="The public tables and their columns", response_model=PublicTables)
def tables(settings: SettingsDep) -> dict[str, Any]:
    schema = snapshot_schema(settings.public_snapshot)
    if not schema:
        raise SnapshotMissing("No public snapshot is published yet.")
    return {
        "tables": {
            t: [{"name": c, "type": ty} for c, ty in cols.items()] for t, cols in schema.items()
        }
    }
