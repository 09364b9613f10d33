"""The cell grid (issue 31): positions fixed by the split's origins, the truth at each,
cell keys mapped to positions and back, the grid made again when the truth changes, and
the cache folder bounded."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scoring_fixtures import make_panel, module_warehouse

from proforma.app.scoring import cell_layout as layout_module
from proforma.app.scoring.cell_layout import CellLayout, layout_for


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    return module_warehouse(tmp_path_factory, "grid")


def _truth(wh, split: str = "test"):
    return wh.arrow(
        "SELECT eval.cell_key(firm_id, origin_q, item_id, horizon) AS cell, actual, change "
        "FROM panel.truth WHERE split = ? AND isfinite(actual) AND isfinite(baseline)",
        [split],
    )


def test_every_scoreable_cell_has_its_truth_at_its_position(wh, tmp_path) -> None:
    grid = layout_for(wh, "test", tmp_path)
    truth = _truth(wh)
    pos = grid.positions(truth["cell"].to_numpy())
    assert (pos >= 0).all() and len(np.unique(pos)) == truth.num_rows
    assert grid.n_scoreable == truth.num_rows == int(np.count_nonzero(~np.isnan(grid.actual)))
    np.testing.assert_array_equal(grid.actual[pos], truth["actual"].to_numpy().astype(float))
    np.testing.assert_array_equal(grid.change[pos], truth["change"].to_numpy(zero_copy_only=False))
    # and back: each position's cell key, and its slot and origin
    np.testing.assert_array_equal(grid.cells(pos), truth["cell"].to_numpy())
    slot = grid.item_slot[(truth["cell"].to_numpy() >> 5) & 127]
    np.testing.assert_array_equal(grid.sh[pos], slot * 20 + (truth["cell"].to_numpy() & 31) - 1)
    origin = (truth["cell"].to_numpy() >> 12) & 16383
    np.testing.assert_array_equal(grid.oq[pos] + grid.q0, origin)


def test_cells_outside_the_grid_have_no_position(wh, tmp_path) -> None:
    grid = layout_for(wh, "test", tmp_path)
    cell = _truth(wh)["cell"].to_numpy()[:3]
    other_split = _truth(wh, "val")["cell"].to_numpy()[:3]
    horizon_21 = cell - (cell & 31) + 21
    unknown_firm = cell + (999 << 26)
    not_a_target = cell - (((cell >> 5) & 127) << 5) + (127 << 5)
    for bad in (other_split, horizon_21, unknown_firm, not_a_target, -cell):
        assert (grid.positions(bad) == -1).all(), bad


def test_the_grid_is_made_again_when_the_truth_changes(tmp_path_factory, tmp_path) -> None:
    wh = module_warehouse(tmp_path_factory, "grid_changes")
    before = layout_for(wh, "test", tmp_path)
    cell, actual = wh.fetchone(
        "SELECT eval.cell_key(firm_id, origin_q, item_id, horizon), actual FROM panel.truth "
        "WHERE split = 'test' AND isfinite(actual) AND isfinite(baseline) ORDER BY ALL LIMIT 1"
    )
    wh.execute(
        "DELETE FROM panel.truth WHERE eval.cell_key(firm_id, origin_q, item_id, horizon) = ?",
        [cell],
    )
    after = layout_for(wh, "test", tmp_path)
    assert after is not before and after.fingerprint != before.fingerprint
    assert after.n_scoreable == before.n_scoreable - 1
    assert np.isnan(after.actual[after.positions(np.array([cell]))[0]])
    assert before.actual[before.positions(np.array([cell]))[0]] == pytest.approx(actual)
    # the warehouse keeps one grid per split and build: the new one replaced the old
    assert wh.scalar("SELECT count(*) FROM eval.grids WHERE split = 'test'") == 1


def test_a_grid_counted_another_way_is_recounted_not_remade(tmp_path_factory, tmp_path) -> None:
    """The truth's rows are checked by a stored count (grid.truth_rows), not a scan; a grid
    whose recorded count differs (an older release counted the view panel.truth) is
    fingerprinted once, kept when its truth is the same, and its count recorded."""
    wh = module_warehouse(tmp_path_factory, "grid_recount")
    before = layout_for(wh, "test", tmp_path)
    rows = layout_module.truth_rows(wh)
    made = wh.fetchone("SELECT made_at, truth_rows FROM eval.grids WHERE split = 'test'")
    assert made is not None and made[1] == rows
    wh.execute("UPDATE eval.grids SET truth_rows = truth_rows + 5 WHERE split = 'test'")
    layout_module._cache.clear()
    after = layout_for(wh, "test", tmp_path)
    assert after.fingerprint == before.fingerprint
    assert wh.fetchone("SELECT made_at, truth_rows FROM eval.grids WHERE split = 'test'") == made


def test_the_cache_keeps_the_newest_grids_of_a_split(tmp_path_factory, tmp_path) -> None:
    for seed in range(layout_module.KEEP + 2):
        wh = module_warehouse(tmp_path_factory, f"grid_cache{seed}")
        make_panel(wh, seed=seed + 1)
        assert isinstance(layout_for(wh, "test", tmp_path), CellLayout)
    assert len(list(tmp_path.glob("v*-test-*"))) == layout_module.KEEP
    assert not list(tmp_path.glob(".*tmp"))


def test_each_group_is_one_contiguous_range(wh, tmp_path) -> None:
    """Origin-major, then slot, then firm: the (origin quarter, slot) keys never decrease
    along the positions, so a run's aggregate by group reads runs of equal keys."""
    grid = layout_for(wh, "test", tmp_path)
    key = np.asarray(grid.oq, dtype=np.int64) * grid.n_slots + np.asarray(grid.sh)
    assert (np.diff(key) >= 0).all()
    # and every group is as long as its origin's block: one position per firm there
    _, counts = np.unique(key, return_counts=True)
    assert sorted(set(counts.tolist())) == sorted(set(grid.block_rows.tolist()))


def test_a_grid_of_an_older_layout_is_made_again(tmp_path_factory, tmp_path) -> None:
    wh = module_warehouse(tmp_path_factory, "grid_layout")
    layout_for(wh, "test", tmp_path)
    # as a warehouse whose grid an earlier release (row-major positions) made
    wh.execute("UPDATE eval.grids SET fingerprint = split_part(fingerprint, ':g', 1)")
    layout_module._cache.clear()
    again = layout_for(wh, "test", tmp_path)
    assert again.fingerprint.endswith(f":g{layout_module.FORMAT}")
    truth = _truth(wh)
    pos = again.positions(truth["cell"].to_numpy())
    np.testing.assert_array_equal(again.actual[pos], truth["actual"].to_numpy().astype(float))


@pytest.mark.parametrize("size", [1, 100, 5000, 10**9])
def test_spans_cover_the_grid_in_whole_groups(wh, tmp_path, size) -> None:
    from proforma.app.scoring.positional import spans

    grid = layout_for(wh, "test", tmp_path)
    found = list(spans(grid, size))
    assert found[0][0] == 0 and found[-1][1] == grid.size
    assert all(a[1] == b[0] for a, b in itertools.pairwise(found))
    key = np.asarray(grid.oq, dtype=np.int64) * grid.n_slots + np.asarray(grid.sh)
    for lo, hi in found:
        assert hi > lo
        # no group straddles two spans
        assert lo == 0 or key[lo] != key[lo - 1]
        assert hi - lo <= max(size, int(grid.block_rows.max())) or size >= grid.size
    if size >= grid.size:
        assert found == [(0, grid.size)]
