"""The HTML pages render, link only to local assets (no CDN), and escape user text."""

from __future__ import annotations

import re

from service_helpers import Api, submission_bytes

from proforma.app.web import STATIC_DIR, TEMPLATES_DIR


def test_no_external_assets() -> None:
    """Every script, stylesheet, image and font is served from /static."""
    for path in list(TEMPLATES_DIR.glob("*.html")) + list(STATIC_DIR.glob("*")):
        text = path.read_text()
        for url in re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", text):
            assert not re.match(r"^(https?:)?//", url), f"{path.name} loads {url}"
        assert not re.search(r"@import\s+url\(\s*['\"]?https?:", text), path.name
        assert 'fetch("http' not in text and "fetch('http" not in text, path.name


def test_pages_render_before_and_after_scoring(api: Api) -> None:
    c = api.client
    empty = c.get("/")
    assert empty.status_code == 200 and "No footprints are defined yet" in empty.text
    for path, marker in [
        ("/upload", 'id="upload-form"'),
        ("/query", 'id="query-form"'),
        ("/api/docs", "/api/v1/submissions"),
    ]:
        r = c.get(path)
        assert r.status_code == 200 and marker in r.text, path
    for asset in ("/static/app.js", "/static/charts.js", "/static/style.css"):
        assert c.get(asset).status_code == 200
    job = api.wait(
        api.upload(
            submission_bytes(api.wh), name="model (v2)", description="<script>alert('x')</script>"
        ).json()["job_id"]
    )
    page = c.get("/?footprint=geert&track=density").text
    assert 'value="geert" selected' in page and "model (v2)" in page
    assert 'id="chart-data"' in page and "sql/eval" in page
    # the board's rank uncertainty (issue 49): intervals, the confidence set and P(best)
    # on the page and in the API, an upload's withheld
    board = c.get("/?footprint=full&track=squared").text
    assert 'id="uncertainty-note"' in board and "R² ↑" in board and "MSE ↓" in board
    assert 'class="muted ci"' in board and ">MCS</span>" in board
    rows = c.get("/api/v1/leaderboards/full?track=squared").json()["rows"]
    assert {"r2_lo", "r2_hi", "p_best", "in_mcs"} <= set(rows[0])
    assert sum(bool(r["in_mcs"]) for r in rows) >= 1
    run = c.get("/api/v1/leaderboards/full").json()["score_run"]["score_run_id"]
    # the public board's probabilities and set are among the members that are not uploads
    exact = dict(
        api.wh.fetchall(
            "SELECT submission_id, p_best FROM eval.rank_sets WHERE score_run_id = ? "
            "AND track = 'squared' AND scope = 'public'",
            [run],
        )
    )
    for r in rows:
        if r["source"] == "upload":  # withheld (docs/service.md, "The truth: threat model")
            assert r["p_best"] is None and r["in_mcs"] is None and r["r2_lo"] is None
        else:
            assert r["r2_lo"] <= r["r2"] <= r["r2_hi"]
            assert r["p_best"] == exact[r["submission_id"]]
    detail = c.get(f"/submissions/{job['submission_id']}").text
    assert "<script>alert" not in detail and "&lt;script&gt;alert" in detail
    assert c.get("/submissions/999").status_code == 404
    assert "stale" not in detail
    # After a build on another raw ingest the page says why the submission is left out.
    for raw_ingest in (1, 2):
        api.wh.execute(
            "INSERT INTO meta.builds (status, sql_checksum, parameters, reg_stats, raw_ingest_id, "
            "started_at) VALUES ('succeeded', 'x', '{}', 'estimate', ?, now())",
            [raw_ingest],
        )
        if raw_ingest == 1:  # the submission was made on the first of the two builds
            api.wh.execute(
                "UPDATE eval.submissions SET build_id = (SELECT max(build_id) "
                "FROM meta.builds) WHERE submission_id = ?",
                [job["submission_id"]],
            )
    stale = c.get(f"/submissions/{job['submission_id']}").text
    assert 'class="stale"' in stale and "submit it again" in stale
    assert c.get(f"/api/v1/submissions/{job['submission_id']}").json()["submission"]["stale"]
    # unknown footprint or track falls back to the defaults instead of failing
    assert c.get("/?footprint=nope&track=nope").status_code == 200
