"""Fixtures of the rounds tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from rounds_helpers import SEEN, open_tiny_round, probe_fit

from proforma.app.flows.warehouse import prepare
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import connect
from proforma.models.baselines import suite


@pytest.fixture
def served(settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings of a service whose warehouse has a tiny open round (2010Q4)."""
    monkeypatch.setenv("PROFORMA_UPLOAD_DIR", str(tmp_path / "uploads"))
    monkeypatch.setenv("PROFORMA_PUBLIC_SNAPSHOT", str(tmp_path / "public.duckdb"))
    monkeypatch.setenv("PROFORMA_REPORT_DIR", str(tmp_path / "report"))
    monkeypatch.setenv("PROFORMA_PUBLIC_MIN_CELLS", "5")
    get_settings.cache_clear()
    s = get_settings()
    wh = connect(s)
    prepare(wh)
    open_tiny_round(wh, s.warehouse.parent / "rounds")
    wh.close()
    return s


@pytest.fixture
def probe() -> Iterator[suite.ModelSpec]:
    """A toy competitor in the suite for one test (rounds_helpers.probe_fit)."""
    spec = suite.register(
        suite.ModelSpec(
            name="probe",
            fit=probe_fit,
            presets={"paper": {}, "demo": {}},
            footprints=("full",),
            data="tabular",
        )
    )
    SEEN.clear()
    yield spec
    suite.unregister("probe")
