"""A tiny built synthetic panel, made once per session and copied per test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tiny_synthetic import build_tiny_synthetic

from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, connect
from tests.conftest import temp_settings


@pytest.fixture(scope="session")
def built_panel(tmp_path_factory) -> Path:
    """40 synthetic firms filing 2004-2014, built (test origins 2010-2014)."""
    from proforma.app.flows.warehouse import prepare

    folder = tmp_path_factory.mktemp("llm_panel")
    settings = temp_settings(folder)
    with connect(settings) as wh:
        prepare(wh)
        build_tiny_synthetic(wh, firms=40, start=2004, end=2014, seed=3)
        wh.execute("CHECKPOINT")
    return folder / "wh.duckdb"


@pytest.fixture
def panel_wh(built_panel: Path, settings: Settings) -> Iterator[Warehouse]:
    """A private copy of the built panel at the test's warehouse path."""
    shutil.copy(built_panel, settings.warehouse)
    w = connect(settings)
    yield w
    w.close()
