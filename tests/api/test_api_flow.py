"""End to end through HTTP: upload -> job -> scores -> leaderboards, submissions,
footprints, snapshot and public SQL."""

from __future__ import annotations

import duckdb
import pytest
from service_helpers import Api, submission_bytes

from proforma.app.read.snapshot import FORBIDDEN_COLUMNS


def test_upload_scores_and_appears_everywhere(api: Api) -> None:
    c = api.client
    data = submission_bytes(api.wh)
    r = api.upload(
        data, name="model-a", description="noisy oracle", code_url="https://example.org/a"
    )
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["status"] == "queued" and body["bytes"] == len(data)
    job = api.wait(body["job_id"])
    assert job["status"] == "done", job
    assert job["report"]["valid"] is True and set(job["score_runs"]) >= {"full", "geert", "llm"}
    sid = job["submission_id"]

    board = c.get("/api/v1/leaderboards/full").json()
    models = [row["model"] for row in board["rows"]]
    assert "model-a" in models and "Seasonal random walk" in models
    family = {row["model"]: row["family"] for row in board["rows"]}
    assert family["model-a"] == "gaussian" and family["Seasonal random walk"] == "point"
    assert board["score_run"]["eval_sql_version"] and board["track"] == "squared"
    for by in ("horizon", "item", "statement"):
        rows = c.get(f"/api/v1/leaderboards/full?by={by}&track=absolute").json()["rows"]
        assert rows and all(by in row for row in rows)
    dens = c.get("/api/v1/leaderboards/full?track=density").json()["rows"]
    assert [r["model"] for r in dens] == ["model-a"]  # the baselines have no sigma
    csv = c.get("/api/v1/leaderboards/full?format=csv")
    assert csv.headers["content-type"].startswith("text/csv") and "model-a" in csv.text
    index = c.get("/api/v1/leaderboards").json()
    assert {f["footprint"] for f in index["footprints"]} >= {"full", "geert", "llm"}

    detail = c.get(f"/api/v1/submissions/{sid}").json()
    assert detail["submission"]["uploaded_by"] == "alice"
    assert detail["submission"]["stale"] is None  # made against the current panel
    assert detail["submission"]["code_url"] == "https://example.org/a"
    full = next(s for s in detail["scores"] if s["footprint"] == "full")
    assert len(full["by_horizon"]) == 20 and full["by_item"]
    assert full["pit"] == []  # an upload's PIT histogram is not public
    assert "model-a" in c.get("/api/v1/submissions?format=csv").text

    # the public snapshot was republished after scoring and holds no firm-level values
    tables = c.get("/api/v1/query/tables").json()["tables"]
    for cols in tables.values():
        assert not {col["name"] for col in cols} & FORBIDDEN_COLUMNS
    q = c.post(
        "/api/v1/query", json={"sql": "SELECT model, r2 FROM leaderboard WHERE footprint = 'full'"}
    )
    assert q.status_code == 200 and "model-a" in [row[0] for row in q.json()["rows"]]

    # pages show it
    assert "model-a" in c.get("/").text
    page = c.get(f"/submissions/{sid}").text
    assert "noisy oracle" in page and "By horizon" in page


def test_snapshot_has_no_firm_values(api: Api) -> None:
    job = api.wait(api.upload(submission_bytes(api.wh)).json()["job_id"])
    assert job["status"] == "done"
    path = api.client.app.state.settings.public_snapshot
    con = duckdb.connect(str(path), read_only=True)
    try:
        cols = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
        ).fetchall()
        names = {t for t, _ in cols}
        assert {"leaderboard", "metrics", "submissions", "footprints", "footprint_origins"} <= names
        assert not {c for _, c in cols} & FORBIDDEN_COLUMNS
        assert not names & {"forecasts", "truth", "values", "firms"}
        small = con.execute("SELECT count(*) FROM metrics WHERE n < 5").fetchall()[0][0]
        assert small == 0  # aggregates over fewer than public_min_cells cells are withheld
        # the boards' rank uncertainty (issue 49): how, the intervals and the sets, an
        # upload's as the API shows them (one disclosure, two implementations)
        assert {"uncertainty_runs", "metric_intervals", "rank_sets"} <= names
        seeds = con.execute("SELECT DISTINCT seed FROM uncertainty_runs").fetchall()
        assert seeds == [(20260049,)]
        published = dict(
            con.execute(
                "SELECT k.submission_id, k.p_best FROM rank_sets k JOIN score_runs r "
                "USING (score_run_id) WHERE r.footprint_name = 'full' AND k.track = 'squared'"
            ).fetchall()
        )
        bounds = dict(
            con.execute(
                "SELECT i.submission_id, i.lo FROM metric_intervals i JOIN score_runs r "
                "USING (score_run_id) WHERE r.footprint_name = 'full' AND i.metric = 'r2'"
            ).fetchall()
        )
    finally:
        con.close()
    rows = api.client.get("/api/v1/leaderboards/full").json()["rows"]
    # the public sets and probabilities are among the members that are not uploads, the
    # same in the API and the snapshot; an upload's are withheld (docs/service.md)
    upload = next(r for r in rows if r["submission_id"] == job["submission_id"])
    others = [r for r in rows if r["submission_id"] != job["submission_id"]]
    assert published and {r["submission_id"]: r["p_best"] for r in others} == published
    assert {r["submission_id"]: r["r2_lo"] for r in others} == pytest.approx(bounds)
    assert job["submission_id"] not in published and job["submission_id"] not in bounds
    assert upload["p_best"] is None and upload["r2_lo"] is None and upload["in_mcs"] is None
    assert sum(published.values()) == pytest.approx(1.0)  # P(best) over the non-uploads


def test_footprints_routes_and_admin_create(api: Api) -> None:
    c = api.client
    api.wait(api.upload(submission_bytes(api.wh)).json()["job_id"])
    names = {r["name"] for r in c.get("/api/v1/footprints").json()["rows"]}
    assert {"full", "geert", "llm"} <= names
    one = c.get("/api/v1/footprints/geert").json()
    assert one["versions"][0]["kind"] == "predicate"
    assert c.get("/api/v1/footprints/nope").status_code == 404
    body = {"name": "short", "predicate": "horizon <= 4", "description": "first year"}
    assert c.post("/api/v1/footprints", json=body, headers=api.auth()).status_code == 403
    r = c.post("/api/v1/footprints", json=body, headers=api.auth(api.admin_token))
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "short" and r.json()["scoring"] == "queued"
    bad = c.post(
        "/api/v1/footprints",
        json={"name": "x", "predicate": "1; DROP TABLE t"},
        headers=api.auth(api.admin_token),
    )
    assert bad.status_code == 400 and bad.json()["detail"]
    import time

    for _ in range(200):
        if c.get("/api/v1/leaderboards/short").status_code == 200:
            break
        time.sleep(0.1)
    rows = c.get("/api/v1/leaderboards/short?by=horizon").json()["rows"]
    assert {row["horizon"] for row in rows} == {1, 2, 3, 4}


def test_health_and_docs(api: Api) -> None:
    h = api.client.get("/api/v1/health").json()
    assert h["status"] == "ok" and h["schema_version"] >= 40
    spec = api.client.get("/api/v1/openapi.json").json()
    paths = set(spec["paths"])
    assert {
        "/api/v1/submissions",
        "/api/v1/query",
        "/api/v1/leaderboards/{footprint}",
        "/api/v1/jobs/{job_id}",
        "/api/v1/users/me",
        "/api/v1/footprints",
    } <= paths
    docs = api.client.get("/api/docs").text
    assert "/api/v1/submissions" in docs and "cdn" not in docs.lower()


def test_submission_outside_a_footprint_is_left_off_it(api: Api) -> None:
    """Forecasts of atq only: too few cells of the standard footprints, so it is noted as not
    on them and nobody else's common sample shrinks."""
    import io

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(submission_bytes(api.wh)))
    only_atq = table.filter(pc.equal(table["target"], "atq"))
    buf = io.BytesIO()
    pq.write_table(only_atq, buf)
    first = api.wait(api.upload(submission_bytes(api.wh), name="everything").json()["job_id"])
    assert first["status"] == "done"
    job = api.wait(api.upload(buf.getvalue(), name="atq-only").json()["job_id"])
    assert job["status"] == "done", job
    skipped = job["report"]["footprints_skipped"]
    assert {"full", "geert"} <= set(skipped) and "Not on" in job["message"]
    assert "of its cells" in skipped["full"]
    geert = {r["model"] for r in api.client.get("/api/v1/leaderboards/geert").json()["rows"]}
    assert "everything" in geert and "atq-only" not in geert
    full = {r["model"] for r in api.client.get("/api/v1/leaderboards/full").json()["rows"]}
    assert "everything" in full and "atq-only" not in full


def test_failed_publication_keeps_the_service_up(panel, monkeypatch) -> None:
    """A snapshot that cannot be published is logged; the server starts and jobs finish."""
    from fastapi.testclient import TestClient

    from proforma.app.server import main
    from proforma.contracts.errors import UserError

    def broken(*_a, **_k):
        raise UserError("disk full")

    monkeypatch.setattr(main, "publish", broken)
    with TestClient(main.create_app(panel)) as client:
        api = Api(client)
        health = client.get("/api/v1/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert health.json()["snapshot"]["status"] == "failing"
        assert "disk full" in health.json()["snapshot"]["last_failure"]["error"]
        assert client.post("/api/v1/query", json={"sql": "SELECT 1"}).status_code == 503
        job = api.wait(api.upload(submission_bytes(api.wh)).json()["job_id"])
        assert job["status"] == "done"
