"""The scoring-SQL version: kept on disk per content of sql/eval, never stale."""

from __future__ import annotations

import json
import shutil

import pytest

from app.scoring import provenance
from app.settings import get_settings
from app.sqlfiles import folder_checksum


@pytest.fixture
def eval_dir(settings, tmp_path, monkeypatch):
    """A copy of sql/ whose eval steps the test may edit, and a fresh cache (settings:
    the cache folder under tmp_path)."""
    sql = tmp_path / "sql"
    shutil.copytree(provenance.SQL_DIR / "eval", sql / "eval")
    monkeypatch.setattr(provenance, "SQL_DIR", sql)
    monkeypatch.setattr("app.sqlfiles.SQL_DIR", sql)
    provenance._eval_version.cache_clear()
    yield sql / "eval"
    provenance._eval_version.cache_clear()


def test_the_cached_version_is_the_parsed_one_and_follows_every_edit(eval_dir):
    parsed = folder_checksum("eval")[:16]
    assert provenance.eval_sql_version() == parsed
    cache = get_settings().cache_dir / "eval_sql_version.json"
    assert list(json.loads(cache.read_text()).values()) == [parsed]
    # a new process (no memory cache) reads it from disk, without parsing
    provenance._eval_version.cache_clear()
    real = provenance.folder_checksum
    try:
        provenance.folder_checksum = lambda folder: pytest.fail("parsed again")
        assert provenance.eval_sql_version() == parsed
    finally:
        provenance.folder_checksum = real
    # after any edit, the version is the one parsed from the edited files
    step = eval_dir / "070_metrics.sql"
    step.write_text(step.read_text().replace("\n", "\n\n", 1))  # layout only
    provenance._eval_version.cache_clear()
    assert provenance.eval_sql_version() == folder_checksum("eval")[:16] == parsed
    step.write_text(step.read_text() + "\nSELECT 1;\n")
    provenance._eval_version.cache_clear()
    edited = provenance.eval_sql_version()
    assert edited == folder_checksum("eval")[:16] != parsed
    # a cache file that cannot be read is ignored
    cache.write_text("not json")
    provenance._eval_version.cache_clear()
    assert provenance.eval_sql_version() == edited
