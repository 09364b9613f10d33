"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from proforma.app.flows.warehouse import prepare
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import Warehouse, connect


def temp_settings(folder: Path, warehouse: str = "wh.duckdb", **overrides: Any) -> Settings:
    """Settings with every path inside `folder` and a test's small resources (1 GB, 2
    threads); the one place tests build a Settings of their own (session-scoped panels
    made once, warehouses beside the `settings` fixture's). `overrides` sets any field."""
    fields: dict[str, Any] = {
        "warehouse": folder / warehouse,
        "temp_directory": folder / "tmp",
        "cache_dir": folder / "cache",
        "memory_limit": "1GB",
        "threads": 2,
    }
    return Settings(**{**fields, **overrides})


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
