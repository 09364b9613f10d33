"""Another process holding the warehouse: one clear line, never a lock traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import connect
from proforma.contracts.errors import WarehouseLocked

_HOLDER = (
    "import sys, duckdb\n"
    "con = duckdb.connect(sys.argv[1])\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n"  # hold the file until the test closes our stdin
)


@pytest.fixture
def holder(settings: Settings) -> Iterator[subprocess.Popen]:
    connect(settings).close()  # the file exists (and is migrated-free) before the holder opens it
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(settings.warehouse)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "ready"
    yield proc
    proc.stdin.close()
    proc.wait(timeout=30)


def test_connect_says_who_holds_the_lock(settings: Settings, holder: subprocess.Popen) -> None:
    with pytest.raises(WarehouseLocked) as info:
        connect(settings)
    message = str(info.value)
    assert "\n" not in message
    assert str(settings.warehouse) in message
    assert f"process {holder.pid}" in message
    with pytest.raises(WarehouseLocked):
        connect(settings, read_only=True)


@pytest.mark.parametrize(
    "args", [["migrate"], ["db", "status"], ["ingest", "parquet", "x.parquet"]]
)
def test_cli_prints_one_line_and_exits_2(
    settings: Settings, holder: subprocess.Popen, args: list[str], tmp_path
) -> None:
    if args[0] == "ingest":  # a valid file, so the lock (not the file) is what stops it
        from foundation_data import write_panel

        args = ["ingest", "parquet", str(write_panel(tmp_path / "p.parquet"))]
    out = subprocess.run(
        [sys.executable, "-c", "from proforma.app.cli import main; main()", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    text = (out.stdout + out.stderr).strip()
    assert out.returncode == 2, text
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    assert f"process {holder.pid}" in text and "open for writing" in text
