"""A job stopped by the machine (full disk, DuckDB's memory limit) ends with one line naming
the setting to change, not a traceback; any other error keeps its traceback."""

from __future__ import annotations

import errno

import duckdb
import pytest

from proforma.app import cli

DISK_FULL = duckdb.IOException(
    'IO Error: Async write failed for range [offset=1, size=2]: {"exception_type":"IO",'
    '"exception_message":"Could not write file \\"/data/out/tuple_test.parquet.part\\": '
    'No space left on device","errno":"28"}'
)


@pytest.mark.parametrize(
    "exc, expected",
    [
        (DISK_FULL, "no space left on the device writing /data/out/tuple_test.parquet.part"),
        (OSError(errno.ENOSPC, "No space left on device"), "no space left on the device:"),
        (
            duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate"),
            "PROFORMA_MEMORY_LIMIT",
        ),
    ],
)
def test_resource_errors_end_with_one_line_and_exit_3(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    exc: Exception,
    expected: str,
) -> None:
    def job() -> None:
        raise exc

    monkeypatch.setattr(cli, "app", job)
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    assert stopped.value.code == cli.RESOURCE_EXIT
    err = capsys.readouterr().err
    assert expected in " ".join(err.split())
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "exc", [duckdb.IOException("IO Error: Cannot open file"), OSError(errno.EACCES, "denied")]
)
def test_other_errors_keep_their_traceback(monkeypatch: pytest.MonkeyPatch, exc: Exception) -> None:
    def job() -> None:
        raise exc

    monkeypatch.setattr(cli, "app", job)
    with pytest.raises(type(exc)):
        cli.main()
