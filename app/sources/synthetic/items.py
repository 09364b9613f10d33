"""The item universe as the generator sees it: items.csv order, YTD sources, targets."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache

from proforma.app.store.reference import REFERENCE_DIR


@dataclass(frozen=True)
class Item:
    item_id: int  # 1-based items.csv order, as ref.items
    item: str
    statement: str  # BS, IS, CF, Der
    ytd_source: str | None
    pct: tuple[float, float, float]  # availability in train, val, test (fractions)


@lru_cache(maxsize=1)
def items() -> tuple[Item, ...]:
    with open(REFERENCE_DIR / "items.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return tuple(
        Item(
            item_id=i + 1,
            item=r["item"],
            statement=r["statement"],
            ytd_source=r["ytd_source"] or None,
            pct=(
                float(r["pct_train"]) / 100,
                float(r["pct_val"]) / 100,
                float(r["pct_test"]) / 100,
            ),
        )
        for i, r in enumerate(rows)
    )


def by_name() -> dict[str, Item]:
    return {it.item: it for it in items()}


def raw_items() -> list[Item]:
    """The 72 items that appear in raw.fundq (52 as reported, 20 as YTD sources)."""
    return [it for it in items() if it.statement != "Der"]


def derived_values(v: dict) -> dict:
    """The six computed items, exactly as the build computes them (missing -> 0 in carve-outs)."""
    return {
        "gpq": v["revtq"] - v["cogsq"],
        "fcfq": v["oancfq"] - v["capxq"],
        "wcapq": v["actq"] - v["lctq"],
        "aoq_ex_intanq": v["aoq"] - v["intanq"],
        "loq_ex_dr": v["loq"] - v["drltq"],
        "xsgaq_ex_rd": v["xsgaq"] - v["xrdq"],
    }
