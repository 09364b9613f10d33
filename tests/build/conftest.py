"""Helpers for the build tests: tiny hand-made raw panels inserted with SQL."""

from __future__ import annotations

import datetime as dt

import pytest

from proforma.app.flows.build import BuildParams, _ensure_pinned_table
from proforma.app.store.sqlfiles import steps_in
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.rules import RuleSet


def qdate(year: int, quarter: int) -> dt.date:
    """The calendar quarter-end date."""
    month = quarter * 3
    return dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)


def insert_fundq(wh: Warehouse, rows: list[dict]) -> None:
    """Insert raw.fundq rows given as dicts (unnamed item columns stay NULL)."""
    for r in rows:
        cols = list(r)
        wh.execute(
            f"INSERT INTO raw.fundq ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            [r[c] for c in cols],
        )


def run_steps(wh: Warehouse, upto: str, pinned: bool = False, rules: str = "published") -> None:
    """Run sql/build steps in order through the one whose name starts with `upto`."""
    _ensure_pinned_table(wh)
    wh.set_params(BuildParams(rules=RuleSet.parse(rules)).variables(pinned))
    for step in steps_in("build"):
        wh.run_step(step)
        if step.name.startswith(upto):
            return
    raise AssertionError(f"no step {upto}")


@pytest.fixture
def fundq(wh: Warehouse):
    return lambda rows: insert_fundq(wh, rows)
