"""SQL files under sql/ and migrations/: finding, normalized checksums, parameter rendering.

Values reach SQL as DuckDB session variables (`getvariable('name')`), so every file
stays plain SQL that sqlglot and DuckDB parse as-is. Identifiers that must vary
(rare) are written `{{ name }}` and are checked against a strict pattern. The per-metric
lists of the aggregate steps are `{{ metric_... }}` slots, filled from the metric
registry when a file is read (`proforma.app.store.metric_sql`), and what differs by
density family in the per-cell terms is `{{ family_... }}` slots, filled from the family
registry (`proforma.app.store.family_sql`): a step's text, its checksum and what runs are
the filled text.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from proforma.app.store import family_sql, metric_sql
from proforma.contracts import ROOT
from proforma.contracts.errors import UserError

SQL_DIR = ROOT / "sql"
_IDENT_SLOT = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_SAFE_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_LINE_COMMENT = re.compile(r"--[^\n]*")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


def normalize_sql(text: str) -> str:
    """Canonical form of a SQL script: parsed and regenerated without comments or layout.

    Two files that differ only in whitespace, comments or keyword case normalize to the
    same string. If sqlglot cannot parse a statement (new DuckDB syntax), that statement
    falls back to comment-stripped, whitespace-collapsed text, so checksums still exist.
    """
    import sqlglot  # only here: a process whose checksums are all cached never parses
    import sqlglot.errors

    text = _IDENT_SLOT.sub(lambda m: f"__slot_{m.group(1)}__", text)
    try:
        statements = sqlglot.parse(text, read="duckdb")
        parts = [s.sql(dialect="duckdb", comments=False) for s in statements if s is not None]
        return ";\n".join(parts)
    except sqlglot.errors.SqlglotError:
        stripped = _BLOCK_COMMENT.sub(" ", _LINE_COMMENT.sub(" ", text))
        return " ".join(stripped.split()).rstrip(";").lower()


@functools.cache
def _sqlglot_version() -> str:
    """sqlglot's version without importing it (0.15 s a process)."""
    return importlib.metadata.version("sqlglot")


def checksum(text: str) -> str:
    """sha256 of the normalized SQL (first 16 hex digits are plenty to tell versions apart).

    Normalizing parses the text with sqlglot: every process that opens a warehouse checks
    the migrations' checksums (0.2 s of parsing), and every build and score run
    checksums its steps. So checksums are also kept on disk, under the sha256 of the raw
    text and the sqlglot version that normalizes it (`{cache_dir}/sql_checksums.json`):
    each content is parsed once, not once per process.
    """
    key = hashlib.sha256(f"sqlglot {_sqlglot_version()}\0{text}".encode()).hexdigest()
    cache = _checksum_cache()
    value = cache.get(key)
    if value is None:
        value = hashlib.sha256(normalize_sql(text).encode()).hexdigest()
        cache.put(key, value)
    return value


class _ChecksumCache:
    """Raw-text digest -> normalized checksum, in memory and in one JSON file.

    A file that cannot be read or written only costs a parse: the cache is never the
    source of a checksum, only a memo of one. Writes replace the file atomically; two
    processes writing at once can lose an entry, which the next process parses again.
    """

    #: Entries kept on disk (the newest): a few hundred SQL files, several versions each.
    KEPT = 4096

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        try:
            known = json.loads(path.read_text())
        except (OSError, ValueError):
            known = {}
        self.known: dict[str, str] = (
            {k: v for k, v in known.items() if isinstance(v, str)}
            if isinstance(known, dict)
            else {}
        )

    def get(self, key: str) -> str | None:
        return self.known.get(key)

    def put(self, key: str, value: str) -> None:
        with self.lock:  # the service checksums from several threads
            self.known[key] = value
            if len(self.known) > self.KEPT:
                self.known = dict(list(self.known.items())[-self.KEPT :])
            tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_text(json.dumps(self.known))
                tmp.replace(self.path)
            except OSError:
                tmp.unlink(missing_ok=True)  # the memo stays as it was; nothing else is lost


_CACHES: dict[Path, _ChecksumCache] = {}


def _checksum_cache() -> _ChecksumCache:
    # Per cache folder: the settings (and so the folder) can change within a process.
    from proforma.app.store.settings import get_settings

    path = get_settings().cache_dir / "sql_checksums.json"
    if path not in _CACHES:
        _CACHES[path] = _ChecksumCache(path)
    return _CACHES[path]


@dataclass(frozen=True)
class SqlFile:
    path: Path
    text: str

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def checksum(self) -> str:
        return checksum(self.text)

    @property
    def purpose(self) -> str:
        """The opening comment block: what the step makes from what."""
        lines = []
        for line in self.text.splitlines():
            s = line.strip()
            if s.startswith("--"):
                lines.append(s.lstrip("-").strip())
            elif s:
                break
        return " ".join(x for x in lines if x)

    def render(self, identifiers: dict[str, str] | None = None) -> str:
        identifiers = identifiers or {}

        def fill(m: re.Match) -> str:
            key = m.group(1)
            if key not in identifiers:
                raise UserError(f"SQL step {self.path.name} needs identifier '{key}'")
            value = identifiers[key]
            if not _SAFE_IDENT.match(value):
                raise UserError(f"'{value}' is not a valid SQL identifier for '{key}'")
            return value

        return _IDENT_SLOT.sub(fill, self.text)


def sql_file(name: str | Path) -> SqlFile:
    """A step by path or by name relative to sql/ (`build/010_trim` or `build/010_trim.sql`)."""
    path = Path(name)
    if not path.is_absolute():
        path = SQL_DIR / path
    if path.suffix != ".sql":
        path = path.with_suffix(".sql")
    if not path.exists():
        raise UserError(f"No SQL step {name!r} (looked for {path})")
    return _read(path)


def _read(path: Path) -> SqlFile:
    """A step as it runs: its family and metric slots filled from the registries."""
    return SqlFile(path, metric_sql.expand(family_sql.expand(path.read_text())))


def query_text(name: str | Path) -> str:
    """A query file's SELECT (sql/<name>.sql) without its closing semicolon, to nest in
    another statement (a view, a subquery)."""
    return sql_file(name).text.strip().rstrip(";")


def steps_in(folder: str) -> list[SqlFile]:
    """The steps of sql/<folder>/ in file-name order (names start with a number)."""
    return [_read(p) for p in sorted((SQL_DIR / folder).glob("*.sql"))]


def folder_checksum(folder: str) -> str:
    """One version string for a whole folder of steps (order and content)."""
    h = hashlib.sha256()
    for f in steps_in(folder):
        h.update(f.path.name.encode())
        h.update(f.checksum.encode())
    return h.hexdigest()
