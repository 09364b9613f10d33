"""Migrations: fresh apply, idempotent re-run, edits detected, failures rolled back; text
checksums that no SQL parser moves, and earlier releases' ledgers still opening."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from proforma.app.store import sqlfiles
from proforma.app.store.legacy_checksums import LEGACY
from proforma.app.store.migration_checksums import legacy_checksum, normalize_text, text_checksum
from proforma.app.store.migrations import MIGRATIONS_DIR, discover, migrate, status
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, connect
from proforma.contracts.errors import MigrationError


@pytest.fixture
def bare(settings: Settings) -> Iterator[Warehouse]:
    w = connect(settings)
    yield w
    w.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    dst = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, dst)
    return dst


def test_fresh_apply_then_idempotent(bare: Warehouse, folder: Path) -> None:
    applied = migrate(bare, folder)
    assert [m.version for m in applied] == [m.version for m in discover(folder)]
    assert bare.table_exists("raw.fundq") and bare.table_exists("ref.items")
    assert bare.scalar("SELECT qlabel(qord(DATE '2001-12-31'))") == "2001Q4"
    recorded = bare.fetchall("SELECT version, checksum FROM schema_migrations ORDER BY 1")
    assert [v for v, _ in recorded] == [m.version for m in applied]
    assert all(len(c) == 64 for _, c in recorded)

    assert migrate(bare, folder) == []
    assert {s.status for s in status(bare, folder)} == {"applied"}
    assert bare.scalar("SELECT count(*) FROM schema_migrations") == len(applied)


def test_edited_migration_is_an_error(bare: Warehouse, folder: Path) -> None:
    migrate(bare, folder)
    path = folder / "V0003__quarter_macros.sql"
    path.write_text(path.read_text().replace("year(d) * 4", "year(d) * 5"))
    states = {s.version: s.status for s in status(bare, folder)}
    assert states[3] == "edited"
    with pytest.raises(MigrationError, match=r"V0003__quarter_macros \(edited\)"):
        migrate(bare, folder)


def test_whitespace_and_comment_edits_are_not_edits(bare: Warehouse, folder: Path) -> None:
    migrate(bare, folder)
    path = folder / "V0003__quarter_macros.sql"
    text = path.read_text()
    edited = "-- a new comment line\n/* and a block */\n" + text.replace(
        "CREATE MACRO", "CREATE   MACRO"
    ).replace(" AS ", "\n    AS ").replace("(d)", "( d )").replace("\n", "\r\n")
    assert edited != text
    path.write_text(edited)
    assert {s.status for s in status(bare, folder)} == {"applied"}
    assert migrate(bare, folder) == []
    # a letter's case is the file's text: only whitespace and comments are normalized
    path.write_text(text.replace("CREATE MACRO", "create macro"))
    assert {s.version: s.status for s in status(bare, folder)}[3] == "edited"


def test_quoted_text_is_kept_whole() -> None:
    plain = "SELECT 'a -- b', \"x  y\", $$ /* k */ $$ FROM t -- note\n;"
    assert normalize_text(plain) == "SELECT'a -- b',\"x  y\",$$ /* k */ $$FROM t;"
    assert text_checksum(plain) != text_checksum(plain.replace("'a -- b'", "'a --  b'"))
    assert text_checksum(plain) == text_checksum(plain.replace("FROM t", "FROM\n\tt /* c */"))


def _parser_prints_differently(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sqlglot release that prints every statement otherwise (the same bytes on disk)."""
    real = sqlfiles.normalize_sql
    monkeypatch.setattr(sqlfiles, "normalize_sql", lambda text: real(text).upper() + " /*v*/")
    monkeypatch.setattr(sqlfiles, "_sqlglot_version", lambda: "99.0")  # the memo's key


def test_a_parser_that_prints_otherwise_changes_nothing(
    bare: Warehouse, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    migrate(bare, folder)
    _parser_prints_differently(monkeypatch)
    assert {s.status for s in status(bare, folder)} == {"applied"}
    assert migrate(bare, folder) == []


def test_an_earlier_release_s_checksums_keep_opening(
    bare: Warehouse, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The transition: a ledger an earlier release wrote (sqlglot's checksums) opens, even
    after sqlglot prints otherwise, and the next migrate rewrites it to text checksums."""
    migrate(bare, folder)
    # the ledger as earlier releases wrote it, and a migration added after the frozen
    # table was made, recorded the old way too (a warehouse of an interim main)
    late = folder / "V0998__late.sql"
    late.write_text("CREATE TABLE raw.late (x INTEGER);  -- added after the table\n")
    migrate(bare, folder)
    for m in discover(folder):
        if m.version in LEGACY or m.version == 998:  # (later ones were never recorded so)
            bare.execute(
                "UPDATE schema_migrations SET checksum = ? WHERE version = ?",
                [sqlfiles.checksum(m.sql), m.version],
            )
    assert set(LEGACY) <= {m.version for m in discover(folder)}
    states = status(bare, folder)
    assert {s.status for s in states} == {"applied"}
    assert {s.version for s in states if s.legacy} == {*LEGACY, 998}
    # sqlglot now prints otherwise: the frozen table still knows the shipped files' old
    # checksums; only the late one (not in it) cannot be told from an edit any more
    _parser_prints_differently(monkeypatch)
    states = status(bare, folder)
    assert {s.version for s in states if s.status == "edited"} == {998}
    monkeypatch.undo()
    migrate(bare, folder)  # rewrites every row, the late one included
    recorded = dict(bare.fetchall("SELECT version, checksum FROM schema_migrations"))
    assert recorded == {m.version: text_checksum(m.sql) for m in discover(folder)}
    _parser_prints_differently(monkeypatch)
    states = status(bare, folder)
    assert {s.status for s in states} == {"applied"} and not any(s.legacy for s in states)


def test_frozen_old_checksums_match_the_shipped_files() -> None:
    """The frozen table's text checksums are the shipped files' (migrations are never
    edited); its old checksums are the ones sqlglot as pinned gives."""
    shipped = {m.version: m for m in discover()}
    for version, (old, text) in LEGACY.items():
        assert text_checksum(shipped[version].sql) == text, version
        assert legacy_checksum(version, shipped[version].sql) == old


def test_failing_migration_leaves_nothing(bare: Warehouse, folder: Path) -> None:
    migrate(bare, folder)
    bad = folder / "V0004__half_done.sql"
    bad.write_text(
        "CREATE TABLE raw.made_first (x INTEGER);\n"
        "INSERT INTO raw.made_first VALUES (1);\n"
        "CREATE TABLE raw.fundq (x INTEGER);  -- exists already: fails\n"
    )
    with pytest.raises(MigrationError, match="V0004__half_done.sql failed and was rolled back"):
        migrate(bare, folder)
    assert not bare.table_exists("raw.made_first")
    assert bare.scalar("SELECT count(*) FROM schema_migrations WHERE version = 4") == 0
    assert [s.status for s in status(bare, folder) if s.version == 4] == ["pending"]
    # The connection is usable afterwards and a fixed file applies.
    bad.write_text("CREATE TABLE raw.made_first (x INTEGER);\n")
    assert [m.version for m in migrate(bare, folder)] == [4]
    assert bare.table_exists("raw.made_first")


def test_missing_applied_migration_is_an_error(bare: Warehouse, folder: Path) -> None:
    migrate(bare, folder)
    (folder / "V0003__quarter_macros.sql").unlink()
    with pytest.raises(MigrationError, match=r"V0003__quarter_macros \(missing\)"):
        migrate(bare, folder)


@pytest.mark.parametrize(
    "name", ["V4__short.sql", "V0004-dash.sql", "V0004__Upper.sql", "0004__x.sql"]
)
def test_bad_file_names(bare: Warehouse, folder: Path, name: str) -> None:
    (folder / name).write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="V0001__lower_snake_name.sql"):
        migrate(bare, folder)
    assert not bare.table_exists("raw.fundq")  # nothing applied before the check


def test_duplicate_versions(bare: Warehouse, folder: Path) -> None:
    (folder / "V0004__one.sql").write_text("CREATE TABLE a (x INTEGER);")
    (folder / "V0004__two.sql").write_text("CREATE TABLE b (x INTEGER);")
    with pytest.raises(MigrationError, match=r"share version\(s\) \[4\]"):
        migrate(bare, folder)
    assert not bare.table_exists("raw.fundq")
