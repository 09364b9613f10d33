"""The report is public (/report): it never shows an upload's exact numbers (issue 47,
item 2; docs/service.md, "The truth: threat model"): its runs hold the in-house models
and reference baselines only, whatever the warehouse scored beside them."""

from __future__ import annotations

from service_helpers import Api, submission_bytes

from proforma.app.report import data


def test_the_report_reads_no_upload(api: Api) -> None:
    r = api.upload(submission_bytes(api.wh), name="someone")
    job = api.wait(r.json()["job_id"])
    assert job["status"] == "done", job
    wh = api.wh
    upload = job["submission_id"]
    scored = wh.fetchall(
        "SELECT score_run_id FROM eval.score_runs WHERE list_contains(submission_ids, ?)",
        [upload],
    )
    assert scored  # the warehouse scored it
    runs = data.latest_runs(wh)
    assert runs
    for run in runs:
        assert upload not in run.submission_ids
        assert not [k for k in run.metrics if k[0] == upload]
        assert not [k for k in run.dm if upload in k[:2]]
        # the reference baselines stay
        assert run.submission_ids and run.metrics
