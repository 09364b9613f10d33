"""A footprint frozen through the API from an uploaded submission (kept in the upload
store, its cells in no table) holds the upload's cells, and the queued scoring ranks the
upload on it (what bench/compose_check.py does in the Docker image)."""

from __future__ import annotations

import time

from service_helpers import Api, submission_bytes


def test_a_footprint_frozen_from_an_upload_ranks_it(api: Api) -> None:
    c = api.client
    job = api.wait(api.upload(submission_bytes(api.wh), name="frozen").json()["job_id"])
    assert job["status"] == "done", job
    sid = job["submission_id"]
    created = c.post(
        "/api/v1/footprints",
        json={"name": "frozen-on-it", "submissions": [sid], "description": "its cells"},
        headers=api.auth(api.admin_token),
    )
    assert created.status_code == 201, created.text
    cells = api.wh.scalar("SELECT n_cells FROM eval.footprints WHERE name = 'frozen-on-it'")
    assert cells and cells > 0
    rows: list = []
    for _ in range(300):
        answer = c.get("/api/v1/leaderboards/frozen-on-it")
        if answer.status_code == 200:
            rows = answer.json()["rows"]
            break
        time.sleep(0.1)
    assert "frozen" in {row["model"] for row in rows}
