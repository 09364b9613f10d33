"""Fixtures for the service tests: small limits, a tiny panel, the app under TestClient."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from service_helpers import Api, make_panel_warehouse

from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings, get_settings
from tests.conftest import temp_settings


@pytest.fixture
def api_settings(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Service settings in tmp with small limits (256 KiB uploads, 4 a day, 2 s queries)."""
    monkeypatch.setenv("PROFORMA_UPLOAD_DIR", str(tmp_path / "uploads"))
    monkeypatch.setenv("PROFORMA_PUBLIC_SNAPSHOT", str(tmp_path / "public.duckdb"))
    monkeypatch.setenv("PROFORMA_REPORT_DIR", str(tmp_path / "report"))
    monkeypatch.setenv("PROFORMA_UPLOAD_MAX_BYTES", str(256 * 1024))
    monkeypatch.setenv("PROFORMA_UPLOADS_PER_DAY", "4")
    monkeypatch.setenv("PROFORMA_QUERY_TIMEOUT_S", "2")
    monkeypatch.setenv("PROFORMA_QUERY_MAX_ROWS", "500")
    monkeypatch.setenv("PROFORMA_PUBLIC_MIN_CELLS", "5")
    # The hostile-SQL corpus runs hundreds of queries from one client in seconds; the
    # console's own bounds are tested with their defaults (test_api_console_limits.py).
    monkeypatch.setenv("PROFORMA_QUERY_RATE_PER_MIN", "1000000")
    monkeypatch.setenv("PROFORMA_QUERY_BURST", "1000000")
    get_settings.cache_clear()
    return get_settings()


@pytest.fixture(scope="session")
def panel_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated warehouse with the tiny panel, made once and copied for each test."""
    folder = tmp_path_factory.mktemp("panel-template")
    template = temp_settings(folder, "warehouse.duckdb")
    make_panel_warehouse(template)
    return template.warehouse


@pytest.fixture
def panel(api_settings: Settings, panel_template: Path) -> Settings:
    shutil.copyfile(panel_template, api_settings.warehouse)
    return api_settings


@pytest.fixture
def api(panel: Settings) -> Iterator[Api]:
    with TestClient(create_app(panel)) as client:
        yield Api(client)
