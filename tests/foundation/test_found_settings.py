"""The one settings class: arguments over the environment over `.env` over defaults,
each value read as its field's type, and a clear error for one that is not."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from proforma.app.store.settings import DATA_DIR, Settings, get_settings, paths_under
from proforma.contracts.errors import UserError


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No PROFORMA_ variable set, the working folder an empty one (no .env)."""
    import os

    for name in list(os.environ):
        if name.upper().startswith("PROFORMA_"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_defaults_environment_dotenv_and_arguments(clean_env: Path, monkeypatch) -> None:
    assert Settings().threads is None
    assert Settings().warehouse == Path("data/warehouse.duckdb")
    (clean_env / ".env").write_text(
        "# the service's settings\n"
        "export PROFORMA_THREADS=3\n"
        "PROFORMA_MEMORY_LIMIT = '3GB'  \n"
        'PROFORMA_WAREHOUSE="/data/w #1.duckdb"\n'
        "proforma_query_timeout_s=2.5 # seconds\n"
        "OTHER_TOOL=1\n"
        "not a line\n"
    )
    s = Settings()
    assert (s.threads, s.memory_limit, s.query_timeout_s) == (3, "3GB", 2.5)
    assert s.warehouse == Path("/data/w #1.duckdb")
    monkeypatch.setenv("PROFORMA_THREADS", "4")  # the environment over .env
    monkeypatch.setenv("proforma_upload_max_bytes", "1024")  # any case
    s = Settings()
    assert (s.threads, s.upload_max_bytes) == (4, 1024)
    s = Settings(threads=1, warehouse="x.duckdb")  # arguments over both, read as their type
    assert (s.threads, s.warehouse, s.memory_limit) == (1, Path("x.duckdb"), "3GB")
    assert dataclasses.replace(s, threads=2).threads == 2


def test_empty_optional_is_none_and_bad_values_name_the_variable(clean_env, monkeypatch) -> None:
    monkeypatch.setenv("PROFORMA_THREADS", "")
    monkeypatch.setenv("PROFORMA_UPLOAD_STORE", " ")
    s = Settings()
    assert s.threads is None and s.upload_store is None
    for name, value, words in (
        ("PROFORMA_THREADS", "two", "'two' is not an integer"),
        ("PROFORMA_QUERY_TIMEOUT_S", "5s", "'5s' is not a number"),
        ("PROFORMA_WRDS_PORT", "", "'' is not an integer"),
        ("PROFORMA_SHARE_INHOUSE_FORECASTS", "maybe", "'maybe' is not true or false"),
    ):
        monkeypatch.setenv(name, value)
        with pytest.raises(UserError, match=words) as caught:
            Settings()
        assert name in str(caught.value)
        monkeypatch.delenv(name)
    assert Settings().share_inhouse_forecasts is False
    for text, meant in (("true", True), ("YES", True), ("1", True), ("no", False), ("0", False)):
        monkeypatch.setenv("PROFORMA_SHARE_INHOUSE_FORECASTS", text)
        assert Settings().share_inhouse_forecasts is meant
    monkeypatch.delenv("PROFORMA_SHARE_INHOUSE_FORECASTS")
    with pytest.raises(UserError, match="threads: 2.5 is not an integer"):
        Settings(threads=2.5)
    with pytest.raises(TypeError, match="no field colour"):
        Settings(colour="red")


def test_a_bad_setting_is_one_line_from_the_cli(clean_env: Path) -> None:
    import os

    env = {**os.environ, "PROFORMA_THREADS": "many"}
    done = subprocess.run(
        [sys.executable, "-m", "proforma.app.cli", "db", "status"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "PROFORMA_THREADS: 'many' is not an integer" in done.stderr
    assert "Traceback" not in done.stderr
    get_settings.cache_clear()


def test_paths_under_moves_every_default_data_path_into_the_folder(
    clean_env: Path, monkeypatch
) -> None:
    folder = clean_env / "elsewhere"
    for name, value in paths_under(folder).items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    moved = []
    for field in dataclasses.fields(Settings):
        if isinstance(field.default, Path) and field.default.is_relative_to(DATA_DIR):
            assert getattr(settings, field.name) == folder / field.default.relative_to(DATA_DIR)
            moved.append(field.name)
    assert {"warehouse", "temp_directory", "cache_dir", "public_snapshot"} <= set(moved)
