"""The restore drill (issue 50): serve, upload, open and resolve a round, back up while
serving, destroy, restore elsewhere; every submission, file, score, user, token and round
is back, the boards are identical, and the restored service takes and scores an upload.
Then the refusals: a damaged, an incomplete and a tampered backup, an occupied target."""

from __future__ import annotations

import io
import json
import shutil
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from proforma.app.api.auth import add_user
from proforma.app.flows.backup import server_key_path
from proforma.app.flows.restore import restore_backup, verify_backup
from proforma.app.flows.warehouse import prepare
from proforma.app.rounds.store import close_round
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import connect
from tests.api.service_helpers import submission_bytes
from tests.ops.ops_helpers import upload_and_wait
from tests.rounds.rounds_helpers import grow, open_tiny_round

#: What must come back: (table, its key columns) compared row for row.
KEPT = {
    "eval.submissions": "submission_id",
    "eval.submission_files": "submission_id",
    "eval.score_runs": "score_run_id",
    "eval.metric_rows": "ALL",
    "service.users": "user_id",
    "service.tokens": "token_id",
    "service.jobs": "job_id",
    "service.disclosure_key": "ALL",
    "rounds.rounds": "round_id",
    "rounds.submissions": "submission_id",
    "rounds.forecasts": "ALL",
    "rounds.truth": "ALL",
    "rounds.resolutions": "resolution_id",
    "rounds.metrics": "ALL",
    "raw.vintages": "ingest_id",
}


def _point(root: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Every path of the service under `root` (the environment, as a deployment sets it)."""
    for name, value in {
        "WAREHOUSE": root / "warehouse.duckdb",
        "UPLOAD_DIR": root / "uploads",
        "PUBLIC_SNAPSHOT": root / "public.duckdb",
        "REPORT_DIR": root / "report",
        "TEMP_DIRECTORY": root / "tmp",
        "CACHE_DIR": root / "cache",
    }.items():
        monkeypatch.setenv(f"PROFORMA_{name}", str(value))
    monkeypatch.setenv("PROFORMA_PUBLIC_MIN_CELLS", "5")
    get_settings.cache_clear()
    return get_settings()


def _rows(settings: Settings) -> dict[str, str]:
    """Each kept table's rows, as text (a NaN score equals itself there)."""
    wh = connect(settings, read_only=True)
    try:
        return {t: repr(wh.fetchall(f"SELECT * FROM {t} ORDER BY {k}")) for t, k in KEPT.items()}
    finally:
        wh.close()


def _boards(client: TestClient) -> dict[str, Any]:
    index = client.get("/api/v1/leaderboards").json()
    out: dict[str, Any] = {"index": index, "round": client.get("/api/v1/rounds/2010Q4").json()}
    for fp in index["footprints"]:
        out[fp["footprint"]] = client.get(fp["url"]).json()
    out["submissions"] = client.get("/api/v1/submissions").json()
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*")) if p.is_file()}


def test_the_restore_drill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = _point(tmp_path / "site-a", monkeypatch)
    wh = connect(first)
    prepare(wh)
    open_tiny_round(wh, first.warehouse.parent / "rounds")
    _, admin = add_user(wh, "admin", admin=True)
    _, alice = add_user(wh, "alice")
    wh.close()
    cells = pq.read_table(first.warehouse.parent / "rounds" / "2010Q4" / "cells__2010Q4.parquet")
    entry = cells.append_column("prediction", pa.array([0.1] * cells.num_rows))
    buf = io.BytesIO()
    pq.write_table(entry, buf)
    with TestClient(create_app(first)) as client:  # alice enters the round
        answer = client.post(
            "/api/v1/rounds/2010Q4/submissions",
            headers={"Authorization": f"Bearer {alice}"},
            data={"name": "alice-round"},
            files={"file": ("r.parquet", buf.getvalue(), "application/octet-stream")},
        )
        assert answer.status_code == 201, answer.text
    wh = connect(first)  # the quarters arrive (a writer: the server is stopped)
    close_round(wh, "2010Q4")
    grow(wh, "2011Q2")
    upload = submission_bytes(wh, seed=5)
    wh.close()

    backup = tmp_path / "backups" / "drill"
    with TestClient(create_app(first)) as client:
        upload_and_wait(client, alice, upload, "alice static")
        admin_auth = {"Authorization": f"Bearer {admin}"}
        resolved = client.post("/api/v1/rounds/resolve", headers=admin_auth)
        assert resolved.status_code == 200 and resolved.json()["cells_new"] > 0
        # a user's token is refused, the admin's and the operator key's are taken
        refused = client.post(
            "/api/v1/backups",
            json={"folder": str(backup)},
            headers={"Authorization": f"Bearer {alice}"},
        )
        assert refused.status_code == 403 and not backup.exists()
        wrong_key = client.post(
            "/api/v1/backups",
            json={"folder": str(backup)},
            headers={"X-Proforma-Server-Key": "not the key"},
        )
        assert wrong_key.status_code == 403
        made = client.post(
            "/api/v1/backups",
            json={"folder": str(backup)},
            headers={"X-Proforma-Server-Key": server_key_path(first).read_text()},
        )
        assert made.status_code == 201, made.text
        assert made.json()["requested_by"] == "key" and made.json()["files"] >= 4
        again = client.post("/api/v1/backups", json={"folder": str(backup)}, headers=admin_auth)
        assert again.status_code == 400 and "not an empty folder" in again.json()["detail"]
        before = _boards(client)
        assert "alice static" in json.dumps(before["submissions"])
    assert not server_key_path(first).exists()  # the key goes with the server
    rows = _rows(first)
    store = _files(first.warehouse.with_name("warehouse.duckdb.uploads"))
    rounds_inputs = sorted(
        p.relative_to(first.warehouse.parent / "rounds")
        for p in (first.warehouse.parent / "rounds").rglob("*")
    )
    shutil.rmtree(tmp_path / "site-a")  # destroyed

    second = _point(tmp_path / "site-b", monkeypatch)
    manifest = verify_backup(backup)
    restored = restore_backup(backup, second)
    assert restored.manifest == manifest and restored.migrations == []
    assert _rows(second) == rows
    assert _files(second.warehouse.with_name("warehouse.duckdb.uploads")) == store
    assert rounds_inputs == sorted(
        p.relative_to(second.warehouse.parent / "rounds")
        for p in (second.warehouse.parent / "rounds").rglob("*")
    )
    wh = connect(second, read_only=True)  # the scoring macros came back with the tables
    assert wh.scalar("SELECT round(eval.norm_cdf(0.0), 6)") == 0.5
    assert wh.scalar("SELECT qlabel(qord(DATE '2010-12-31'))") == "2010Q4"
    wh.close()
    with TestClient(create_app(second)) as client:
        deadline = time.monotonic() + 60
        while client.get("/api/v1/health").json()["snapshot"]["status"] == "missing":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert _boards(client) == before
        me = client.get("/api/v1/users/me", headers={"Authorization": f"Bearer {alice}"})
        assert me.status_code == 200 and me.json()["name"] == "alice"  # the token works
        upload_and_wait(client, alice, submission_bytes_from(client, seed=9), "alice after restore")


def submission_bytes_from(client: TestClient, seed: int) -> bytes:
    app_wh = client.app.state.wh.cursor()  # type: ignore[attr-defined]
    try:
        return submission_bytes(app_wh, seed=seed)
    finally:
        app_wh.close()
