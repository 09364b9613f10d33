"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from proforma.app.flows.warehouse import prepare
from proforma.app.settings import Settings, get_settings
from proforma.app.warehouse import Warehouse, connect


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """Settings pointing every path into a temporary folder (also for CLI runs)."""
    monkeypatch.setenv("PROFORMA_WAREHOUSE", str(tmp_path / "warehouse.duckdb"))
    monkeypatch.setenv("PROFORMA_TEMP_DIRECTORY", str(tmp_path / "tmp"))
    monkeypatch.setenv("PROFORMA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("PROFORMA_MEMORY_LIMIT", "2GB")
    monkeypatch.setenv("PROFORMA_THREADS", "2")
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


@pytest.fixture
def wh(settings: Settings) -> Iterator[Warehouse]:
    """A fresh, migrated warehouse file with reference tables loaded."""
    w = connect(settings)
    prepare(w)
    yield w
    w.close()
