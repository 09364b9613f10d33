"""`proforma submit / score / leaderboard / footprint / baselines / export`."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from scoring_fixtures import make_panel
from typer.testing import CliRunner

from proforma.app.cli import app


def _submission(wh, path, shift=0.1, bad=False):
    cells = wh.arrow(
        "SELECT f.gvkey AS firm, i.item AS target, qend(t.origin_q) AS origin, "
        "CAST(t.horizon AS INTEGER) AS horizon, t.actual + ? AS prediction "
        "FROM panel.truth t JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        "WHERE t.split = 'test'",
        [shift],
    )
    if bad:
        h = cells["horizon"].to_pylist()
        h[0] = 21
        cells = cells.set_column(3, "horizon", pa.array(h, pa.int32()))
    pq.write_table(cells, path)
    return cells.num_rows


def wh_scalar(settings, sql):
    """One value read from the warehouse between CLI calls (each call opens it itself)."""
    from proforma.app.store.warehouse import connect

    with connect(settings, read_only=True) as wh:
        return wh.scalar(sql)


def test_submit_score_leaderboard_export(settings, wh, tmp_path):
    make_panel(wh, n_firms=6)
    n = _submission(wh, tmp_path / "good.parquet")
    _submission(wh, tmp_path / "bad.parquet", bad=True)
    wh.close()
    runner = CliRunner()
    for args in (
        ["submit", "--help"],
        ["score", "--help"],
        ["leaderboard", "--help"],
        ["footprint", "create", "--help"],
        ["baselines", "reference", "--help"],
        ["export", "--help"],
    ):
        assert runner.invoke(app, args).exit_code == 0

    good = runner.invoke(app, ["submit", str(tmp_path / "good.parquet"), "--name", "mine"])
    assert good.exit_code == 0, good.output
    assert f"{n:,} rows" in good.output and "done:" in good.output

    base = runner.invoke(app, ["baselines", "reference"])
    assert base.exit_code == 0 and "2 reference baseline(s)" in base.output

    fp = runner.invoke(app, ["footprint", "create", "short", "--where", "horizon <= 4"])
    assert fp.exit_code == 0 and "short@1" in fp.output, fp.output
    bad_fp = runner.invoke(app, ["footprint", "create", "evil", "--where", "horizon IN (SELECT 1)"])
    assert bad_fp.exit_code != 0

    # submit --score: stored and scored in one process, on the footprint named
    again = runner.invoke(
        app,
        [
            "submit",
            str(tmp_path / "good.parquet"),
            "--name",
            "mine again",
            "--score",
            "-f",
            "short",
        ],
    )
    assert again.exit_code == 0, again.output
    assert f"{n:,} rows" in again.output and "done: score run" in again.output
    assert "1 submission(s)" in again.output and "short@1" in again.output
    # the named run, then the board of every current submission after it (issue 49)
    run = wh_scalar(settings, "SELECT max(score_run_id) FROM eval.score_runs WHERE NOT board")
    assert "board of short: score run" in again.output
    assert wh_scalar(
        settings, f"SELECT submission_ids FROM eval.score_runs WHERE score_run_id = {run}"
    ) == [
        wh_scalar(settings, "SELECT submission_id FROM eval.submissions WHERE name = 'mine again'")
    ]
    assert (
        runner.invoke(
            app, ["submit", str(tmp_path / "bad.parquet"), "--name", "x", "--score"]
        ).exit_code
        != 0
    )

    scored = runner.invoke(app, ["score"])
    assert scored.exit_code == 0, scored.output
    assert "4 submission(s)" in scored.output and "scoring SQL" in scored.output
    assert runner.invoke(app, ["score", "--footprint", "short", "-s", "mine"]).exit_code == 0

    table = runner.invoke(app, ["leaderboard", "--track", "absolute"])
    assert table.exit_code == 0 and "mine" in table.output, table.output
    out = tmp_path / "lb.csv"
    lb = runner.invoke(
        app, ["leaderboard", "--by", "horizon", "--format", "csv", "--out", str(out)]
    )
    assert lb.exit_code == 0, lb.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 4 * 20 and {"rank", "horizon", "model", "r2", "dm_vs_leader"} <= set(
        rows[0]
    )
    js = tmp_path / "lb.json"
    assert (
        runner.invoke(
            app, ["leaderboard", "--track", "density", "--format", "json", "--out", str(js)]
        ).exit_code
        == 0
    )
    assert json.loads(js.read_text())["provenance"]["footprint_name"] == "full"
    exported = tmp_path / "metrics.json"
    ex = runner.invoke(
        app, ["export", "metrics", "--run", "1", "--format", "json", "--out", str(exported)]
    )
    assert ex.exit_code == 0, ex.output
    assert json.loads(exported.read_text())["rows"][0]["score_run_id"] == 1

    # A rejected file: exit 2, one error line, the problem table, nothing written.
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from proforma.app.cli import main; main()",
            "submit",
            str(tmp_path / "bad.parquet"),
            "--name",
            "broken",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stdout + proc.stderr
    assert "horizon outside 1..20" in proc.stderr and "rejected, nothing written" in proc.stderr
    assert proc.stdout == ""  # the problem report and the error are status, not data

    # Piped to a file, the leaderboard keeps whole model names on one line (rich would
    # squeeze the table into 80 columns and cut them).
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    piped = subprocess.run(
        [sys.executable, "-c", "from proforma.app.cli import main; main()", "leaderboard"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert piped.returncode == 0, piped.stderr
    assert any("Seasonal random walk" in line for line in piped.stdout.splitlines())
