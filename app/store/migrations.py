"""Numbered, checksummed migrations (migrations/V0001__name.sql, ...).

Each pending migration runs once, in version order, inside its own transaction and is
recorded in `schema_migrations` with the checksum of its text, comments removed and
whitespace normalized (proforma.app.store.migration_checksums: no parser is involved, so
no SQL library's release can make an applied migration read as edited). A migration
that fails leaves nothing behind; an applied migration whose file changed (beyond
whitespace or comments) is an error, as is a recorded migration whose file has gone. A
row an earlier release recorded with its parser-based checksum is accepted and rewritten
to the text checksum by the next `migrate`.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from proforma.app.store.migration_checksums import accepted, normalize_text, text_checksum
from proforma.app.store.warehouse import Warehouse
from proforma.contracts import ROOT
from proforma.contracts.errors import MigrationError

MIGRATIONS_DIR = ROOT / "migrations"
_FILE = re.compile(r"^V(\d{4})__([a-z0-9_]+)\.sql$")
#: One statement of normalized text: a run of quoted text or anything but a semicolon.
_STATEMENT = re.compile(r"(?:'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[^;'\"])+")
_MACRO = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?MACRO\b", re.IGNORECASE)

_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY,
    name        VARCHAR NOT NULL,
    checksum    VARCHAR NOT NULL,
    applied_at  TIMESTAMP NOT NULL,
    elapsed_ms  DOUBLE NOT NULL
)
"""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text()

    @property
    def checksum(self) -> str:
        return text_checksum(self.sql)


@dataclass(frozen=True)
class MigrationState:
    version: int
    name: str
    status: str  # applied | pending | edited | missing
    applied_at: object = None
    #: applied with an earlier release's checksum (rewritten by the next `migrate`)
    legacy: bool = False


def discover(folder: Path = MIGRATIONS_DIR) -> list[Migration]:
    found: list[Migration] = []
    for path in sorted(folder.glob("*.sql")):
        m = _FILE.match(path.name)
        if not m:
            raise MigrationError(
                f"{path.name}: migration files are named V0001__lower_snake_name.sql"
            )
        found.append(Migration(int(m.group(1)), m.group(2), path))
    versions = [m.version for m in found]
    dupes = {v for v in versions if versions.count(v) > 1}
    if dupes:
        raise MigrationError(f"Two migrations share version(s) {sorted(dupes)}")
    return found


def macro_definitions(folder: Path = MIGRATIONS_DIR) -> list[str]:
    """Every macro the migrations create or replace, in the order they run: each
    statement's text without comments and with whitespace normalized (as checksummed).

    The scoring SQL calls these macros (eval.norm_cdf, eval.qs_piece, qord, ...), so they
    are part of what a scoring-SQL version stands for
    (proforma.app.scoring.provenance.eval_sql_version): a migration that replaces one
    moves the version, one that only adds tables does not.
    """
    found: list[str] = []
    for m in discover(folder):
        for statement in _STATEMENT.findall(normalize_text(m.sql)):
            if _MACRO.match(statement.strip()):
                found.append(statement.strip())
    return found


def _applied(wh: Warehouse) -> dict[int, tuple[str, str, object]]:
    if not wh.table_exists("schema_migrations"):
        return {}
    rows = wh.fetchall("SELECT version, name, checksum, applied_at FROM schema_migrations")
    return {v: (n, c, at) for v, n, c, at in rows}


def status(wh: Warehouse, folder: Path = MIGRATIONS_DIR) -> list[MigrationState]:
    applied = _applied(wh)
    files = {m.version: m for m in discover(folder)}
    states = []
    for version in sorted(set(files) | set(applied)):
        m = files.get(version)
        if m is None:  # applied once, its file gone since
            states.append(
                MigrationState(version, applied[version][0], "missing", applied[version][2])
            )
        elif version not in applied:
            states.append(MigrationState(version, m.name, "pending"))
        else:
            how = accepted(version, m.sql, applied[version][1])
            states.append(
                MigrationState(
                    version,
                    m.name,
                    "edited" if how is None else "applied",
                    applied[version][2],
                    legacy=how == "legacy",
                )
            )
    return states


def migrate(wh: Warehouse, folder: Path = MIGRATIONS_DIR) -> list[Migration]:
    """Apply pending migrations in order; returns those applied by this call."""
    wh.execute(_LEDGER)
    states = status(wh, folder)
    bad = [s for s in states if s.status in ("edited", "missing")]
    if bad:
        detail = ", ".join(f"V{s.version:04d}__{s.name} ({s.status})" for s in bad)
        raise MigrationError(
            f"Applied migrations no longer match their files: {detail}. Applied migrations "
            f"are immutable: restore the file and add a new migration for the change."
        )
    pending = {s.version for s in states if s.status == "pending"}
    legacy = [s.version for s in states if s.legacy]
    if legacy:  # once: from then on the ledger holds text checksums only
        files = {m.version: m for m in discover(folder)}
        with wh.transaction():
            for version in legacy:
                wh.execute(
                    "UPDATE schema_migrations SET checksum = ? WHERE version = ?",
                    [files[version].checksum, version],
                )
    done = []
    for m in discover(folder):
        if m.version not in pending:
            continue
        started = time.perf_counter()
        try:
            with wh.transaction():
                wh.execute(m.sql)
                wh.execute(
                    "INSERT INTO schema_migrations VALUES (?, ?, ?, current_timestamp::TIMESTAMP, ?)",
                    [m.version, m.name, m.checksum, (time.perf_counter() - started) * 1000],
                )
        except MigrationError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported as one line, nothing applied
            raise MigrationError(
                f"Migration {m.path.name} failed and was rolled back: {exc}"
            ) from None
        done.append(m)
    return done
