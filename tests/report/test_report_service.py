"""The DM reference (`against`) on leaderboards, the paper's star convention, and /report."""

from __future__ import annotations

import numpy as np
import pytest
from fastapi.testclient import TestClient
from scoring_fixtures import forecasts_from, make_panel, truth_cells

from proforma.app import scoring
from proforma.app.flows.warehouse import prepare
from proforma.app.report.data import dm_mark, figure_marker
from proforma.app.scoring.leaderboard import dm_stars
from proforma.app.server.main import create_app
from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import connect
from proforma.contracts.errors import UserError


def test_star_convention():
    # reference better (statistic favours it): stars by level; comparator better: dagger at 1%
    assert [dm_mark(-2.0, p) for p in (0.005, 0.03, 0.08, 0.2)] == ["***", "**", "*", ""]
    assert [dm_mark(+2.0, p) for p in (0.005, 0.03)] == ["†", ""]
    assert dm_mark(None, None) == "" and dm_stars(float("nan"), False) == ""
    # Figure 1's markers: one level (5%), * reference better, dagger comparator better
    assert [figure_marker(s, p) for s, p in ((-3, 0.01), (3, 0.04), (3, 0.06), (None, 0.01))] == [
        "*",
        "†",
        "",
        "",
    ]


@pytest.fixture
def served(settings, tmp_path, monkeypatch):
    for key, value in (
        ("PUBLIC_SNAPSHOT", "public.duckdb"),
        ("UPLOAD_DIR", "uploads"),
        ("REPORT_DIR", "report"),
    ):
        monkeypatch.setenv(f"PROFORMA_{key}", str(tmp_path / value))
    get_settings.cache_clear()
    wh = connect()
    prepare(wh)
    make_panel(wh, n_firms=8)
    cells = truth_cells(wh)
    rng = np.random.default_rng(3)
    a = cells["actual"].to_numpy()
    for name, noise in (("good", 0.05), ("fair", 0.3), ("poor", 0.9)):
        scoring.ingest_forecasts(wh, name, forecasts_from(cells, a + rng.normal(0, noise, len(a))))
    scoring.score(wh, "full", baselines=False, coherence=False)
    wh.close()
    with TestClient(create_app(get_settings(), start_jobs=False)) as client:
        yield client


def test_against_names_the_dm_reference_in_api_page_and_python(served):
    # per horizon (the pooled test needs more than the panel's 20 quarters at h = 20)
    board = served.get(
        "/api/v1/leaderboards/full", params={"against": "poor", "by": "horizon"}
    ).json()
    rows = {r["model"]: r for r in board["rows"] if r["horizon"] == 1}
    assert "dm_vs_leader" not in rows["good"] and rows["poor"]["dm_vs_reference"] is None
    assert rows["poor"]["sig"] == ""
    for name in ("good", "fair"):  # both beat the reference: positive statistic, dagger at 1%
        r = rows[name]
        assert r["dm_vs_reference"] > 0 and r["sig"] == dm_stars(r["p_value"], True)
    leader = {
        r["model"]: r
        for r in served.get("/api/v1/leaderboards/full", params={"by": "horizon"}).json()["rows"]
        if r["horizon"] == 1
    }
    assert leader["good"]["dm_vs_leader"] is None and leader["poor"]["dm_vs_leader"] < 0
    assert leader["poor"]["sig"] == dm_stars(leader["poor"]["p_value"], False)
    bad = served.get("/api/v1/leaderboards/full", params={"against": "nobody"})
    assert bad.status_code == 400 and "not scored" in bad.json()["detail"]
    assert "good, fair, poor" in bad.json()["detail"]
    page = served.get("/", params={"against": "fair"}).text
    assert "DM against" in page and "against fair" in page and "DM vs reference" in page
    wh = connect(read_only=False)
    try:
        with pytest.raises(UserError, match="not scored"):
            scoring.leaderboard(wh, "full", against="nobody")
        table = scoring.leaderboard(wh, "full", against="fair")
        assert table.schema.metadata[b"dm_reference"] == b"fair"
    finally:
        wh.close()


def test_report_is_served_from_the_report_folder(served):
    missing = served.get("/report/")
    assert missing.status_code == 404 and "proforma report" in missing.text
    # the folder's URL, so the index's relative links (figure1.png) resolve under /report/
    moved = served.get("/report", follow_redirects=False)
    assert moved.status_code == 308 and moved.headers["location"] == "/report/"
    folder = get_settings().report_dir
    folder.mkdir(parents=True)
    (folder / "index.html").write_text("<html>exhibits</html>")
    (folder / "table1_headline.csv").write_text("model,r2\n")
    assert served.get("/report/").text == "<html>exhibits</html>"
    assert served.get("/report").url.path == "/report/"
    assert served.get("/report/table1_headline.csv").text == "model,r2\n"
    for name in ("nope.csv", "..%2Fwarehouse.duckdb", "warehouse.duckdb", ".env"):
        r = served.get(f"/report/{name}")
        assert r.status_code == 404 and "detail" in r.json()
