"""Monitoring (issue 50): /metrics scraped and parsed by Prometheus' own text parser;
request ids answered and carried into the JSON access and job log lines; /health lists
every failing part, a round resolution that failed as a whole included."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families
from service_helpers import Api, submission_bytes

from proforma.app.server.logs import JsonFormatter, RequestIdFilter


def _scrape(api: Api) -> dict[str, dict[tuple, float]]:
    """{metric family: {(sample name, sorted labels): value}} from GET /metrics."""
    answer = api.client.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain; version=")
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(answer.text):
        samples = out.setdefault(family.name, {})
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.fixture
def lines() -> Iterator[list[dict]]:
    """The JSON lines the service's loggers write while the test runs (the handler
    `proforma serve` installs, on the project's loggers only, removed after)."""
    records: list[dict] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(json.loads(self.format(record)))

    handler = Collect()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("proforma")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_metrics_in_the_prometheus_text_format(api: Api, lines: list[dict]) -> None:
    c = api.client
    assert c.get("/api/v1/health").status_code == 200
    assert c.get("/api/v1/submissions/999").status_code == 404
    refused = c.post("/api/v1/query", json={"sql": "DELETE FROM metrics"})
    assert refused.status_code == 400
    upload = api.upload(submission_bytes(api.wh), name="watched")
    assert upload.status_code == 202
    given = upload.headers["X-Request-ID"]
    assert api.wait(upload.json()["job_id"])["status"] == "done"
    mine = c.get("/api/v1/health", headers={"X-Request-ID": "probe-42"})
    assert mine.headers["X-Request-ID"] == "probe-42"
    unsafe = c.get("/api/v1/health", headers={"X-Request-ID": "a b\nc"})
    assert unsafe.headers["X-Request-ID"] != "a b\nc" and len(unsafe.headers["X-Request-ID"]) == 32

    m = _scrape(api)
    requests = m["proforma_http_requests"]
    health = (("method", "GET"), ("route", "/api/v1/health"), ("status", "200"))
    assert requests[("proforma_http_requests_total", health)] >= 3
    # routes are templates: the 404 of one submission is not a series of its own
    by_route = {dict(k[1])["route"] for k in requests}
    assert "/api/v1/submissions/{submission_id}" in by_route
    assert not any("999" in r for r in by_route)
    latency = m["proforma_http_request_duration_seconds"]
    count = latency[
        (
            "proforma_http_request_duration_seconds_count",
            (("method", "GET"), ("route", "/api/v1/health")),
        )
    ]
    inf = latency[
        (
            "proforma_http_request_duration_seconds_bucket",
            (("le", "+Inf"), ("method", "GET"), ("route", "/api/v1/health")),
        )
    ]
    assert count == inf >= 3
    assert (
        m["proforma_console_refusals"][("proforma_console_refusals_total", (("status", "400"),))]
        == 1
    )
    assert (
        m["proforma_scoring_pass_duration_seconds"][
            ("proforma_scoring_pass_duration_seconds_count", ())
        ]
        >= 1
    )
    assert (
        m["proforma_publication_duration_seconds"][
            ("proforma_publication_duration_seconds_count", ())
        ]
        >= 2
    )  # at the start and after the scoring pass
    assert m["proforma_job_queue_depth"][("proforma_job_queue_depth", ())] == 0
    assert (
        m["proforma_job_queue_oldest_age_seconds"][("proforma_job_queue_oldest_age_seconds", ())]
        == 0
    )
    assert m["proforma_job_worker_up"][("proforma_job_worker_up", ())] == 1
    assert m["proforma_jobs_finished"][("proforma_jobs_finished_total", (("status", "done"),))] == 1
    assert 0 <= m["proforma_snapshot_age_seconds"][("proforma_snapshot_age_seconds", ())] < 600
    assert m["proforma_round_resolutions"] == {
        ("proforma_round_resolutions_total", (("outcome", "ok"),)): 0,
        ("proforma_round_resolutions_total", (("outcome", "failed"),)): 0,
    }
    assert m["proforma_scoring_failures"][("proforma_scoring_failures_total", ())] == 0

    # the access line of the upload and its job's lines carry one request id
    access = [x for x in lines if x["logger"] == "proforma.access"]
    assert {"method", "route", "status", "duration_ms", "request_id"} <= set(access[0])
    upload_line = next(x for x in access if x["request_id"] == given)
    assert upload_line["route"] == "/api/v1/submissions" and upload_line["status"] == 202
    job_lines = [x for x in lines if x["logger"] == "proforma.jobs" and "job_id" in x]
    assert {x["status"] for x in job_lines if x["request_id"] == given} == {"queued", "done"}
    assert any(x["request_id"] == "probe-42" for x in access)


def test_health_lists_every_failing_part(api: Api) -> None:
    h = api.client.get("/api/v1/health").json()
    assert h["status"] == "ok" and h["failing"] == [] and h["worker"]["status"] == "ok"
    # a round resolution that fails as a whole (the panel's values gone meanwhile)
    admin = api.auth(api.admin_token)
    kind = "VIEW" if api.wh.catalog_kind("panel.values") == "view" else "TABLE"
    wh = api.wh
    wh.execute(f"ALTER {kind} panel.values RENAME TO values_away")
    wh.close()
    failed = api.client.post("/api/v1/rounds/resolve", headers=admin)
    assert failed.status_code >= 400
    h = api.client.get("/api/v1/health").json()
    assert h["status"] == "degraded" and h["failing"] == ["rounds"]
    assert h["rounds"]["status"] == "failing"
    assert "panel is not built" in h["rounds"]["last_failure"]["error"]
    m = _scrape(api)
    assert (
        m["proforma_round_resolutions"][
            ("proforma_round_resolutions_total", (("outcome", "failed"),))
        ]
        == 1
    )
    # a resolution that succeeds clears it
    wh = api.wh
    wh.execute(f"ALTER {kind} panel.values_away RENAME TO values")
    wh.close()
    assert api.client.post("/api/v1/rounds/resolve", headers=admin).status_code == 200
    h = api.client.get("/api/v1/health").json()
    assert h["status"] == "ok" and h["rounds"]["status"] == "ok"
    # a part that cannot be read at all is failing too, the others still reported
    wh = api.wh
    wh.execute("ALTER TABLE service.scoring_passes RENAME TO scoring_passes_away")
    wh.close()
    h = api.client.get("/api/v1/health").json()
    assert h["failing"] == ["scoring"] and "scoring" in h["errors"]
    assert h["snapshot"]["status"] == "ok"
