"""Upgrades from every earlier release (issue 50): each small warehouse an earlier release
made (tests/upgrade/fixtures/, made by make_fixture.py with that release's code) opens
with the current code, migrates, rescores, takes an upload through the API with the
release's own token, and loses nothing: submissions, their files, users, tokens, jobs.
Its uploads score as the release scored them (the scoring rules did not change)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from proforma.app import scoring
from proforma.app.flows.warehouse import prepare
from proforma.app.scoring.submissions.store import stored_file
from proforma.app.server.main import create_app
from proforma.app.store.migrations import discover, status
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import Warehouse, connect
from tests.api.service_helpers import submission_bytes
from tests.ops.ops_helpers import upload_and_wait

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("*.tar.xz"))


def _open(fixture: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, dict]:
    with tarfile.open(fixture) as tar:
        tar.extractall(root / "data", filter="data")
    for name, value in {
        "WAREHOUSE": root / "data" / "warehouse.duckdb",
        "UPLOAD_DIR": root / "data" / "uploads",
        "PUBLIC_SNAPSHOT": root / "data" / "public.duckdb",
        "REPORT_DIR": root / "report",
        "TEMP_DIRECTORY": root / "tmp",
        "CACHE_DIR": root / "cache",
    }.items():
        monkeypatch.setenv(f"PROFORMA_{name}", str(value))
    monkeypatch.setenv("PROFORMA_PUBLIC_MIN_CELLS", "5")
    get_settings.cache_clear()
    return get_settings(), json.loads((root / "data" / "fixture.json").read_text())


def _kept(wh: Warehouse) -> dict[str, list[list[Any]]]:
    def rows(sql: str) -> list[list[Any]]:
        return [list(r) for r in wh.fetchall(sql)]

    return {
        "submissions": rows(
            "SELECT submission_id, name, checksum FROM eval.submissions ORDER BY 1"
        ),
        "users": rows("SELECT user_id, name, is_admin FROM service.users ORDER BY 1"),
        "tokens": rows(
            "SELECT token_id, user_id, revoked_at IS NULL FROM service.tokens ORDER BY 1"
        ),
        "jobs": rows("SELECT job_id, status, submission_id FROM service.jobs ORDER BY 1"),
    }


def _scores(wh: Warehouse) -> dict[tuple[str, int], list[float]]:
    rows = wh.fetchall(
        "SELECT r.footprint_name, m.submission_id, m.n, m.mse, m.crps FROM eval.metrics m "
        "JOIN eval.score_runs r USING (score_run_id) WHERE m.level = 'global' AND "
        "r.score_run_id IN (SELECT max(score_run_id) FROM eval.score_runs GROUP BY "
        "footprint_name)"
    )
    return {(fp, sid): [n, mse, crps] for fp, sid, n, mse, crps in rows}


def _same(a: dict, b: dict, rel: float) -> None:
    """Two {key: [n, mse, crps]} maps agree (n exactly, the rest within `rel`; None alike)."""
    assert set(a) == set(b)
    for key in a:
        assert a[key][0] == b[key][0], key
        for x, y in zip(a[key][1:], b[key][1:], strict=True):
            assert (x is None) == (y is None) and (x is None or x == pytest.approx(y, rel=rel)), key


@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.name.split(".")[0] for f in FIXTURES])
def test_an_earlier_release_s_warehouse_upgrades_and_loses_nothing(
    fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings, made = _open(fixture, tmp_path, monkeypatch)
    wh = connect(settings)
    try:
        pending = [s.version for s in status(wh) if s.status == "pending"]
        assert pending == [m.version for m in discover() if m.version > made["schema_version"]]
        assert not [s for s in status(wh) if s.status in ("edited", "missing")]
        prepare(wh)
        states = status(wh)
        assert {s.status for s in states} == {"applied"} and not any(s.legacy for s in states)
        kept = _kept(wh)
        for key in ("submissions", "users", "tokens", "jobs"):
            assert kept[key] == made[key], key
        for sid, _file, rows, size in made["files"]:
            record = stored_file(wh, sid)  # there and intact
            assert record is not None and (record["rows"], record["bytes"]) == (rows, size)
        # the release's scores still read, then every footprint is rescored under the
        # current SQL: the uploads score as the release scored them
        recorded = {(fp, sid): [n, mse, crps] for fp, sid, n, mse, crps in made["scores"]}
        _same(_scores(wh), recorded, rel=1e-12)
        footprints = sorted({fp for fp, _ in recorded})
        for footprint in footprints:
            scoring.score(wh, footprint=footprint)
        rescored = _scores(wh)
        uploads = {sid for sid, name, _ in made["submissions"] if name.startswith("upload")}
        _same(
            {k: v for k, v in rescored.items() if k[1] in uploads},
            {k: v for k, v in recorded.items() if k[1] in uploads},
            rel=1e-9,
        )
        upload = submission_bytes(wh, seed=7)
    finally:
        wh.close()
    with TestClient(create_app(settings)) as client:  # the release's token still works
        job = upload_and_wait(client, made["token"], upload, "upload after the upgrade")
        assert job["submission_id"] > max(sid for sid, _, _ in made["submissions"])
        after = _kept(client.app.state.wh.cursor())  # type: ignore[attr-defined]
    for key in ("submissions", "users", "tokens", "jobs"):
        assert after[key][: len(made[key])] == made[key], key
