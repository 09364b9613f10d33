"""Fixtures of tests/synthetic."""

from __future__ import annotations

import pytest
from synthetic_helpers import Recorded, tiny_config


@pytest.fixture(scope="session")
def recorded() -> Recorded:
    return Recorded(tiny_config())
