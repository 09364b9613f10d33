"""Machine-readable CLI output: `--format json|csv` puts only the data on stdout (status,
warnings and the closing `done:` line go to stderr), and JSON is typed, provenance too."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest
from scoring_fixtures import make_panel
from typer.testing import CliRunner

from proforma.app.cli import app


@pytest.fixture
def scored(settings, wh):
    """A tiny panel with the reference baselines scored on `full` (score run 1)."""
    make_panel(wh, n_firms=4)
    wh.close()
    result = CliRunner().invoke(app, ["score"])
    assert result.exit_code == 0, result.output
    return settings


def test_leaderboard_json_on_stdout_is_the_whole_stdout_and_typed(scored) -> None:
    result = CliRunner().invoke(app, ["leaderboard", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # nothing but the document
    meta = doc["provenance"]
    assert isinstance(meta["score_run_id"], int) and isinstance(meta["n_cells"], int)
    assert isinstance(meta["footprint_version"], int) and meta["footprint_name"] == "full"
    assert isinstance(meta["finished_at"], str) and "T" in meta["finished_at"]  # ISO 8601
    assert isinstance(doc["rows"][0]["rank"], int) and isinstance(doc["rows"][0]["r2"], float)
    assert "done:" in result.stderr and "done:" not in result.stdout


def test_leaderboard_csv_and_export_json_write_only_data(scored) -> None:
    runner = CliRunner()
    lb = runner.invoke(app, ["leaderboard", "--by", "horizon", "--format", "csv"])
    assert lb.exit_code == 0, lb.output
    rows = list(csv.DictReader(io.StringIO(lb.stdout)))
    assert len(rows) == 2 * 20 and rows[0]["rank"] == "1"
    assert "done:" in lb.stderr
    ex = runner.invoke(app, ["export", "metrics", "--run", "1", "--format", "json"])
    assert ex.exit_code == 0, ex.output
    doc = json.loads(ex.stdout)
    assert doc["provenance"] == {"table": "eval.metrics", "score_run_id": 1}
    assert "written to stdout" in ex.stderr


def test_tables_stay_on_stdout_and_errors_go_to_stderr(scored) -> None:
    runner = CliRunner()
    table = runner.invoke(app, ["leaderboard"])
    assert table.exit_code == 0 and "squared track, full@1" in table.stdout
    assert "done:" not in table.stdout
    wrong = runner.invoke(app, ["leaderboard", "--format", "yaml"])
    assert wrong.exit_code != 0 and wrong.stdout == ""
    assert "Unknown format 'yaml'" in str(wrong.exception)


def test_a_real_process_redirected_to_a_file_gets_valid_json(scored, tmp_path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from proforma.app.cli import main; main()",
            "leaderboard",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["provenance"]["footprint_name"] == "full"
    assert "done:" in proc.stderr
    bad = subprocess.run(
        [
            sys.executable,
            "-c",
            "from proforma.app.cli import main; main()",
            "leaderboard",
            "--footprint",
            "nowhere",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert "error:" in bad.stderr and "nowhere" in bad.stderr


def test_a_submission_warning_goes_to_stderr_and_stdout_stays_empty(settings, wh, tmp_path):
    """The README's promise, on a command that warns: `proforma submit` of a file with a
    mistyped column stores it, warns on stderr and prints nothing on stdout."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from scoring_fixtures import good_columns

    make_panel(wh)
    wh.close()
    cols = {**good_columns(), "sigme": [0.5] * 40}
    path = tmp_path / "typo.parquet"
    pq.write_table(pa.table(cols), path)
    result = CliRunner().invoke(app, ["submit", str(path), "--name", "typo"])
    assert result.exit_code == 0, result.output
    assert "warning:" in result.stderr and "did you mean 'sigma'?" in result.stderr
    assert "done:" in result.stderr
    assert result.stdout == ""
