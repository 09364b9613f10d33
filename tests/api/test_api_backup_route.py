"""POST /api/v1/backups where it cannot be made: an app without a job worker answers 503
and makes no folder; without credentials 401 (the drill, tests/ops, covers the rest)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from proforma.app.flows.backup import server_key_path
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings


def test_no_worker_no_backup(panel: Settings, tmp_path: Path) -> None:
    folder = tmp_path / "backup"
    with TestClient(create_app(panel, start_jobs=False)) as client:
        key = server_key_path(panel).read_text()
        anonymous = client.post("/api/v1/backups", json={"folder": str(folder)})
        assert anonymous.status_code == 401
        answer = client.post(
            "/api/v1/backups", json={"folder": str(folder)}, headers={"X-Proforma-Server-Key": key}
        )
        assert answer.status_code == 503 and "not running" in answer.json()["detail"]
        health = client.get("/api/v1/health").json()
        assert health["worker"]["status"] == "off" and "worker" not in health["failing"]
    assert not folder.exists()
