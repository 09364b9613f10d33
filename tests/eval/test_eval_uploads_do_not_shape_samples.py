"""An upload never takes a cell out of the others' common sample (issue 47, item 2).

One upload that left out exactly one cell used to shrink the run's common sample by that
cell, so every in-house model's exact metrics before and after it differed by that one
cell's loss: n mse - (n - 1) mse' = (mu - y)^2, the cell's truth back from two public
numbers. Now an upload is scored on its own cells of the sample, and the others' sample
and numbers do not move; a footprint frozen from submissions still takes every one's
cells.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scoring_fixtures import module_warehouse, upload_file

from proforma.app import scoring
from proforma.app.scoring.footprints.create import create_footprint


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "shape")
    yield w
    w.close()


def _file(wh, path: Path, seed: int, *, drop: int | None = None, component: bool = False) -> Path:
    return upload_file(wh, path, seed, component=component, drop=drop)


def _metrics(wh, run: int, sid: int) -> list[tuple]:
    return wh.fetchall(
        "SELECT level, horizon, item_id, statement, n, mse, mae FROM eval.metrics "
        "WHERE score_run_id = ? AND submission_id = ? ORDER BY ALL",
        [run, sid],
    )


@pytest.mark.parametrize("component", [False, True], ids=["stored file", "table"])
def test_an_upload_with_one_gap_moves_no_other_number(wh, tmp_path, component):
    tag = "table" if component else "stored"
    house = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "h.parquet", 1), f"house {tag}", source="model"
    )
    first = scoring.score(wh, "full", [house], coherence=False)
    before = _metrics(wh, first, house)

    gap = scoring.ingest_parquet(
        wh, _file(wh, tmp_path / "g.parquet", 2, drop=17, component=component), f"gap {tag}"
    )
    second = scoring.score(wh, "full", [house, gap], coherence=False)
    # the in-house model's numbers on the new run are the old ones, on the same cells
    assert _metrics(wh, second, house) == before
    assert (
        wh.scalar(
            "SELECT count(DISTINCT sample_fingerprint) FROM eval.score_runs WHERE score_run_id IN (?, ?)",
            [first, second],
        )
        == 1
    )
    # the upload is scored on its own cells: one fewer in its groups of the dropped cell
    mine = {r[:4]: r[4] for r in _metrics(wh, second, gap)}
    theirs = {r[:4]: r[4] for r in before}
    assert mine.keys() == theirs.keys()
    short = {k for k in mine if mine[k] != theirs[k]}
    assert {k[0] for k in short} == {"global", "horizon", "item", "statement", "item_horizon"}
    assert all(theirs[k] - mine[k] == 1 for k in short)
    coverage = wh.scalar(
        "SELECT coverage FROM eval.coverage WHERE score_run_id = ? AND submission_id = ?",
        [second, gap],
    )
    assert 0.99 < coverage < 1


def test_a_footprint_frozen_from_submissions_takes_an_uploads_gaps(wh, tmp_path):
    gap = scoring.ingest_parquet(wh, _file(wh, tmp_path / "f.parquet", 3, drop=5), "gap frozen")
    total = wh.scalar("SELECT count(*) FROM panel.truth WHERE split = 'test' AND isfinite(actual)")
    fid = create_footprint(wh, "from-gap", submissions=[gap])
    assert (
        wh.scalar("SELECT n_cells FROM eval.footprints WHERE footprint_id = ?", [fid]) == total - 1
    )
