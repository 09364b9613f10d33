"""Provenance of scores: the build, the scoring-SQL version, checksums, the time."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from proforma.app.store import family_sql, metric_sql
from proforma.app.store.migrations import MIGRATIONS_DIR, macro_definitions
from proforma.app.store.sqlfiles import SQL_DIR, folder_checksum
from proforma.app.store.warehouse import Warehouse


def eval_sql_version() -> str:
    """One version string for what scoring runs: every sql/eval step (normalized,
    order-sensitive), the metric definitions that fill their slots, and the macros the
    migrations define, which the steps call (eval.norm_cdf, eval.qs_piece, ...)."""
    stamp = tuple(
        (p.parent.name, p.name, p.stat().st_mtime_ns, p.stat().st_size)
        for folder in (SQL_DIR / "eval", MIGRATIONS_DIR)
        for p in sorted(folder.glob("*.sql"))
    )
    # the metric definitions fill the aggregate steps' slots: a new or changed metric is a
    # new version (contracts/metrics.py); so do the density families' terms
    # (contracts/families.py)
    return _eval_version(
        (*stamp, metric_sql.fingerprint(), family_sql.fingerprint()), MIGRATIONS_DIR
    )


@functools.lru_cache(maxsize=8)
def _eval_version(stamp: tuple, migrations: Path) -> str:
    # The files' checksums are memoized on disk (proforma.app.store.sqlfiles.checksum), so a
    # new process reads the small files instead of parsing them; the macros are read as
    # text, without a parser.
    h = hashlib.sha256(folder_checksum("eval").encode())
    for definition in macro_definitions(migrations):
        h.update(b"\0" + definition.encode())
    return h.hexdigest()[:16]


def current_build(wh: Warehouse) -> dict[str, Any] | None:
    """The newest meta.builds record (as written by the build), or None without a build.
    The panel in the warehouse is the one the latest SUCCESSFUL build wrote."""
    if not wh.table_exists("meta.builds"):
        return None
    rows = wh.arrow(
        "SELECT * FROM meta.builds WHERE status = 'succeeded' ORDER BY build_id DESC LIMIT 1"
    ).to_pylist()
    return rows[0] if rows else None


def current_build_id(wh: Warehouse) -> int | None:
    if not wh.table_exists("meta.builds"):
        return None
    value = wh.scalar("SELECT max(build_id) FROM meta.builds WHERE status = 'succeeded'")
    return None if value is None else int(value)


def to_json(value: Any) -> str:
    """JSON text for provenance columns (dates and other objects as strings)."""
    return json.dumps(value, default=str, sort_keys=True)


class BatchHasher:
    """sha256 over the Arrow buffers of record batches as they stream past."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def update(self, batch: pa.RecordBatch) -> None:
        self._h.update(str(batch.num_rows).encode())
        for column in batch.columns:
            for buf in column.buffers():
                if buf is not None:
                    self._h.update(memoryview(buf))

    def hexdigest(self) -> str:
        return self._h.hexdigest()
