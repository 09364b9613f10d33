"""A tiny built synthetic panel and a tiny random-weight Chronos-2 of the real class."""

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
    """A warehouse file holding a built panel of 8 synthetic firms, 2006-2013 (test
    origins 2010-2013); tests work on copies of it."""
    from proforma.app.flows.warehouse import prepare

    folder = tmp_path_factory.mktemp("chronos-panel")
    settings = temp_settings(folder)
    wh = connect(settings)
    try:
        prepare(wh)
        build_tiny_synthetic(wh, firms=8, start=2006, end=2013, seed=5)
        wh.execute("CHECKPOINT")
    finally:
        wh.close()
    return settings.warehouse


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A Chronos-2 checkpoint folder (2 layers, width 16, random weights)."""
    from proforma.models.chronos.tiny import save_checkpoint

    return save_checkpoint(tmp_path_factory.mktemp("chronos-2-tiny") / "model")


@pytest.fixture
def panel_file(settings: Settings, built_panel: Path) -> Path:
    """This test's own copy of the built panel at settings.warehouse (for CLI runs)."""
    shutil.copyfile(built_panel, settings.warehouse)
    return settings.warehouse


@pytest.fixture
def panel_wh(settings: Settings, panel_file: Path) -> Iterator[Warehouse]:
    """This test's copy of the built panel, opened for writing."""
    wh = connect(settings)
    yield wh
    wh.close()
