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
import os
import secrets
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException as StarletteHTTPException

from proforma.app import __version__
from proforma.app.api.job_queue import JobQueue, Scorer
from proforma.app.api.job_store import sweep_upload_dir
from proforma.app.api.routers import (
    backups,
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
from proforma.app.api.telemetry import (
    REQUEST_ID_HEADER,
    ServiceMetrics,
    new_request_id,
    request_id,
    route_template,
)
from proforma.app.flows.backup import server_key_path
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
#: One JSON line per request when `proforma serve` logs as JSON (app/server/logs.py).
access = logging.getLogger("proforma.access")
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


def _publish_safely(wh: Any, settings: Settings, metrics: ServiceMetrics | None = None) -> None:
    """Republish public.duckdb; a failure is logged and recorded for /api/v1/health and the
    previous snapshot stays (the scores themselves are already committed, so jobs still
    finish)."""
    started = time.perf_counter()
    try:
        log.info(publish(wh, settings).line())
    except Exception as exc:  # the service keeps running on the last snapshot
        log.exception("publishing the public snapshot failed; the previous one stays")
        record_failure(wh, exc)
        if metrics is not None:
            metrics.publication_failures.inc()
    finally:
        if metrics is not None:
            metrics.publication.observe(time.perf_counter() - started)


def _write_server_key(settings: Settings) -> str:
    """A fresh operator key in `<warehouse>.server.key`, readable by this user only (see
    app/api/routers/backups.py)."""
    key = secrets.token_urlsafe(32)
    if str(settings.warehouse) == ":memory:":
        return key  # no folder to leave it in: only an admin token asks for a backup
    path = server_key_path(settings)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key)
    os.replace(tmp, path)
    return key


def _remove_server_key(settings: Settings, key: str | None) -> None:
    """The key file, removed when it is still this server's."""
    path = server_key_path(settings)
    with contextlib.suppress(OSError):
        if key is not None and path.read_text() == key:
            path.unlink()


def create_app(
    settings: Settings | None = None,
    *,
    scorer: Scorer | None = None,
    start_jobs: bool = True,
) -> FastAPI:
    """The service over the warehouse in `settings` (default: the environment's)."""
    settings = settings or get_settings()
    metrics = ServiceMetrics()
    app = FastAPI(
        title="ProForma-20Q benchmark service",
        version=__version__,
        description=(
            "Upload long-horizon financial-statement forecasts (parquet), follow their "
            "validation and scoring, read leaderboards by footprint and track, and query "
            "the public snapshot of aggregate scores with read-only SQL."
        ),
        lifespan=_lifespan(settings, metrics, scorer, start_jobs),
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # Swagger UI loads from a CDN; /api/docs renders the schema locally
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.metrics = metrics
    _observe_requests(app, metrics)
    _answer_errors(app)
    _include_routes(app)
    return app


def _lifespan(
    settings: Settings, metrics: ServiceMetrics, scorer: Scorer | None, start_jobs: bool
) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """The server's life: the warehouse opened and prepared, the upload folder swept,
    the job worker started (or one publication made without it), the server's key
    written; all of it undone at the end."""

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
                wh,
                settings,
                scorer=scorer,
                after_scoring=lambda w: _publish_safely(w, settings, metrics),
                metrics=metrics,
            )
            app.state.jobs = queue
            app.state.server_key = _write_server_key(settings)
            if start_jobs:  # the worker publishes first; the server answers meanwhile
                queue.request_publish()
                queue.start()
            else:
                _publish_safely(wh, settings, metrics)
            yield
        finally:
            if getattr(app.state, "jobs", None) is not None:
                app.state.jobs.stop()
            if getattr(app.state, "console_workers", None) is not None:
                app.state.console_workers.close()
            _remove_server_key(settings, getattr(app.state, "server_key", None))
            wh.close()

    return lifespan


def _observe_requests(app: FastAPI, metrics: ServiceMetrics) -> None:
    """Request ids, access lines and measures on every request; /metrics serves them."""

    @app.middleware("http")
    async def observe(request: Request, call_next: Any) -> Any:
        """Each request: its id (answered, logged, carried by the jobs it queues), its
        access line and its measures (by route template, not path: ids in paths would
        make a series per submission)."""
        rid = new_request_id(request.headers.get(REQUEST_ID_HEADER))
        token = request_id.set(rid)
        started = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            response.headers[REQUEST_ID_HEADER] = rid
            return response
        finally:
            seconds = time.perf_counter() - started
            route = route_template(request.scope)
            metrics.observe_request(route, request.method, status, seconds)
            access.info(
                "%s %s %s",
                request.method,
                request.url.path,
                status,
                extra={
                    "method": request.method,
                    "path": request.url.path,
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 2),
                    "client": request.client.host if request.client else None,
                },
            )
            request_id.reset(token)

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics(request: Request) -> Response:
        """The Prometheus text format (docs/operations.md, "Monitoring")."""
        cursor = request.app.state.wh.cursor()
        try:
            jobs = request.app.state.jobs
            body = metrics.exposition(cursor, jobs.pending(), jobs.alive())
        finally:
            cursor.close()
        return Response(body, media_type=CONTENT_TYPE_LATEST)


def _answer_errors(app: FastAPI) -> None:
    """Errors as one JSON body: {"detail": ..., "problems": [...]}."""

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


def _include_routes(app: FastAPI) -> None:
    """The API's routers under API_PREFIX, the pages and the static files."""
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
        backups,
    ):
        app.include_router(module.router, prefix=API_PREFIX)
    app.include_router(web_pages.router)
    app.include_router(web_report.router)
    app.include_router(web_rounds.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
