"""The CLI's reads while a server holds the warehouse (DuckDB admits one writing process
and no reader beside it): `leaderboard`, `footprint list` and `db status` ask the running
server (its record beside the warehouse) and say so; `report` says precisely why it cannot
run; a holder without a record keeps the plain lock message."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from service_helpers import submission_bytes

from proforma.app.api.auth import add_user
from proforma.app.cli.common import server_record, server_record_path
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`proforma ARGS` in another process (the server's lock is per process)."""
    return subprocess.run(
        [sys.executable, "-m", "proforma.app.cli", *args],
        cwd=REPO,
        env={**os.environ, "COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def serving(panel: Settings) -> Iterator[tuple[str, object, Path]]:
    """A server holding the warehouse, as `proforma serve` runs it (with its record)."""
    app = create_app(panel)
    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    base = f"http://127.0.0.1:{port}"
    with server_record("127.0.0.1", port) as record:
        thread = threading.Thread(target=srv.run, daemon=True)
        thread.start()
        for _ in range(600):
            try:
                if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        try:
            yield base, app, record
        finally:
            srv.should_exit = True
            thread.join(30)
    assert not record.exists()  # removed when the server stops


def test_reads_answer_beside_the_server(serving) -> None:
    base, app, record = serving
    assert json.loads(record.read_text())["pid"] == os.getpid()
    wh = app.state.wh.cursor()
    _, token = add_user(wh, "cli")
    upload = submission_bytes(wh, seed=5, noise=0.2)
    wh.close()
    r = httpx.post(
        f"{base}/api/v1/submissions",
        headers={"Authorization": f"Bearer {token}"},
        data={"name": "served-model", "training_cutoff": "2009Q4", "leakage_statement": "none"},
        files={"file": ("a.parquet", upload)},
        timeout=30,
    )
    assert r.status_code == 202, r.text
    for _ in range(600):
        job = httpx.get(
            f"{base}{r.json()['status_url']}", headers={"Authorization": f"Bearer {token}"}
        ).json()
        if job["status"] in ("done", "failed"):
            break
        time.sleep(0.1)
    assert job["status"] == "done", job

    board = cli("leaderboard", "-f", "full")
    assert board.returncode == 0, board.stderr
    assert "served-model" in board.stdout and "squared track, full@" in board.stdout
    assert f"read from the running server {base} (pid {os.getpid()})" in board.stderr
    as_csv = cli("leaderboard", "-f", "full", "--track", "density", "--format", "csv")
    assert as_csv.returncode == 0, as_csv.stderr
    assert as_csv.stdout.startswith("rank,") and "served-model" in as_csv.stdout
    missing = cli("leaderboard", "-f", "nope")
    assert missing.returncode != 0 and "No footprint 'nope'" in missing.stderr

    footprints = cli("footprint", "list")
    assert footprints.returncode == 0, footprints.stderr
    assert "full" in footprints.stdout and "read from the running server" in footprints.stderr

    status = cli("db", "status")
    assert status.returncode == 0, status.stderr
    assert "applied" in status.stdout and "main.score_runs" in status.stdout
    assert "0 pending" in status.stderr and "read from the running server" in status.stderr

    report = cli("report", "--no-figure2")
    assert report.returncode != 0
    assert f"`proforma serve` (pid {os.getpid()}) holds it for writing" in report.stderr
    assert f"{base}/report/" in report.stderr


def test_a_holder_without_a_record_keeps_the_lock_message(panel: Settings) -> None:
    """A build or a training run holds the warehouse: no server to ask, the lock says who."""
    from proforma.app.store.warehouse import connect

    wh = connect(panel)
    try:
        assert not server_record_path(panel).exists()
        board = cli("leaderboard")
        assert board.returncode != 0
        assert f"open for writing in process {os.getpid()}" in board.stderr
    finally:
        wh.close()


def test_backup_beside_the_server(serving, tmp_path: Path) -> None:
    """`proforma backup DIR` while the server holds the warehouse: the server's worker
    makes it (the command sends the operator key beside the warehouse), as it does for
    `--server URL` (the compose backup service); the backup verifies."""
    base, _app, _record = serving
    found = cli("backup", str(tmp_path / "one"))
    assert found.returncode == 0, found.stderr
    assert "done: backup" in found.stderr and f"running server {base}" in found.stderr
    named = cli("backup", str(tmp_path / "two"), "--server", base)
    assert named.returncode == 0, named.stderr
    for name in ("one", "two"):
        checked = cli("backup", "--verify", str(tmp_path / name))
        assert checked.returncode == 0 and "is whole" in checked.stderr, checked.stderr
    wrong = cli("backup", str(tmp_path / "three"), "--server", "http://127.0.0.1:9")
    assert wrong.returncode == 2 and "does not answer" in wrong.stderr
    assert not (tmp_path / "three").exists()
