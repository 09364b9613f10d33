"""`proforma backup DIR`: everything no one can recreate, at one point in time, with a
manifest of checksums and row counts (docs/operations.md, "Backups").

What a backup holds, all as of one warehouse transaction:

- `warehouse.duckdb`: the whole warehouse (submissions, scores, users and tokens, jobs,
  rounds, every vintage, the panel; tables, views, sequences at their values and the
  scoring macros) copied by DuckDB's `COPY FROM DATABASE` inside one read transaction
  of the writer: DuckDB's snapshot isolation gives the copy one point in time while the
  server's other cursors go on writing;
- `store/`: the upload store's files that the copied `eval.submission_files` names
  (immutable and content-addressed, so a file named at the snapshot is the file);
- `uploads/`: the received files of the jobs the snapshot has still unfinished (the
  worker resumes them after a restore);
- `rounds/`: the frozen inputs of the snapshot's rounds;
- `public.duckdb`: the public snapshot as last published;
- `manifest.json`, written last: each file's size and sha256 and each table's row count.
  A folder without it is an incomplete backup.

It runs on the warehouse's one writer: on the server's job worker while `proforma serve`
runs (POST /api/v1/backups; no job is validated or scored meanwhile, so no submission is
half in the backup: its rows and its file are both in it or neither), else in the
command's own process.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proforma.app import __version__
from proforma.app.scoring.submissions.store import store_dir, sync_folder
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow

#: The manifest's layout version (what `verify` and `restore` read).
FORMAT = 1
MANIFEST = "manifest.json"
WAREHOUSE_FILE = "warehouse.duckdb"
SNAPSHOT_FILE = "public.duckdb"
#: Jobs whose uploaded file a restore still needs (job_store.UNFINISHED).
UNFINISHED = ("queued", "validating", "scoring")
_ATTACHED = "proforma_backup"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class BackupResult:
    folder: Path
    manifest: dict[str, Any]
    seconds: float

    def line(self) -> str:
        m = self.manifest
        rows = sum(m["tables"].values())
        return (
            f"backup {self.folder}: {len(m['tables'])} tables ({rows:,} rows), "
            f"{len(m['files'])} files, {m['bytes']:,} bytes in {self.seconds:.1f} s"
        )


def server_key_path(settings: Settings) -> Path:
    """`<warehouse>.server.key`: the running server's operator key (mode 0600), which lets
    a local command that can read the warehouse's folder ask the server for a backup."""
    return settings.warehouse.with_name(settings.warehouse.name + ".server.key")


def prepare_folder(target: Path) -> Path:
    """The backup's folder, made; an existing file or non-empty folder is refused."""
    target = Path(target).absolute()
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise UserError(
            f"{target} exists and is not an empty folder: a backup goes to a new folder "
            f"(e.g. one named by its date)"
        )
    target.mkdir(parents=True, exist_ok=True)
    return target


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def _copy(source: Path, target: Path) -> dict[str, Any]:
    """Copy one file (synced to the disk); its manifest entry (path set by the caller)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    h = hashlib.sha256()
    size = 0
    with open(source, "rb") as src, open(target, "wb") as dst:
        while block := src.read(_CHUNK):
            h.update(block)
            size += len(block)
            dst.write(block)
        dst.flush()
        os.fsync(dst.fileno())
    return {"bytes": size, "sha256": h.hexdigest()}


def _entry(folder: Path, path: Path, info: dict[str, Any], kind: str) -> dict[str, Any]:
    return {"path": path.relative_to(folder).as_posix(), "kind": kind, **info}


def _base_tables(wh: Warehouse, database: str) -> list[str]:
    rows = wh.fetchall(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? "
        "AND NOT temporary ORDER BY 1, 2",
        [database],
    )
    return [f"{s}.{t}" for s, t in rows]


def _quoted(name: str) -> str:
    return ".".join(f'"{part}"' for part in name.split("."))


def make_backup(wh: Warehouse, settings: Settings, target: Path) -> BackupResult:
    """Back up the warehouse `wh` (the writer's connection or a cursor of it) and the files
    beside it into the new folder `target`. See the module's doc."""
    started = time.perf_counter()
    folder = prepare_folder(target)
    try:
        return _make(wh, settings, folder, started)
    except BaseException:
        # the folder was new or empty: nothing of an unfinished backup is left to look whole
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _make(wh: Warehouse, settings: Settings, folder: Path, started: float) -> BackupResult:
    copy = folder / WAREHOUSE_FILE
    database = str(wh.scalar("SELECT current_database()"))
    literal = "'" + str(copy).replace("'", "''") + "'"
    wh.execute(f"ATTACH {literal} AS {_ATTACHED}")
    try:
        with wh.transaction():  # one snapshot: what is copied, counted and listed agree
            wh.execute(f'COPY FROM DATABASE "{database}" TO {_ATTACHED}')
            tables = {
                name: int(wh.scalar(f"SELECT count(*) FROM {_quoted(name)}"))
                for name in _base_tables(wh, database)
            }
            stored = _column(wh, "eval.submission_files", "file")
            pending = _unfinished_jobs(wh)
            rounds = _column(wh, "rounds.rounds", "name")
            schema = wh.scalar("SELECT max(version) FROM schema_migrations")
    finally:
        wh.execute(f"DETACH {_ATTACHED}")
    files = [
        _entry(
            folder, copy, {"bytes": copy.stat().st_size, "sha256": sha256_file(copy)}, "warehouse"
        )
    ]
    with open(copy, "rb") as fh:
        os.fsync(fh.fileno())
    source_store = store_dir(wh)
    for name in stored:
        files.append(
            _entry(
                folder,
                folder / "store" / name,
                _copy(source_store / name, folder / "store" / name),
                "store",
            )
        )
    for job_id, path in pending:
        source = Path(path)
        if not source.is_file():  # lost before the backup: the restored job fails cleanly
            continue
        target = folder / "uploads" / source.name
        files.append({**_entry(folder, target, _copy(source, target), "upload"), "job_id": job_id})
    rounds_root = Path(settings.warehouse).parent / "rounds"
    for name in rounds:
        for source in (
            sorted((rounds_root / name).rglob("*")) if (rounds_root / name).is_dir() else []
        ):
            if source.is_file():
                target = folder / "rounds" / source.relative_to(rounds_root)
                files.append(_entry(folder, target, _copy(source, target), "round"))
    snapshot = Path(settings.public_snapshot)
    if snapshot.exists():
        target = folder / SNAPSHOT_FILE
        files.append(_entry(folder, target, _copy(snapshot.resolve(), target), "snapshot"))
    manifest = {
        "format": FORMAT,
        "made_at": utcnow().isoformat(timespec="seconds"),
        "proforma_version": __version__,
        "schema_version": schema,
        "warehouse": str(wh.path),
        "tables": tables,
        "files": files,
        "bytes": sum(f["bytes"] for f in files),
    }
    for sub in ("store", "uploads", "rounds"):
        if (folder / sub).is_dir():
            sync_folder(folder / sub)
    tmp = folder / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, default=str))
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, folder / MANIFEST)  # last: a folder without it is incomplete
    sync_folder(folder)
    return BackupResult(folder, manifest, time.perf_counter() - started)


def _unfinished_jobs(wh: Warehouse) -> list[tuple[int, str]]:
    if not wh.table_exists("service.jobs"):
        return []
    rows = wh.fetchall(
        f"SELECT job_id, upload_path FROM service.jobs WHERE status IN {UNFINISHED!r} "
        "ORDER BY job_id"
    )
    return [(int(job_id), str(path)) for job_id, path in rows]


def _column(wh: Warehouse, table: str, column: str) -> list[str]:
    if not wh.table_exists(table):
        return []
    return [str(r[0]) for r in wh.fetchall(f"SELECT {column} FROM {table} ORDER BY 1")]
