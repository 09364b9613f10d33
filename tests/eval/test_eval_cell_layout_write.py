"""The cell grid's dense arrays written piece by piece (bounded memory at any panel size)
are the files `np.save` writes of the whole arrays, byte for byte, whatever the piece
size: pieces that end inside an origin quarter's block, inside a batch of cells, or
past the grid."""

from __future__ import annotations

import numpy as np
import pytest
from scoring_fixtures import module_warehouse

from proforma.app.scoring import cell_layout as layout_module
from proforma.app.scoring.cell_layout import COLUMNS, layout_for


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    return module_warehouse(tmp_path_factory, "grid_write")


def whole_arrays(wh, grid) -> dict[str, np.ndarray]:
    """The dense arrays made whole in memory, straight from the layout's definition
    (origin-major blocks, then slot, then row) and eval.grid_cells."""
    size = len(grid.row_firm) * grid.n_slots
    actual = np.full(size, np.nan)
    change = np.full(size, np.nan)
    cells = wh.arrow(
        "SELECT pos, actual, change FROM eval.grid_cells WHERE build_id = ? AND split = ?",
        [grid.build_id, grid.split],
    )
    pos = cells["pos"].to_numpy()
    actual[pos] = cells["actual"].to_numpy(zero_copy_only=False)
    change[pos] = cells["change"].to_numpy(zero_copy_only=False)
    slots = np.arange(grid.n_slots, dtype=np.int16)
    sh = np.concatenate([np.repeat(slots, k) for k in grid.block_rows.tolist()])
    oq = np.repeat((grid.row_origin - grid.q0).astype(np.int16), grid.n_slots)
    return {"sh": sh, "oq": oq, "actual": actual, "change": change}


@pytest.mark.parametrize(
    ("chunk", "batch"), [(None, None), (7, None), (1000, 5), (1000, 4096), (10**9, 3)]
)
def test_pieces_write_the_whole_arrays_files(wh, tmp_path, monkeypatch, chunk, batch) -> None:
    if batch:  # batches of cells that end inside a piece, or span several
        monkeypatch.setattr(layout_module, "READ_BATCH", batch)
    grid = layout_for(wh, "test", tmp_path / "made")
    expected = whole_arrays(wh, grid)
    assert grid.n_scoreable and np.count_nonzero(~np.isnan(expected["actual"])) == grid.n_scoreable
    folder = tmp_path / "written"
    layout_module._write_dense(
        wh,
        grid.build_id,
        grid.split,
        len(grid.row_firm),
        grid.n_slots,
        grid.row_origin,
        grid.q0,
        grid.block_rows,
        folder,
        chunk=chunk,
    )
    for name in COLUMNS:
        reference = tmp_path / f"{name}-whole.npy"
        np.save(reference, expected[name])
        assert (folder / f"{name}.npy").read_bytes() == reference.read_bytes(), name
        # and what the grid maps is the same
        np.testing.assert_array_equal(np.load(folder / f"{name}.npy"), getattr(grid, name))
    assert not list(tmp_path.glob(".*tmp"))
    # the connection takes other work: the streamed result was read out
    assert wh.scalar("SELECT 1") == 1
