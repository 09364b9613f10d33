"""Publish public.duckdb: the read-only snapshot behind the public SQL endpoint.

The snapshot holds only what sql/public/*.sql selects: reference items, build and score
provenance, submissions' public records, footprint membership (keys, no values) and
aggregate scores over at least `public_min_cells` cells. It is written by the warehouse's
own process (the one writer) into a fresh file through ATTACH, checked, renamed to a
versioned file (public-<ns>.duckdb) and then `public.duckdb` is atomically re-pointed at
it (a symlink replaced with os.replace): readers see the old or the new snapshot, never a
half-written one, and queries still running on the old version finish on it.

Before the move, `check_public` refuses any column whose name says it holds firm-level
values (mu, sigma, actual, baseline, v, ...): a second line of defence should a future
public step select more than it should.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from app.errors import UserError
from app.settings import Settings
from app.sqlfiles import steps_in
from app.warehouse import Warehouse

#: Column names that hold firm-level values somewhere in the warehouse.
FORBIDDEN_COLUMNS = frozenset(
    {"v", "x", "value", "actual", "baseline", "change", "mu", "sigma", "prediction", "z",
     "deflator", "raw_value", "truth", "sum_y", "sum_y2"}
)

_lock = threading.Lock()
_counter = itertools.count()


@dataclass(frozen=True)
class Published:
    path: Path
    tables: dict[str, int]
    elapsed_ms: float

    def line(self) -> str:
        rows = sum(self.tables.values())
        return f"published {self.path} ({len(self.tables)} tables, {rows:,} rows) in {self.elapsed_ms:.0f} ms"


class UnsafePublication(UserError):
    """A public step selected a column that may carry firm-level values; nothing published."""


def check_public(wh: Warehouse, catalog: str = "pub") -> dict[str, int]:
    """Row counts of the catalog's tables; raises if a column looks like firm-level values."""
    cols = wh.fetchall(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = ? ORDER BY table_name, ordinal_position",
        [catalog],
    )
    bad = [
        f"{t}.{c}" for t, c in cols
        if c.lower() in FORBIDDEN_COLUMNS
    ]
    if bad:
        raise UnsafePublication(
            f"Refusing to publish: column(s) {', '.join(bad)} may hold firm-level values."
        )
    tables = sorted({t for t, _ in cols})
    return {t: int(wh.scalar(f'SELECT count(*) FROM {catalog}."{t}"')) for t in tables}


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def publish(wh: Warehouse, settings: Settings) -> Published:
    """Rebuild public.duckdb from the warehouse and swap it in; records the publication."""
    target = Path(settings.public_snapshot).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    with _lock:
        started = time.perf_counter()
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{next(_counter)}.tmp")
        for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
            leftover.unlink(missing_ok=True)
        wh.execute(f"ATTACH {_sql_string(str(tmp))} AS pub")
        try:
            if wh.table_exists("panel.firms"):
                wh.execute("CREATE OR REPLACE TEMP VIEW firm_keys AS SELECT firm_id, gvkey FROM panel.firms")
            else:
                wh.execute(
                    "CREATE OR REPLACE TEMP VIEW firm_keys AS "
                    "SELECT NULL::INTEGER AS firm_id, NULL::VARCHAR AS gvkey WHERE false"
                )
            for step in steps_in("public"):
                wh.run_step(step, {"public_min_cells": int(settings.public_min_cells)})
            tables = check_public(wh)
        except BaseException:
            wh.execute("DETACH pub")
            tmp.unlink(missing_ok=True)
            raise
        wh.execute("DETACH pub")
        version = target.with_name(f"{target.stem}-{time.time_ns()}{target.suffix}")
        os.replace(tmp, version)
        _point(target, version)
        elapsed = (time.perf_counter() - started) * 1000
        wh.execute(
            "INSERT INTO service.snapshots (path, tables, published_at, elapsed_ms) VALUES (?, ?, ?, ?)",
            [str(target), json.dumps(tables), dt.datetime.now(dt.UTC).replace(tzinfo=None), elapsed],
        )
    return Published(target, tables, elapsed)


def _point(target: Path, version: Path, keep: int = 3) -> None:
    """Make `target` a symlink to `version` atomically; drop all but the newest `keep`
    versions (a reader still holding an old one keeps reading it until it closes)."""
    link = target.with_name(f".{target.name}.{os.getpid()}.{next(_counter)}.link")
    link.unlink(missing_ok=True)
    link.symlink_to(version.name)
    os.replace(link, target)
    versions = sorted(target.parent.glob(f"{target.stem}-*{target.suffix}"))
    for old in versions[:-keep]:
        old.unlink(missing_ok=True)


def last_published(wh: Warehouse) -> dict | None:
    row = wh.fetchone(
        "SELECT snapshot_id, path, tables, published_at, elapsed_ms FROM service.snapshots "
        "ORDER BY snapshot_id DESC LIMIT 1"
    )
    if row is None:
        return None
    return {
        "snapshot_id": row[0], "path": row[1], "tables": json.loads(row[2]),
        "published_at": row[3], "elapsed_ms": row[4],
    }
