"""Fixtures of the rounds tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rounds_helpers import SEEN, probe_fit

from proforma.models.baselines import suite


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
