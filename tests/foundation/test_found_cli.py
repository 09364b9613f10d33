"""`proforma migrate`, `proforma db status`, `proforma ingest parquet` and --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from foundation_data import n_rows, write_panel
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import connect


def proforma(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from proforma.app.cli import main; main()", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_migrate_then_status(settings: Settings) -> None:
    runner = CliRunner()
    first = runner.invoke(app, ["migrate"])
    assert first.exit_code == 0, first.output
    assert "applied V0001__raw_schema.sql" in first.output
    assert "done:" in first.output and str(settings.warehouse) in first.output.replace("\n", "")
    again = runner.invoke(app, ["migrate"])
    assert again.exit_code == 0 and "done: 0 migration(s) applied" in again.output

    status = runner.invoke(app, ["db", "status"])
    assert status.exit_code == 0, status.output
    assert "V0001" in status.output and "applied" in status.output
    assert "raw.fundq" in status.output and "ref.items" in status.output
    assert "pending" in status.output.split("done:")[-1]  # the summary counts pending ones
    assert "0 pending" in status.output


def test_status_before_migrate_lists_pending(settings: Settings) -> None:
    result = CliRunner().invoke(app, ["db", "status"])
    assert result.exit_code == 0, result.output
    assert "pending" in result.output


def test_ingest_parquet_subprocess(settings: Settings, tmp_path: Path) -> None:
    good = proforma("ingest", "parquet", str(write_panel(tmp_path / "p.parquet")))
    assert good.returncode == 0, good.stdout + good.stderr
    assert f"done: ingest 1 from parquet: fundq {n_rows()}" in good.stderr  # status, not data

    bad = proforma("ingest", "parquet", str(write_panel(tmp_path / "bad.parquet", fqtr=None)))
    text = (bad.stdout + bad.stderr).strip()
    assert bad.returncode == 2 and "Traceback" not in text
    assert len(text.splitlines()) == 1 and "missing key column(s) fqtr" in text
    with connect(settings, read_only=True) as wh:
        assert wh.scalar("SELECT count(*) FROM raw.fundq") == n_rows()
        assert wh.scalar("SELECT count(*) FROM raw.ingests") == 1


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--help"], ["migrate", "db", "ingest"]),
        (["ingest", "--help"], ["wrds", "parquet"]),
        (["ingest", "wrds", "--help"], ["--user", "--start", "--end", "ONE login", "loop"]),
        (["ingest", "parquet", "--help"], ["PATH", "--industry", "--links"]),
        (["migrate", "--help"], ["migrations"]),
        (["db", "status", "--help"], ["migrations"]),
    ],
)
def test_help(args: list[str], expected: list[str]) -> None:
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    for word in expected:
        assert word in flat, (word, flat)


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_command_ends_at_once_with_its_status_and_its_output_whole(
    settings: Settings,
) -> None:
    listing = _python("from proforma.app.cli import entry; entry()", "--help")
    assert listing.returncode == 0 and listing.stdout.rstrip().endswith(
        CliRunner().invoke(app, ["--help"]).output.rstrip().splitlines()[-1]
    )
    refused = _python(
        "import os; os.environ['PROFORMA_THREADS'] = 'x'\n"
        "from proforma.app.cli import entry; entry()",
        "db",
        "status",
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "error: setting PROFORMA_THREADS: 'x' is not an integer"
    ]


def test_an_output_that_cannot_be_flushed_ends_with_the_interpreters_status() -> None:
    closed = _python(
        "import sys; from proforma.app.cli import leave\n"
        "sys.stdout.write('x'); sys.stdout.close(); leave(0)"
    )
    assert closed.returncode == 120


def test_a_thread_still_running_ends_the_usual_way_after_it() -> None:
    # the interpreter waits for a non-daemon thread, and os._exit would not
    waited = _python(
        "import threading, time; from proforma.app.cli import leave\n"
        "def late(): time.sleep(0.3); print('late', flush=True)\n"
        "threading.Thread(target=late).start(); leave(5)"
    )
    assert waited.returncode == 5 and waited.stdout == "late\n"


def test_main_in_a_process_that_goes_on_raises_system_exit(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from proforma.app import cli

    monkeypatch.setattr(sys, "argv", ["proforma", "db", "status"])
    with pytest.raises(SystemExit) as done:
        cli.main()
    assert done.value.code == 0
