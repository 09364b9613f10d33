"""Helpers of the operations tests: an upload through the API, waited for until scored."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient


def wait_job(client: TestClient, job_id: int, token: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job = client.get(
            f"/api/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"}
        ).json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish")


def upload_and_wait(client: TestClient, token: str, data: bytes, name: str) -> dict[str, Any]:
    answer = client.post(
        "/api/v1/submissions",
        headers={"Authorization": f"Bearer {token}"},
        data={"name": name, "training_cutoff": "2009Q4", "leakage_statement": "none"},
        files={"file": ("f.parquet", data, "application/octet-stream")},
    )
    assert answer.status_code == 202, answer.text
    job = wait_job(client, answer.json()["job_id"], token)
    assert job["status"] == "done", job
    return job
