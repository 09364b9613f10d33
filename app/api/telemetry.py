"""What an operator watches (docs/operations.md, "Monitoring"): GET /metrics in the
Prometheus text format, request ids, and the structured access and job log lines.

Every live measure belongs to one app (`ServiceMetrics`, on `app.state.metrics`, with a
registry of its own: nothing is registered in prometheus_client's process-wide
registry, so two apps in one process, as in the tests, never share or clash). What the
warehouse already records (the job queue's age, round resolutions and their failures,
the public snapshot's age, scoring passes) is read from it at each scrape, so those
figures survive a restart.

A request's id is the client's `X-Request-ID` when it is a short token of safe
characters, else a new one; it is answered in the same header, written on the access
line, and carried by the jobs that request queued into their log lines.
"""

from __future__ import annotations

import contextvars
import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest

from proforma.app.store.warehouse import Warehouse
from proforma.contracts.provenance import utcnow

#: The request being served on this thread or task (None outside a request).
request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "proforma_request_id", default=None
)
REQUEST_ID_HEADER = "X-Request-ID"
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
#: Latency buckets (seconds): a page in milliseconds, an upload's receipt in seconds.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_WORK_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600)
#: The SQL console's route: its 4xx answers are its refusals (guard, rate, time limit).
CONSOLE_ROUTE = "/api/v1/query"


def new_request_id(given: str | None) -> str:
    """The client's id when it is safe to echo and log, else a fresh one."""
    if given and _SAFE_ID.match(given):
        return given
    return uuid.uuid4().hex


def route_template(scope: Mapping[str, Any]) -> str:
    """The matched route's template (`/api/v1/jobs/{job_id}`), from the request's path and
    its path parameters (ASGI's public scope); `unmatched` for a path no route took, so
    that neither ids nor stray paths make a series each."""
    if scope.get("route") is None:
        return "unmatched"
    template = str(scope.get("path", ""))
    for name, value in (scope.get("path_params") or {}).items():
        text = str(value)
        if not text:
            continue
        segment = "/" + text
        at = template.rfind(segment + "/")
        if at < 0 and template.endswith(segment):
            at = len(template) - len(segment)
        if at >= 0:
            template = template[:at] + "/{" + name + "}" + template[at + len(segment) :]
    return template


class ServiceMetrics:
    """The live measures of one app (see the module's doc)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "proforma_http_requests",
            "HTTP requests answered, by route template, method and status",
            ["route", "method", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "proforma_http_request_duration_seconds",
            "Time to answer a request, by route template and method",
            ["route", "method"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.console_refusals = Counter(
            "proforma_console_refusals",
            "SQL console queries refused (4xx: the guard, the rate or concurrency bound, "
            "the time limit), by status",
            ["status"],
            registry=r,
        )
        self.scoring = Histogram(
            "proforma_scoring_pass_duration_seconds",
            "Duration of the job worker's scoring passes",
            buckets=_WORK_BUCKETS,
            registry=r,
        )
        self.scoring_failures = Counter(
            "proforma_scoring_failures",
            "Failures in scoring passes (a submission left out, a footprint not scored)",
            registry=r,
        )
        self.publication = Histogram(
            "proforma_publication_duration_seconds",
            "Duration of publishing the public snapshot",
            buckets=_WORK_BUCKETS,
            registry=r,
        )
        self.publication_failures = Counter(
            "proforma_publication_failures",
            "Publications of the public snapshot that failed (the previous one is served)",
            registry=r,
        )
        self.backups = Counter(
            "proforma_backups",
            "Backups made by the server, by outcome",
            ["outcome"],
            registry=r,
        )

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route, method).observe(seconds)
        if route == CONSOLE_ROUTE and 400 <= status < 500:
            self.console_refusals.labels(str(status)).inc()

    def exposition(self, wh: Warehouse, pending: int, worker_alive: bool) -> bytes:
        """The text of a scrape: the live measures, then the warehouse's records."""
        recorded = CollectorRegistry(auto_describe=False)
        recorded.register(_Recorded(list(recorded_families(wh, pending, worker_alive))))
        return generate_latest(self.registry) + generate_latest(recorded)


class _Recorded:
    """A collector of metric families read once (for one scrape)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def _scalar(wh: Warehouse, table: str, sql: str, params: Any = None) -> Any:
    return wh.scalar(sql, params) if wh.table_exists(table) else None


def _age(then: Any) -> float | None:
    return None if then is None else max(0.0, (utcnow() - then).total_seconds())


def recorded_families(wh: Warehouse, pending: int, worker_alive: bool) -> Iterator[Metric]:
    """The figures the warehouse records, as metric families."""
    yield GaugeMetricFamily(
        "proforma_job_queue_depth", "Jobs waiting for or in the worker", value=pending
    )
    oldest = _scalar(
        wh,
        "service.jobs",
        "SELECT min(created_at) FROM service.jobs "
        "WHERE status IN ('queued', 'validating', 'scoring')",
    )
    yield GaugeMetricFamily(
        "proforma_job_queue_oldest_age_seconds",
        "Seconds the oldest unfinished job has waited (0: none)",
        value=_age(oldest) or 0.0,
    )
    yield GaugeMetricFamily(
        "proforma_job_worker_up", "1 while the job worker thread runs", value=int(worker_alive)
    )
    jobs = CounterMetricFamily(
        "proforma_jobs_finished", "Upload jobs finished, by status", labels=["status"]
    )
    if wh.table_exists("service.jobs"):
        for status, n in wh.fetchall(
            "SELECT status, count(*) FROM service.jobs WHERE status IN ('done', 'failed') "
            "GROUP BY ALL ORDER BY 1"
        ):
            jobs.add_metric([status], n)
    yield jobs
    published = _scalar(wh, "service.snapshots", "SELECT max(published_at) FROM service.snapshots")
    yield GaugeMetricFamily(
        "proforma_snapshot_age_seconds",
        "Seconds since the public snapshot was last published (-1: never)",
        value=-1.0 if published is None else _age(published) or 0.0,
    )
    passes = CounterMetricFamily(
        "proforma_scoring_passes_recorded",
        "Scoring passes the warehouse records, by outcome",
        labels=["outcome"],
    )
    if wh.table_exists("service.scoring_passes"):
        for ok, n in wh.fetchall(
            "SELECT ok, count(*) FROM service.scoring_passes GROUP BY ALL ORDER BY 1"
        ):
            passes.add_metric(["ok" if ok else "failed"], n)
    yield passes
    resolutions = CounterMetricFamily(
        "proforma_round_resolutions", "Round resolutions, by outcome", labels=["outcome"]
    )
    resolutions.add_metric(
        ["ok"], _scalar(wh, "rounds.resolutions", "SELECT count(*) FROM rounds.resolutions") or 0
    )
    resolutions.add_metric(
        ["failed"],
        _scalar(wh, "rounds.resolution_failures", "SELECT count(*) FROM rounds.resolution_failures")
        or 0,
    )
    yield resolutions
    yield CounterMetricFamily(
        "proforma_round_entry_failures",
        "Round entries whose cells a resolution could not score",
        value=_scalar(wh, "rounds.entry_failures", "SELECT count(*) FROM rounds.entry_failures")
        or 0,
    )
    yield GaugeMetricFamily(
        "proforma_rounds_open",
        "Rounds whose deadline has not passed",
        value=_scalar(
            wh, "rounds.rounds", "SELECT count(*) FROM rounds.rounds WHERE deadline > ?", [utcnow()]
        )
        or 0,
    )
