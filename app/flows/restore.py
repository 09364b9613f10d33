"""`proforma backup --verify DIR` and `proforma restore DIR` (docs/operations.md, "Backups").

A backup is checked before anything is restored: its manifest must be there and of a
known format, every file it lists present with its size and sha256, no file of the
backup's own kinds unlisted, and the copied warehouse must open and hold every table
with the manifest's row count. A damaged or incomplete backup is one UserError listing
what is wrong, and nothing is written.

A restore goes into an empty location only (no warehouse file, and the upload store,
the upload folder, the rounds' folder and the public snapshot absent or empty), so it
never mixes with or overwrites a live service. It copies the files into the places the
settings name, points the unfinished jobs at the restored uploads, and migrates the
restored warehouse (a backup of an earlier release comes back under the current
schema). A restore that fails removes what it wrote.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from proforma.app.flows.backup import (
    FORMAT,
    MANIFEST,
    WAREHOUSE_FILE,
    sha256_file,
)
from proforma.app.scoring.submissions.store import sync_folder
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import connect
from proforma.contracts.errors import UserError

#: The folders of a backup whose every file the manifest must list.
_KINDS = {"store": "store", "uploads": "upload", "rounds": "round"}


@dataclass(frozen=True)
class RestoreResult:
    manifest: dict[str, Any]
    migrations: list[str]

    def line(self) -> str:
        m = self.manifest
        return (
            f"restored the backup of {m['made_at']} ({len(m['tables'])} tables, "
            f"{len(m['files'])} files); {len(self.migrations)} migration(s) applied"
        )


def verify_backup(folder: Path) -> dict[str, Any]:
    """The backup's manifest, once every check passed; else one UserError naming each
    problem (its `problems` list holds them all)."""
    folder = Path(folder)
    manifest = _manifest(folder)
    problems: list[str] = []
    listed: set[str] = set()
    for entry in manifest["files"]:
        path = folder / entry["path"]
        listed.add(entry["path"])
        if not path.is_file():
            problems.append(f"{entry['path']} is missing")
        elif path.stat().st_size != entry["bytes"]:
            problems.append(
                f"{entry['path']} has {path.stat().st_size:,} bytes, the manifest "
                f"{entry['bytes']:,}"
            )
        elif sha256_file(path) != entry["sha256"]:
            problems.append(f"{entry['path']} does not match its sha256 (damaged)")
    for sub in _KINDS:
        for path in sorted((folder / sub).rglob("*")) if (folder / sub).is_dir() else []:
            if path.is_file() and path.relative_to(folder).as_posix() not in listed:
                problems.append(f"{path.relative_to(folder)} is not in the manifest")
    if not problems:
        problems += _table_problems(folder / WAREHOUSE_FILE, manifest["tables"])
    if problems:
        err = UserError(
            f"The backup {folder} is damaged or incomplete ({len(problems)} problem(s); "
            f"first: {problems[0]}). Nothing was restored; use another backup."
        )
        err.problems = problems  # type: ignore[attr-defined]
        raise err
    return manifest


def _manifest(folder: Path) -> dict[str, Any]:
    if not folder.is_dir():
        raise UserError(f"No backup folder {folder}. Nothing was restored.")
    path = folder / MANIFEST
    if not path.is_file():
        raise UserError(
            f"{folder} has no {MANIFEST}: the backup is incomplete (a backup writes its "
            f"manifest last) or this is not a backup folder. Nothing was restored."
        )
    try:
        manifest = json.loads(path.read_text())
        files, tables = manifest["files"], manifest["tables"]
        if not isinstance(files, list) or not isinstance(tables, dict):
            raise TypeError("files or tables")
        for entry in files:
            if (
                not isinstance(entry.get("path"), str)
                or ".." in Path(entry["path"]).parts
                or Path(entry["path"]).is_absolute()
            ):
                raise ValueError(f"bad path {entry.get('path')!r}")
            int(entry["bytes"]), str(entry["sha256"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UserError(
            f"{path} is not a readable backup manifest ({exc}). Nothing was restored."
        ) from None
    if manifest.get("format") != FORMAT:
        raise UserError(
            f"{path} is of backup format {manifest.get('format')!r}; this release reads "
            f"format {FORMAT}. Nothing was restored."
        )
    if not any(e["path"] == WAREHOUSE_FILE for e in files):
        raise UserError(
            f"{path} lists no {WAREHOUSE_FILE}: not a whole backup. Nothing was restored."
        )
    return manifest


def _table_problems(path: Path, tables: dict[str, int]) -> list[str]:
    """The copied warehouse opens and holds each table with its row count."""
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        return [f"{WAREHOUSE_FILE} does not open: {str(exc).splitlines()[0]}"]
    problems = []
    try:
        for name, rows in tables.items():
            quoted = ".".join(f'"{p}"' for p in name.split("."))
            try:
                (found,) = con.execute(f"SELECT count(*) FROM {quoted}").fetchone() or (None,)
            except duckdb.Error:
                problems.append(f"{WAREHOUSE_FILE} lacks the table {name}")
                continue
            if found != rows:
                problems.append(f"{name} holds {found:,} rows, the manifest {rows:,}")
    finally:
        con.close()
    return problems


def _store_folder(settings: Settings) -> Path:
    """Where the settings keep the upload store (beside the warehouse unless set)."""
    if settings.upload_store is not None:
        return Path(settings.upload_store)
    return settings.warehouse.with_name(settings.warehouse.name + ".uploads")


def _occupied(settings: Settings) -> list[str]:
    found = []
    if settings.warehouse.exists():
        found.append(f"the warehouse {settings.warehouse}")
    for label, folder in (
        ("the upload store", _store_folder(settings)),
        ("the upload folder", Path(settings.upload_dir)),
        ("the rounds' folder", settings.warehouse.parent / "rounds"),
    ):
        if folder.is_dir() and any(folder.iterdir()):
            found.append(f"{label} {folder}")
    if os.path.lexists(settings.public_snapshot):
        found.append(f"the public snapshot {settings.public_snapshot}")
    return found


def restore_backup(folder: Path, settings: Settings) -> RestoreResult:
    """Verify the backup in `folder`, then restore it into the empty location the
    settings name, and migrate it. See the module's doc."""
    folder = Path(folder)
    manifest = verify_backup(folder)
    occupied = _occupied(settings)
    if occupied:
        raise UserError(
            "A restore goes into an empty location; found " + "; ".join(occupied) + ". "
            "Point PROFORMA_WAREHOUSE (and the other paths) elsewhere, or move these away."
        )
    places = {
        "warehouse": lambda p: settings.warehouse,
        "store": lambda p: _store_folder(settings) / Path(p).name,
        "upload": lambda p: Path(settings.upload_dir) / Path(p).name,
        "round": lambda p: settings.warehouse.parent / p,  # rounds/<name>/...
        "snapshot": lambda p: Path(settings.public_snapshot),
    }
    written: list[Path] = []
    try:
        for entry in manifest["files"]:
            target = places[entry["kind"]](entry["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.restoring")
            shutil.copyfile(folder / entry["path"], tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, target)
            written.append(target)
        for parent in {p.parent for p in written}:
            sync_folder(parent)
        applied = _reopen(settings, manifest)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        wal = settings.warehouse.with_name(settings.warehouse.name + ".wal")
        if settings.warehouse in written:
            wal.unlink(missing_ok=True)
        raise
    return RestoreResult(manifest, applied)


def _reopen(settings: Settings, manifest: dict[str, Any]) -> list[str]:
    """Migrate the restored warehouse and point its unfinished jobs at the restored
    uploads; the names of the migrations applied."""
    from proforma.app.flows.warehouse import prepare

    uploads = {
        int(e["job_id"]): str(Path(settings.upload_dir).absolute() / Path(e["path"]).name)
        for e in manifest["files"]
        if e["kind"] == "upload"
    }
    wh = connect(settings)
    try:
        with wh.transaction():
            for job_id, path in uploads.items():
                wh.execute(
                    "UPDATE service.jobs SET upload_path = ? WHERE job_id = ?", [path, job_id]
                )
        return prepare(wh)
    finally:
        wh.close()
