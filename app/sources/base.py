"""One interface for every source of raw data (WRDS, parquet files, synthetic).

A source produces the three raw tables as Arrow (tables or streaming readers); `ingest`
replaces raw.fundq, raw.company_industry and raw.ccm_link with them in ONE transaction
and records the ingest in raw.ingests. A source that fails, or data that violates the
raw schema, leaves the previous raw tables untouched.
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from proforma.app.sources.vintages import record_vintage
from proforma.app.store.warehouse import ArrowInput, Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow

RAW_TABLES = ("fundq", "company_industry", "ccm_link")


@dataclass
class RawTables:
    fundq: ArrowInput
    company_industry: ArrowInput
    ccm_link: ArrowInput
    vintage: str = ""
    #: Extra tables a source may write in the same transaction, name -> (mode, data),
    #: e.g. the synthetic source's oracle paths.
    extras: dict[str, tuple[str, ArrowInput]] = field(default_factory=dict)


@dataclass(frozen=True)
class IngestSummary:
    ingest_id: int
    source: str
    rows: dict[str, int]
    checksum: str
    seconds: float

    def line(self) -> str:
        counts = ", ".join(f"{n} {r:,}" for n, r in self.rows.items())
        # The recorded checksum starts with table names and counts; show a digest of it.
        short = hashlib.sha256(self.checksum.encode()).hexdigest()[:12]
        return (
            f"ingest {self.ingest_id} from {self.source}: {counts} rows "
            f"in {self.seconds:.1f}s (checksum {short})"
        )


class Source(ABC):
    """Produces raw tables. Subclasses set `name` and implement `parameters` and `tables`."""

    name: str = "source"

    @abstractmethod
    def parameters(self) -> dict[str, Any]:
        """What identifies this pull (recorded with the ingest, never secrets)."""

    @abstractmethod
    def tables(self) -> RawTables:
        """The raw tables. May stream; must raise UserError for bad input."""


def _checksum(wh: Warehouse) -> str:
    parts = []
    for t in RAW_TABLES:
        xor, n = wh.one(f"SELECT coalesce(bit_xor(hash(x)), 0), count(*) FROM raw.{t} x")
        parts.append(f"{t}:{n}:{xor & 0xFFFFFFFFFFFFFFFF:016x}")
    return "|".join(parts)


def ingest(wh: Warehouse, source: Source) -> IngestSummary:
    """Replace the raw tables with the source's data, all or nothing."""
    started = utcnow()
    t0 = time.perf_counter()
    raw = source.tables()
    rows: dict[str, int] = {}
    try:
        with wh.transaction():
            for t in RAW_TABLES:
                wh.execute(f"DELETE FROM raw.{t}")
                rows[t] = wh.write_arrow(f"raw.{t}", getattr(raw, t))
            for name, (mode, data) in raw.extras.items():
                rows[name] = wh.write_arrow(name, data, mode=mode)
            digest = _checksum(wh)
            wh.execute(
                "INSERT INTO raw.ingests (source, parameters, vintage, rows_fundq, "
                "rows_company_industry, rows_ccm_link, checksum, started_at, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    source.name,
                    json.dumps(source.parameters(), default=str),
                    raw.vintage,
                    rows["fundq"],
                    rows["company_industry"],
                    rows["ccm_link"],
                    digest,
                    started,
                    utcnow(),
                ],
            )
            ingest_id = wh.scalar("SELECT max(ingest_id) FROM raw.ingests")
            record_vintage(wh, ingest_id)
    except UserError:
        raise
    except (duckdb.Error, pa.ArrowException) as exc:
        # Constraint violations, failed casts, a broken stream: one line, nothing written.
        msg = str(exc).splitlines()[0]
        raise UserError(f"{source.name} ingest rejected, nothing was written: {msg}") from None
    return IngestSummary(ingest_id, source.name, rows, digest, time.perf_counter() - t0)
