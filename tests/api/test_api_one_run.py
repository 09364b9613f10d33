"""A leaderboard response is built from one score run id: a run that lands between the
lookup of the latest run and the table's query changes neither the API's table nor the
page's (their description and their rows are of the same run)."""

from __future__ import annotations

from typing import Any

import pytest
from service_helpers import Api, submission_bytes

from proforma.app.read import queries


def _newer_run_lands(api: Api, monkeypatch: pytest.MonkeyPatch, target: Any) -> None:
    """After each lookup of a score run, another (empty) run of the footprint lands."""
    real = queries.score_run

    def lookup(wh: Any, footprint: str, score_run_id: int | None = None) -> Any:
        record = real(wh, footprint, score_run_id)
        api.wh.execute(
            "INSERT INTO eval.score_runs (score_run_id, footprint_id, footprint_name, "
            "footprint_version, submission_ids, footprint_cells, n_cells, eval_sql_version, "
            "submission_checksums, started_at, finished_at, elapsed_s) "
            "SELECT (SELECT max(score_run_id) + 1 FROM eval.score_runs), any_value(footprint_id), "
            "?, 1, [], 0, 0, 'x', '{}', "
            "now(), now(), 0 FROM eval.score_runs WHERE footprint_name = ?",
            [footprint, footprint],
        )
        return record

    monkeypatch.setattr(target, "score_run", lookup)


def test_api_and_page_describe_the_run_of_their_table(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.wait(api.upload(submission_bytes(api.wh), name="model (v2)").json()["job_id"])
    from proforma.app.web import pages

    _newer_run_lands(api, monkeypatch, queries)
    body = api.client.get("/api/v1/leaderboards/geert").json()
    assert [r["model"] for r in body["rows"] if r["model"] == "model (v2)"] == ["model (v2)"]
    run = body["score_run"]["score_run_id"]
    assert run < api.wh.scalar("SELECT max(score_run_id) FROM eval.score_runs")

    api.wh.execute("DELETE FROM eval.score_runs WHERE eval_sql_version = 'x'")
    _newer_run_lands(api, monkeypatch, pages)
    page = api.client.get("/?footprint=geert").text
    assert "model (v2)" in page
