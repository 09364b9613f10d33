"""Provenance of scores: the build, the scoring-SQL version, checksums, the time."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any

import pyarrow as pa

from app.sqlfiles import SQL_DIR, folder_checksum
from app.warehouse import Warehouse


def eval_sql_version() -> str:
    """One version string for every sql/eval step (normalized, order-sensitive)."""
    stamp = tuple(
        (p.name, p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted((SQL_DIR / "eval").glob("*.sql"))
    )
    return _eval_version(stamp)


#: Versions kept in the cache file (one per content of sql/eval seen lately).
_KEPT_VERSIONS = 16


@functools.lru_cache(maxsize=8)
def _eval_version(stamp: tuple) -> str:
    # Parsing every step with sqlglot costs each scoring process 0.1-0.4 s, so the version
    # is also kept on disk under the sha256 of the steps' bytes and of the sqlglot version
    # that normalizes them: parsed once per content, not once per process.
    import sqlglot

    from app.settings import get_settings

    h = hashlib.sha256(f"sqlglot {sqlglot.__version__}\n".encode())
    for p in sorted((SQL_DIR / "eval").glob("*.sql")):
        h.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    key = h.hexdigest()
    cache = get_settings().cache_dir / "eval_sql_version.json"
    try:
        known = json.loads(cache.read_text())
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    if isinstance(known.get(key), str):
        return str(known[key])
    version = folder_checksum("eval")[:16]
    known = {k: v for k, v in list(known.items())[-(_KEPT_VERSIONS - 1) :] if k != key}
    known[key] = version
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known))
        tmp.replace(cache)  # atomic: a reader sees the old file or the new one
    except OSError:
        pass  # no cache: the next process parses again
    return version


def current_build(wh: Warehouse) -> dict[str, Any] | None:
    """The newest meta.builds record (as written by the build), or None without a build."""
    if not wh.table_exists("meta.builds"):
        return None
    cols = [
        r[0]
        for r in wh.fetchall(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = 'meta' AND table_name = 'builds' ORDER BY ordinal_position"
        )
    ]
    order = "build_id" if "build_id" in cols else cols[0]
    # The panel in the warehouse is the one the latest SUCCESSFUL build wrote.
    where = "WHERE status = 'succeeded'" if "status" in cols else ""
    rows = wh.arrow(
        f'SELECT * FROM meta.builds {where} ORDER BY "{order}" DESC LIMIT 1'
    ).to_pylist()
    return rows[0] if rows else None


def current_build_id(wh: Warehouse) -> int | None:
    build = current_build(wh)
    if not build:
        return None
    value = build.get("build_id")
    return int(value) if value is not None else None


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
