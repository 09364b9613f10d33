"""Fixtures for reconciliation and the report: the scoring tests' tiny panel."""

from __future__ import annotations

import sys
from pathlib import Path

# The tiny hand-made panel of the scoring tests (tests/eval/scoring_fixtures.py) is the
# panel these tests reconcile and report on: one panel for both, not a copy.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "eval"))
