"""A tiny synthetic panel ingested and built, for tests that need a real warehouse (the
tests/ folder is on sys.path through its conftest.py, so any test folder imports this)."""

from __future__ import annotations

from proforma.app.flows.build import BuildParams, run_build
from proforma.app.sources import ingest
from proforma.app.sources.synthetic import SyntheticConfig, SyntheticSource
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.rules import DEFAULT_RULES, RuleSet


def build_tiny_synthetic(
    wh: Warehouse, *, firms: int, start: int, end: int, seed: int, rules: RuleSet = DEFAULT_RULES
) -> None:
    """Ingest `firms` synthetic firms over start..end (two short oracle paths) and build
    under `rules`."""
    cfg = SyntheticConfig.for_scale(
        "demo",
        firms=firms,
        start=start,
        end=end,
        seed=seed,
        oracle_origins=2,
        oracle_paths=2,
        oracle_horizon=4,
    )
    ingest(wh, SyntheticSource(cfg))
    run_build(wh, params=BuildParams(rules=rules))
