"""Readying a warehouse for work: migrations and reference data (the CLI's `writer()` and
the service's start-up both call this)."""

from __future__ import annotations

from proforma.app.store.migrations import migrate
from proforma.app.store.reference import load_reference
from proforma.app.store.warehouse import Warehouse


def prepare(wh: Warehouse) -> list[str]:
    """Apply pending migrations and refresh reference tables; returns applied names."""
    applied = migrate(wh)
    load_reference(wh)
    return [m.path.name for m in applied]
