"""SQL checksums are memoized on disk per raw text; the scoring-SQL version and the
migrations' checks read them without parsing, and are never stale."""

from __future__ import annotations

import json
import shutil

import pytest

from proforma.app.scoring import provenance
from proforma.app.store import sqlfiles
from proforma.app.store.migrations import macro_definitions, migrate, status
from proforma.app.store.settings import get_settings
from proforma.app.store.sqlfiles import checksum, folder_checksum, normalize_sql


@pytest.fixture
def fresh_memo(settings, monkeypatch):
    """An empty checksum memo (settings: the cache folder under tmp_path), as in a new
    process; a `forget()` to drop the in-memory copy, as the next process would."""
    monkeypatch.setattr(sqlfiles, "_CACHES", {})
    provenance._eval_version.cache_clear()

    def forget() -> None:
        sqlfiles._CACHES.clear()
        provenance._eval_version.cache_clear()

    yield forget
    provenance._eval_version.cache_clear()


@pytest.fixture
def eval_dir(fresh_memo, tmp_path, monkeypatch):
    """A copy of sql/eval that the test may edit."""
    sql = tmp_path / "sql"
    shutil.copytree(provenance.SQL_DIR / "eval", sql / "eval")
    monkeypatch.setattr(provenance, "SQL_DIR", sql)
    monkeypatch.setattr(sqlfiles, "SQL_DIR", sql)
    return sql / "eval"


def memo_file():
    return get_settings().cache_dir / "sql_checksums.json"


def test_a_checksum_is_parsed_once_then_read_from_disk(fresh_memo, monkeypatch):
    text = "select a  FROM t -- a comment\n;"
    parsed = checksum(text)
    assert parsed == sqlfiles.hashlib.sha256(normalize_sql(text).encode()).hexdigest()
    assert list(json.loads(memo_file().read_text()).values()) == [parsed]
    fresh_memo()  # a new process
    monkeypatch.setattr(sqlfiles, "normalize_sql", lambda t: pytest.fail("parsed again"))
    assert checksum(text) == parsed
    # a new text (even one that normalizes the same) is a new key: parsed, never guessed
    with pytest.raises(pytest.fail.Exception, match="parsed again"):
        checksum("SELECT a FROM t;")


def test_a_memo_that_cannot_be_read_or_written_costs_only_a_parse(fresh_memo):
    text = "SELECT 1 AS one"
    expected = sqlfiles.hashlib.sha256(normalize_sql(text).encode()).hexdigest()
    memo_file().parent.mkdir(parents=True, exist_ok=True)
    memo_file().write_text("not json")
    assert checksum(text) == expected
    fresh_memo()
    memo_file().write_text(json.dumps({"k": 1, "other": ["x"]}))  # wrong shapes
    assert checksum(text) == expected
    fresh_memo()
    memo_file().unlink()
    memo_file().mkdir()  # a folder where the file should be: nothing written, no error
    assert checksum(text) == expected
    assert [p.name for p in memo_file().parent.iterdir()] == [memo_file().name]  # no debris


def test_the_memo_keeps_the_newest_entries(fresh_memo, monkeypatch):
    monkeypatch.setattr(sqlfiles._ChecksumCache, "KEPT", 3)
    values = [checksum(f"SELECT {i}") for i in range(5)]
    assert list(json.loads(memo_file().read_text()).values()) == values[-3:]


def test_the_eval_version_follows_every_edit(eval_dir):
    parsed = provenance.eval_sql_version()
    step = eval_dir / "070_metrics.sql"
    step.write_text(step.read_text().replace("\n", "\n\n", 1))  # layout only
    assert provenance.eval_sql_version() == parsed
    before = folder_checksum("eval")
    step.write_text(step.read_text() + "\nSELECT 1;\n")
    assert folder_checksum("eval") != before
    assert provenance.eval_sql_version() != parsed


@pytest.fixture
def migrations_dir(fresh_memo, tmp_path, monkeypatch):
    """A copy of migrations/ that the test may edit and add to."""
    folder = tmp_path / "migrations"
    shutil.copytree(provenance.MIGRATIONS_DIR, folder)
    monkeypatch.setattr(provenance, "MIGRATIONS_DIR", folder)
    return folder


def test_the_migrations_macros_are_part_of_the_eval_version(migrations_dir):
    """The scoring steps call macros that migrations define (V0030, V0065, V0131): a
    migration that replaces one is a new scoring-SQL version; other DDL, comments and
    layout are not."""
    shipped = provenance.eval_sql_version()
    assert any("eval.qs_piece" in d for d in macro_definitions(migrations_dir))
    (migrations_dir / "V9998__unrelated.sql").write_text(
        "-- a CREATE MACRO in a comment is no macro\nCREATE TABLE eval.x (a INTEGER);\n"
    )
    assert provenance.eval_sql_version() == shipped
    (migrations_dir / "V9999__pdf.sql").write_text(
        "CREATE OR REPLACE MACRO eval.norm_pdf(x) AS exp(-x * x / 2) / sqrt(2 * pi()) + 0;\n"
    )
    replaced = provenance.eval_sql_version()
    assert replaced != shipped
    (migrations_dir / "V9999__pdf.sql").unlink()
    assert provenance.eval_sql_version() == shipped
    # an edited definition (which `migrate` refuses for an applied file) also moves it
    v0065 = migrations_dir / "V0065__incremental_scoring.sql"
    v0065.write_text(v0065.read_text().replace("(u1 - u0) / 6", "(u1 - u0) / 7"))
    assert provenance.eval_sql_version() not in (shipped, replaced)


def test_a_new_process_versions_eval_sql_without_parsing(eval_dir, fresh_memo, monkeypatch):
    parsed = provenance.eval_sql_version()
    fresh_memo()
    monkeypatch.setattr(sqlfiles, "normalize_sql", lambda t: pytest.fail("parsed again"))
    assert provenance.eval_sql_version() == parsed


def test_opening_a_migrated_warehouse_parses_no_migration(wh, fresh_memo, monkeypatch):
    assert migrate(wh) == []  # the memo is filled (the fixture migrated before it was reset)
    fresh_memo()
    monkeypatch.setattr(sqlfiles, "normalize_sql", lambda t: pytest.fail("parsed again"))
    assert migrate(wh) == []
    assert {s.status for s in status(wh)} == {"applied"}
