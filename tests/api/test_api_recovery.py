"""Killing the server mid-job loses nothing: unfinished jobs resume (or fail cleanly) when
the server starts again, and a job never ingests its file twice."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from service_helpers import submission_bytes

from proforma.app import scoring
from proforma.app.api.auth import add_user
from proforma.app.api.job_queue import MAX_ATTEMPTS
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import connect


def _job(
    wh,
    user_id: int,
    name: str,
    path: Path,
    status: str,
    *,
    attempts: int = 0,
    submission_id: int | None = None,
) -> int:
    return wh.scalar(
        """
        INSERT INTO service.jobs (user_id, model_name, family, metadata, upload_path, upload_bytes,
            upload_sha256, status, attempts, submission_id, created_at)
        VALUES (?, ?, 'gaussian', '{}', ?, 1, 'x', ?, ?, ?, now()::TIMESTAMP) RETURNING job_id
        """,
        [user_id, name, str(path), status, attempts, submission_id],
    )


def test_unfinished_jobs_resume_on_start(panel: Settings) -> None:
    """Jobs left in every unfinished state by a dead server, as the warehouse records them."""
    uploads = Path(panel.upload_dir)
    uploads.mkdir(parents=True)
    wh = connect(panel)
    user, _ = add_user(wh, "alice")
    files = {}
    for i, name in enumerate(["queued", "validating", "ingested", "scoring", "tired", "lost"]):
        files[name] = uploads / f"{name}.parquet"
        files[name].write_bytes(submission_bytes(wh, seed=i))
    files["lost"].unlink()
    jobs = {
        "queued": _job(wh, user.user_id, "m-queued", files["queued"], "queued"),
        "validating": _job(
            wh, user.user_id, "m-validating", files["validating"], "validating", attempts=1
        ),
        "tired": _job(
            wh, user.user_id, "m-tired", files["tired"], "validating", attempts=MAX_ATTEMPTS
        ),
        "lost": _job(wh, user.user_id, "m-lost", files["lost"], "queued"),
    }
    # killed after the ingest committed but before the job row said so
    jobs["ingested"] = _job(
        wh, user.user_id, "m-ingested", files["ingested"], "validating", attempts=1
    )
    scoring.ingest_parquet(
        wh, files["ingested"], "m-ingested", metadata={"service_job_id": jobs["ingested"]}
    )
    # killed while scoring: the submission exists, no score run includes it yet
    jobs["scoring"] = _job(wh, user.user_id, "m-scoring", files["scoring"], "scoring", attempts=1)
    sid = scoring.ingest_parquet(
        wh, files["scoring"], "m-scoring", metadata={"service_job_id": jobs["scoring"]}
    )
    wh.execute("UPDATE service.jobs SET submission_id = ? WHERE job_id = ?", [sid, jobs["scoring"]])
    wh.close()

    service = create_app(panel)
    with TestClient(service) as client:
        cur = service.state.wh.cursor()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            states = dict(cur.fetchall("SELECT model_name, status FROM service.jobs"))
            if all(s in ("done", "failed") for s in states.values()):
                break
            time.sleep(0.2)
        assert states == {
            "m-queued": "done",
            "m-validating": "done",
            "m-ingested": "done",
            "m-scoring": "done",
            "m-tired": "failed",
            "m-lost": "failed",
        }, states
        messages = dict(cur.fetchall("SELECT model_name, message FROM service.jobs"))
        assert f"stopped {MAX_ATTEMPTS} times" in messages["m-tired"]
        assert "lost before validation" in messages["m-lost"]
        counts = dict(
            cur.fetchall(
                "SELECT name, count(*) FROM eval.submissions WHERE name LIKE 'm-%' GROUP BY name"
            )
        )
        assert counts == {"m-queued": 1, "m-validating": 1, "m-ingested": 1, "m-scoring": 1}
        board = client.get("/api/v1/leaderboards/full").json()["rows"]
        assert {"m-queued", "m-validating", "m-ingested", "m-scoring"} <= {
            r["model"] for r in board
        }
        assert list(Path(panel.upload_dir).glob("*")) == []
        cur.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(port: int, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from proforma.app.cli import main; main()",
            "serve",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        env=os.environ.copy(),
        start_new_session=True,
    )


def _wait_up(base: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("the server did not come up")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_kill_mid_scoring_and_restart(panel: Settings, tmp_path: Path) -> None:
    """A real server process killed with SIGKILL while the job runs; a new one finishes it."""
    wh = connect(panel)
    _, token = add_user(wh, "alice")
    data = submission_bytes(wh)
    wh.close()
    port, log = _free_port(), tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    proc = _serve(port, log)
    try:
        _wait_up(base, proc)
        r = httpx.post(
            f"{base}/api/v1/submissions",
            headers=headers,
            timeout=30,
            data={"name": "survivor", "training_cutoff": "2009Q4", "leakage_statement": "none"},
            files={"file": ("f.parquet", data)},
        )
        assert r.status_code == 202, r.text
        job_id = r.json()["job_id"]
        seen = "queued"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen = httpx.get(f"{base}/api/v1/jobs/{job_id}", headers=headers, timeout=10).json()[
                "status"
            ]
            if seen in ("scoring", "done", "failed"):
                break
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        assert seen != "failed"

        proc = _serve(port, log)
        _wait_up(base, proc)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            job = httpx.get(f"{base}/api/v1/jobs/{job_id}", headers=headers, timeout=10).json()
            if job["status"] in ("done", "failed"):
                break
            time.sleep(0.2)
        assert job["status"] == "done", (seen, job, log.read_text()[-2000:])
        subs = httpx.get(f"{base}/api/v1/submissions", timeout=10).json()["rows"]
        assert [s["name"] for s in subs if s["name"] == "survivor"] == ["survivor"]
        board = httpx.get(f"{base}/api/v1/leaderboards/full", timeout=10).json()["rows"]
        assert "survivor" in {row["model"] for row in board}
        assert json.dumps(job["score_runs"])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
