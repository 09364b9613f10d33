"""Vintages: every ingest is recorded with what it said (raw.vintages, raw.fundq_vintages;
sql/rounds/010_record_vintage.sql), so a grown or restated panel keeps its earlier
reports. Rounds are resolved from the first value reported after their origin
(docs/rounds.md)."""

from __future__ import annotations

from dataclasses import dataclass

from proforma.app.store.warehouse import Warehouse


@dataclass(frozen=True)
class Vintage:
    ingest_id: int
    first_q: int | None
    last_q: int | None
    rows_new: int
    rows_restated: int
    rows_dropped: int


def record_vintage(wh: Warehouse, ingest_id: int) -> None:
    """Record ingest `ingest_id`'s vintage (inside the ingest's transaction)."""
    if not wh.table_exists("raw.vintages"):
        return  # a warehouse migrated before V0120 records no vintages
    wh.run_step("rounds/010_record_vintage", {"ingest_id": int(ingest_id)})


def vintages(wh: Warehouse) -> list[Vintage]:
    rows = wh.fetchall(
        "SELECT ingest_id, first_q, last_q, rows_new, rows_restated, rows_dropped "
        "FROM raw.vintages ORDER BY ingest_id"
    )
    return [Vintage(*r) for r in rows]
