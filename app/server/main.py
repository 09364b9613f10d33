"""The FastAPI application: `create_app(settings)`.

The process that runs it is the warehouse's one writer (docs/architecture.md): the lifespan
opens the warehouse read-write, applies migrations and starts the job queue (which
publishes the public snapshot first, without holding up the start, then takes up
unfinished jobs). Requests get a cursor each. Every
error a client can cause comes back as JSON `{"detail": "...", "problems": [...]}`
with a specific 4xx status; the OpenAPI schema is at /api/v1/openapi.json and a
readable, CDN-free reference at /api/docs.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from proforma.app import __version__
from proforma.app.api.job_queue import JobQueue, Scorer
from proforma.app.api.job_store import sweep_upload_dir
from proforma.app.api.routers import (
    footprints,
    health,
    jobs,
    leaderboards,
    public,
    query,
    rounds,
    submissions,
    users,
)
from proforma.app.flows.warehouse import prepare
from proforma.app.read.errors import http_status
from proforma.app.read.snapshot import publish, record_failure
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import connect
from proforma.app.web import STATIC_DIR
from proforma.app.web import pages as web_pages
from proforma.app.web import report as web_report
from proforma.app.web import rounds as web_rounds
from proforma.contracts.errors import UserError

log = logging.getLogger("proforma.api")
API_PREFIX = "/api/v1"


def _error_body(message: str, problems: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"detail": message}
    if problems:
        body["problems"] = problems
    return body


def _describe_validation(exc: RequestValidationError) -> tuple[str, list[dict[str, Any]]]:
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "request"
        problems.append({"field": where, "problem": err.get("msg", "invalid")})
    first = problems[0] if problems else {"field": "request", "problem": "invalid"}
    return f"Invalid {first['field']}: {first['problem']}.", problems


def _publish_safely(wh: Any, settings: Settings) -> None:
    """Republish public.duckdb; a failure is logged and recorded for /api/v1/health and the
    previous snapshot stays (the scores themselves are already committed, so jobs still
    finish)."""
    try:
        log.info(publish(wh, settings).line())
    except Exception as exc:  # the service keeps running on the last snapshot
        log.exception("publishing the public snapshot failed; the previous one stays")
        record_failure(wh, exc)


def create_app(
    settings: Settings | None = None,
    *,
    scorer: Scorer | None = None,
    start_jobs: bool = True,
) -> FastAPI:
    """The service over the warehouse in `settings` (default: the environment's)."""
    settings = settings or get_settings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        wh = connect(settings)
        try:
            prepare(wh)
            app.state.wh = wh
            left = sweep_upload_dir(wh, Path(settings.upload_dir))
            if left:
                log.info("removed %d file(s) a stopped server left in the upload folder", len(left))
            queue = JobQueue(
                wh, settings, scorer=scorer, after_scoring=lambda w: _publish_safely(w, settings)
            )
            app.state.jobs = queue
            if start_jobs:  # the worker publishes first; the server answers meanwhile
                queue.request_publish()
                queue.start()
            else:
                _publish_safely(wh, settings)
            yield
        finally:
            if getattr(app.state, "jobs", None) is not None:
                app.state.jobs.stop()
            if getattr(app.state, "console_workers", None) is not None:
                app.state.console_workers.close()
            wh.close()

    app = FastAPI(
        title="ProForma-20Q benchmark service",
        version=__version__,
        description=(
            "Upload long-horizon financial-statement forecasts (parquet), follow their "
            "validation and scoring, read leaderboards by footprint and track, and query "
            "the public snapshot of aggregate scores with read-only SQL."
        ),
        lifespan=lifespan,
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # Swagger UI loads from a CDN; /api/docs renders the schema locally
        redoc_url=None,
    )
    app.state.settings = settings

    @app.exception_handler(UserError)
    async def user_error(request: Request, exc: UserError) -> JSONResponse:
        status = http_status(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else getattr(exc, "headers", None)
        return JSONResponse(
            _error_body(str(exc), getattr(exc, "problems", None)),
            status_code=status,
            headers=headers,
        )

    @app.exception_handler(RequestValidationError)
    async def request_invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        message, problems = _describe_validation(exc)
        return JSONResponse(_error_body(message, problems), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"No route {request.method} {request.url.path}; see {API_PREFIX}/openapi.json."
        elif exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path}."
        return JSONResponse(
            _error_body(str(detail)),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    for module in (
        health,
        users,
        public,
        submissions,
        jobs,
        leaderboards,
        footprints,
        query,
        rounds,
    ):
        app.include_router(module.router, prefix=API_PREFIX)
    app.include_router(web_pages.router)
    app.include_router(web_report.router)
    app.include_router(web_rounds.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app
