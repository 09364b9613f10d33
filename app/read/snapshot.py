"""Publish public.duckdb: the read-only snapshot behind the public SQL endpoint.

The snapshot holds only what sql/public/*.sql selects: reference items, build and score
provenance, submissions' public records, footprint membership (keys, no values) and
aggregate scores over at least `public_min_cells` cells. It is written by the warehouse's
own process (the one writer) into a fresh file through ATTACH (a copy of the publisher's
store of rows kept once per scored submission, extended at each publication: sql/public
/005), checked, renamed to a versioned file and then `public.duckdb` is atomically
re-pointed at it (a symlink replaced with os.replace): readers see the old or the new
snapshot, never a half-written one.

Lifecycle (docs/service.md, "The public snapshot"): a version's name is the configured
name plus one fixed-width stamp (`public-v<20 digits>.duckdb`), so names stay short and
unique however often the server publishes. After each publication every older version is
removed except the one just replaced (a grace copy for readers in other processes that
resolved the link a moment ago) and those a query of this process still reads: queries
hold a lease (`reading`) from resolving the link until they finish, and removal skips
leased files. A version removed while a connection still has it open stays readable
through that connection (POSIX unlink semantics); a removal that fails is retried on the
next publication. A failed publication is recorded (service.snapshot_failures) and shown
by /api/v1/health until the next one succeeds.

Before the move, `check_public` refuses any column whose name says it holds firm-level
values (mu, sigma, actual, baseline, v, ...): a second line of defence should a future
public step select more than it should.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
import json
import logging
import os
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from proforma.app.read import disclosure as disclosure_module
from proforma.app.read.disclosure import register as register_disclosure
from proforma.app.read.disclosure import secret as disclosure_secret
from proforma.app.store.settings import Settings
from proforma.app.store.sqlfiles import SqlFile, query_text, steps_in
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow

log = logging.getLogger("proforma.snapshot")

#: Column names that hold firm-level values somewhere in the warehouse.
FORBIDDEN_COLUMNS = frozenset(
    {
        "v",
        "x",
        "value",
        "actual",
        "baseline",
        "change",
        "mu",
        "sigma",
        "prediction",
        "z",
        "deflator",
        "raw_value",
        "truth",
        "sum_y",
        "sum_y2",
    }
)
#: Versions kept besides the current one when no query of this process reads them.
GRACE_VERSIONS = 1

#: Temp tables sql/public makes (dropped after each publication).
_PUBLIC_TEMP = (
    "public_runs",
    "public_uncertainty_rows",
    "public_detail",
    "public_dm_leaders",
    "public_metric_refs",
    "public_metric_todo",
    "public_metric_new",
    "public_pit_refs",
    "public_pit_todo",
    "public_metric_stale",
)

_publish_lock = threading.Lock()
_counter = itertools.count()


@dataclass(frozen=True)
class Published:
    path: Path
    version: Path
    tables: dict[str, int]
    elapsed_ms: float
    removed: int

    def line(self) -> str:
        rows = sum(self.tables.values())
        return (
            f"published {self.path} -> {self.version.name} ({len(self.tables)} tables, "
            f"{rows:,} rows) in {self.elapsed_ms:.0f} ms; {self.removed} old version(s) removed"
        )


class UnsafePublication(UserError):
    """A public step selected a column that may carry firm-level values; nothing published."""


# -- paths ---------------------------------------------------------------------------------


def link_path(configured: Path) -> Path:
    """The absolute path of the link itself (never the version it points to: resolving
    the link and naming the next version after it made every name longer than the last)."""
    configured = Path(configured)
    return Path(os.path.abspath(configured.parent)).resolve() / configured.name


def _version_pattern(link: Path) -> re.Pattern[str]:
    """Versions of `link`: its stem, a dash, digits (older releases also chained several
    stamps with dashes; those are matched so that they are cleaned up too)."""
    return re.compile(rf"^{re.escape(link.stem)}-v?\d+(?:-\d+)*{re.escape(link.suffix)}$")


def versions(configured: Path) -> list[Path]:
    """Every version file of the snapshot on disk, oldest first."""
    link = link_path(configured)
    if not link.parent.is_dir():
        return []
    pattern = _version_pattern(link)
    found = [p for p in link.parent.iterdir() if pattern.match(p.name)]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns if p.exists() else 0, p.name))


def current_version(configured: Path) -> Path | None:
    """The version the link points to, or None when nothing is published."""
    link = link_path(configured)
    real = Path(os.path.realpath(link))
    return real if real != link and real.exists() else None


def _new_version_path(link: Path) -> Path:
    stamp = time.time_ns()
    while True:
        candidate = link.with_name(f"{link.stem}-v{stamp:020d}{link.suffix}")
        if not candidate.exists():
            return candidate
        stamp += 1


# -- readers' leases -------------------------------------------------------------------------

_leases: Counter[str] = Counter()
_leases_lock = threading.Lock()


@contextlib.contextmanager
def reading(configured: Path) -> Iterator[Path]:
    """The current version's real path, protected from removal until the block ends.

    Resolving the link and taking the lease happen under the lock that removal takes,
    so a version cannot vanish between a reader finding it and opening it.
    """
    link = link_path(configured)
    with _leases_lock:
        real = os.path.realpath(link)
        _leases[real] += 1
    try:
        yield Path(real)
    finally:
        with _leases_lock:
            _leases[real] -= 1
            if _leases[real] <= 0:
                del _leases[real]


def leased() -> set[str]:
    with _leases_lock:
        return set(_leases)


def remove_old_versions(configured: Path, keep: int = GRACE_VERSIONS) -> int:
    """Remove versions that are neither current, among the newest `keep` others, nor read
    by a query of this process; returns how many files went."""
    link = link_path(configured)
    current = current_version(link)
    old = [p for p in versions(link) if current is None or p != current]
    grace = set(old[-keep:]) if keep > 0 else set()
    removed = 0
    with _leases_lock:
        busy = set(_leases)
        for path in old:
            if path in grace or str(path) in busy:
                continue
            try:
                path.unlink(missing_ok=True)
                removed += 1
            except OSError as exc:  # e.g. a platform that refuses to remove open files
                log.warning("old snapshot %s not removed yet: %s", path.name, exc)
                continue
            with contextlib.suppress(OSError):
                path.with_name(path.name + ".wal").unlink(missing_ok=True)
    return removed


def _remove_leftovers(link: Path) -> None:
    """Temporary files of publications that died half-way (only the publisher writes
    them, under the publish lock, so any found now are orphans)."""
    for pattern in (f".{link.name}.*.tmp", f".{link.name}.*.tmp.wal", f".{link.name}.*.link"):
        for leftover in link.parent.glob(pattern):
            with contextlib.suppress(OSError):
                leftover.unlink()


# -- publishing ------------------------------------------------------------------------------


def check_public(wh: Warehouse, catalog: str = "pub") -> dict[str, int]:
    """Row counts of the catalog's public tables and views (schema main: what the SQL
    console sees); raises if a column of any schema looks like firm-level values."""
    cols = wh.fetchall(
        "SELECT table_schema, table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = ? ORDER BY table_schema, table_name, ordinal_position",
        [catalog],
    )
    bad = [f"{t}.{c}" for _, t, c in cols if c.lower() in FORBIDDEN_COLUMNS]
    if bad:
        raise UnsafePublication(
            f"Refusing to publish: column(s) {', '.join(bad)} may hold firm-level values."
        )
    tables = sorted({t for schema, t, _ in cols if schema == "main"})
    return {t: int(wh.scalar(f'SELECT count(*) FROM {catalog}.main."{t}"')) for t in tables}


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def cache_path(wh: Warehouse, link: Path, steps: Sequence[SqlFile], settings: Settings) -> Path:
    """The publisher's store of public rows (catalog `pubcache` of sql/public: rows that
    depend on their source row only, computed once), a private file beside the snapshot
    named after what its rows depend on: the public steps' text, the disclosure code, the
    warehouse's disclosure key and the minimum cells of a published aggregate. Another
    name means a fresh, empty store; files of other names are removed."""
    h = hashlib.sha256(disclosure_secret(wh))
    h.update(Path(disclosure_module.__file__).read_bytes())
    h.update(f"public_min_cells={int(settings.public_min_cells)}".encode())
    for step in steps:
        h.update(step.text.encode())
    path = link.with_name(f".{link.stem}.cache-{h.hexdigest()[:16]}.duckdb")
    for old in link.parent.glob(f".{link.stem}.cache-*.duckdb*"):
        if not old.name.startswith(path.name):
            with contextlib.suppress(OSError):
                old.unlink()
    return path


def _prepare(wh: Warehouse) -> None:
    """The views and functions the public steps read besides the warehouse's tables."""
    if wh.table_exists("panel.firms"):
        wh.execute(
            "CREATE OR REPLACE TEMP VIEW firm_keys AS SELECT firm_id, gvkey FROM panel.firms"
        )
    else:
        wh.execute(
            "CREATE OR REPLACE TEMP VIEW firm_keys AS "
            "SELECT NULL::INTEGER AS firm_id, NULL::VARCHAR AS gvkey WHERE false"
        )
    if wh.table_exists("eval.submissions"):
        wh.execute(
            "CREATE OR REPLACE TEMP VIEW submission_records AS "
            + query_text("service/submission_records")
        )
    register_disclosure(wh)  # pf_coarsen: an upload's numbers with their keyed noise


def _write_public(
    wh: Warehouse, tmp: Path, settings: Settings, steps: Sequence[SqlFile] | None
) -> dict[str, int]:
    """The public tables written into the fresh file `tmp`; their row counts.

    The steps that keep the publisher's store (catalog `pubcache`: rows stored once per
    scored submission, extended at each publication) run first, on that file; `tmp` then
    starts as a copy of it, so the board's stored rows are not written again, and the
    other steps write the rest beside them (catalog `pub`)."""
    steps = list(steps if steps is not None else steps_in("public"))
    stored = [step for step in steps if "pubcache." in step.text]
    if steps[: len(stored)] != stored:
        raise RuntimeError("the public steps that keep the store (pubcache.) must come first")
    params = {
        "public_min_cells": int(settings.public_min_cells),
        "public_history_runs": int(settings.public_history_runs),
        "public_detail_top": int(settings.public_detail_top),
    }
    try:
        _prepare(wh)
        if stored:
            cache = cache_path(wh, link_path(settings.public_snapshot), steps, settings)
            wh.execute(f"ATTACH {_sql_string(str(cache))} AS pubcache")
            try:
                for step in stored:
                    wh.run_step(step, params)
                wh.execute("CHECKPOINT pubcache")  # the copy below takes the file alone
            finally:
                wh.execute("DETACH DATABASE IF EXISTS pubcache")
            shutil.copyfile(cache, tmp)
        wh.execute(f"ATTACH {_sql_string(str(tmp))} AS pub")
        try:
            for step in steps[len(stored) :]:
                wh.run_step(step, params)
            return check_public(wh)
        finally:
            wh.execute("DETACH pub")
    finally:
        for temp in _PUBLIC_TEMP:
            wh.execute(f"DROP TABLE IF EXISTS {temp}")


def publish(
    wh: Warehouse, settings: Settings, *, steps: Sequence[SqlFile] | None = None
) -> Published:
    """Rebuild public.duckdb from the warehouse, swap it in, remove unused old versions,
    and record the publication. `steps` replaces sql/public (tests publish tiny ones)."""
    link = link_path(settings.public_snapshot)
    link.parent.mkdir(parents=True, exist_ok=True)
    with _publish_lock:
        started = time.perf_counter()
        _remove_leftovers(link)
        tmp = link.with_name(f".{link.name}.{os.getpid()}.{next(_counter)}.tmp")
        try:
            tables = _write_public(wh, tmp, settings, steps)
            version = _new_version_path(link)
            os.replace(tmp, version)
        finally:
            for leftover in (tmp, tmp.with_name(tmp.name + ".wal")):
                leftover.unlink(missing_ok=True)
        _point(link, version)
        removed = remove_old_versions(link)
        elapsed = (time.perf_counter() - started) * 1000
        wh.execute(
            "INSERT INTO service.snapshots (path, file, tables, published_at, elapsed_ms) "
            "VALUES (?, ?, ?, ?, ?)",
            [str(link), version.name, json.dumps(tables), utcnow(), elapsed],
        )
    return Published(link, version, tables, elapsed, removed)


def _point(link: Path, version: Path) -> None:
    """Make `link` a symlink to `version` atomically (a relative link: the folder can move)."""
    tmp_link = link.with_name(f".{link.name}.{os.getpid()}.{next(_counter)}.link")
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(version.name)
    os.replace(tmp_link, link)


def record_failure(wh: Warehouse, exc: BaseException) -> str:
    """Note a failed publication for /api/v1/health; returns the recorded reason."""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    reason = f"{type(exc).__name__}: {first_line}"[:400]
    try:
        wh.execute(
            "INSERT INTO service.snapshot_failures (failed_at, error) VALUES (?, ?)",
            [utcnow(), reason],
        )
    except Exception:  # the log still has it; the server keeps serving
        log.exception("could not record the failed publication")
    return reason


class Publication(TypedDict):
    """A service.snapshots row: one publication of the public snapshot."""

    snapshot_id: int
    path: str
    file: str | None  # None for rows written before the column existed
    tables: dict[str, int]  # rows per public table
    published_at: dt.datetime
    elapsed_ms: float


def last_published(wh: Warehouse) -> Publication | None:
    row = wh.fetchone(
        "SELECT snapshot_id, path, file, tables, published_at, elapsed_ms FROM service.snapshots "
        "ORDER BY snapshot_id DESC LIMIT 1"
    )
    if row is None:
        return None
    return {
        "snapshot_id": row[0],
        "path": row[1],
        "file": row[2],
        "tables": json.loads(row[3]),
        "published_at": row[4],
        "elapsed_ms": row[5],
    }


def snapshot_health(wh: Warehouse) -> dict[str, Any]:
    """The snapshot part of /api/v1/health: `ok`, `failing` (the last publication failed;
    the previous snapshot is still served) or `missing` (never published)."""
    last = last_published(wh)
    failure = wh.fetchone(
        "SELECT failed_at, error, (SELECT count(*) FROM service.snapshot_failures "
        "WHERE failed_at > coalesce(?, TIMESTAMP '1970-01-01')) "
        "FROM service.snapshot_failures ORDER BY failure_id DESC LIMIT 1",
        [last["published_at"] if last else None],
    )
    failing = failure is not None and (last is None or failure[0] > last["published_at"])
    out: dict[str, Any] = {
        "status": "failing" if failing else ("ok" if last else "missing"),
        "published_at": last["published_at"] if last else None,
        "file": last["file"] if last else None,
        "tables": len(last["tables"]) if last else 0,
    }
    if failing and failure is not None:
        out["last_failure"] = {
            "failed_at": failure[0],
            "error": failure[1],
            "failures_since_last_publication": int(failure[2]),
        }
    return out
