"""Issue 49, item 1: a footprint's board is its current state (every active submission on
the common sample of all of them), whichever command scored last; a run of named
submissions stays the provenance of its own numbers."""

from __future__ import annotations

import pyarrow.parquet as pq
from scoring_fixtures import make_panel
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.store.warehouse import connect


def _file(wh, path, shift: float) -> None:
    pq.write_table(
        wh.arrow(
            "SELECT f.gvkey AS firm, i.item AS target, qend(t.origin_q) AS origin, "
            "CAST(t.horizon AS INTEGER) AS horizon, t.actual + ? AS prediction "
            "FROM panel.truth t JOIN panel.firms f USING (firm_id) "
            "JOIN ref.items i USING (item_id) WHERE t.split = 'test'",
            [shift],
        ),
        path,
    )


def test_submit_and_score_one_keeps_the_whole_board(settings, wh, tmp_path):
    make_panel(wh, n_firms=5)
    for j, shift in enumerate((0.1, 0.2, 0.3)):
        _file(wh, tmp_path / f"m{j}.parquet", shift)
    _file(wh, tmp_path / "new.parquet", 0.05)
    wh.close()
    runner = CliRunner()
    for j in range(3):
        out = runner.invoke(app, ["submit", str(tmp_path / f"m{j}.parquet"), "--name", f"m{j}"])
        assert out.exit_code == 0, out.output
    # four scored submissions: three uploads and the reference baselines made by `score`
    out = runner.invoke(app, ["score", "--no-coherence"])
    assert out.exit_code == 0, out.output
    with connect(settings, read_only=True) as w:
        before = w.scalar("SELECT len(submission_ids) FROM eval.score_runs")
    assert before >= 4

    out = runner.invoke(
        app,
        ["submit", str(tmp_path / "new.parquet"), "--name", "fade-new", "--score"],
    )
    assert out.exit_code == 0, out.output
    assert f"board of full: score run 3, {before + 1} submission(s)" in out.output

    board = runner.invoke(app, ["leaderboard", "-f", "full", "--format", "json"])
    assert board.exit_code == 0, board.output
    import json

    rows = json.loads(board.stdout)["rows"]
    assert len(rows) == before + 1
    assert rows[0]["model"] == "fade-new"

    with connect(settings, read_only=True) as w:
        # the named run keeps its single member (the provenance of its numbers); the
        # board is the run after it, of every current submission on one common sample
        runs = w.fetchall(
            "SELECT score_run_id, len(submission_ids), board FROM eval.score_runs ORDER BY 1"
        )
        assert [(r[1], r[2]) for r in runs] == [(before, True), (1, False), (before + 1, True)]
        assert w.scalar("SELECT score_run_id FROM eval.board_runs") == 3
        # what GET /api/v1/leaderboards/full and the pages read
        from proforma.app.read.queries import score_run

        current, named = score_run(w, "full"), score_run(w, "full", 2)
        assert current is not None and current["score_run_id"] == 3
        assert named is not None and named["submission_ids"] == [
            w.scalar("SELECT submission_id FROM eval.submissions WHERE name = 'fade-new'")
        ]
        # the fresh member's numbers on the board are those of its named run (same sample)
        assert (
            w.scalar(
                "SELECT from_run FROM eval.run_results r JOIN eval.submissions s "
                "USING (submission_id) WHERE r.score_run_id = 3 AND s.name = 'fade-new'"
            )
            == 2
        )


def test_a_named_run_alone_does_not_shrink_the_board(settings, wh, tmp_path):
    """Without a board run after it (a caller of proforma.app.scoring.score with a list),
    the board is still the last board run, never the one-row named run."""
    from proforma.app.scoring import leaderboard, score

    make_panel(wh, n_firms=5)
    _file(wh, tmp_path / "a.parquet", 0.1)
    _file(wh, tmp_path / "b.parquet", 0.2)
    from proforma.app.scoring import ingest_parquet

    a = ingest_parquet(wh, tmp_path / "a.parquet", "a")
    b = ingest_parquet(wh, tmp_path / "b.parquet", "b")
    first = score(wh, "full", coherence=False, baselines=False)
    named = score(wh, "full", [a], coherence=False)
    assert named > first
    table = leaderboard(wh, "full")
    assert sorted(table.column("submission_id").to_pylist()) == sorted([a, b])
    # the named run is still there by its id
    assert leaderboard(wh, "full", score_run_id=named).num_rows == 1
    assert wh.scalar("SELECT score_run_id FROM eval.board_runs") == first
