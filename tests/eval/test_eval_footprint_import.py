"""`footprint import`: published sample masks (keys parquet, grid-aligned bitmap with and
without its row index) become frozen footprints; bad masks are refused, nothing written.
Masks are written here from the documented format (cell = (target * 20 + h - 1) * n_rows
+ row, targets in name order, rows by (gvkey, origin))."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scoring_fixtures import module_warehouse

from proforma.app.scoring.footprints.mask_import import import_footprint
from proforma.contracts.errors import UserError


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "fpimport")
    w.execute(
        "CREATE OR REPLACE TABLE panel.rule_set AS SELECT 'published' AS rules, 6 * 1.4142 AS yoy_clip"
    )
    yield w
    w.close()


def _grid(wh):
    rows = wh.fetchall(
        "SELECT f.gvkey, o.origin_q FROM panel.origins o JOIN panel.firms f USING (firm_id) "
        "WHERE o.split = 'test' ORDER BY f.gvkey, o.origin_q"
    )
    targets = sorted(r[0] for r in wh.fetchall("SELECT item FROM ref.items WHERE item_id > 0"))
    return rows, targets


def _pick(wh, n_rows, targets):
    """Every 7th cell of the grid, as (target index, horizon, row)."""
    return [
        (t, h, r)
        for t in range(len(targets))
        for h in range(1, 21)
        for r in range(n_rows)
        if ((t * 20 + h - 1) * n_rows + r) % 7 == 0
    ]


def _bits(cells, n_rows, n_targets):
    bits = np.zeros(n_targets * 20 * n_rows, bool)
    for t, h, r in cells:
        bits[(t * 20 + h - 1) * n_rows + r] = True
    return np.packbits(bits)


def _stored(wh, fid):
    return set(
        wh.fetchall(
            "SELECT gvkey, origin_q, item_id, horizon FROM eval.footprint_cells "
            "WHERE footprint_id = ?",
            [fid],
        )
    )


def _expected(wh, rows, targets, cells):
    ids = dict(wh.fetchall("SELECT item, item_id FROM ref.items"))
    return {(rows[r][0], rows[r][1], ids[targets[t]], h) for t, h, r in cells}


def _counts(wh):
    return (
        wh.scalar("SELECT count(*) FROM eval.footprints"),
        wh.scalar("SELECT count(*) FROM eval.footprint_cells"),
    )


def _qend(q: int) -> dt.datetime:
    nxt = dt.date(q // 4 + (q % 4 == 3), (q % 4 + 1) % 4 * 3 + 1, 1)
    return dt.datetime.combine(nxt, dt.time()) - dt.timedelta(microseconds=1)


def test_bitmap_positional_realigned_and_keys_agree(wh, tmp_path):
    rows, targets = _grid(wh)
    cells = _pick(wh, len(rows), targets)
    want = _expected(wh, rows, targets, cells)
    np.save(tmp_path / "bits.npy", _bits(cells, len(rows), len(targets)))
    info = import_footprint(wh, "masked", tmp_path / "bits.npy")
    assert info["mask_cells"] == len(cells) and info["keys_off_grid"] == 0
    assert _stored(wh, info["footprint_id"]) == want

    # The same mask over a row index in another order, with one row this build lacks.
    order = list(range(len(rows)))[::-1]
    canon = [rows[i] for i in order] + [("999999", rows[0][1])]
    remap = {i: k for k, i in enumerate(order)}
    moved = [(t, h, remap[r]) for t, h, r in cells] + [(0, 1, len(canon) - 1)]
    np.save(tmp_path / "bits2.npy", _bits(moved, len(canon), len(targets)))
    pq.write_table(
        pa.table({"firm": [g for g, _ in canon], "origin": [_qend(q) for _, q in canon]}),
        tmp_path / "rows.parquet",
    )
    info = import_footprint(
        wh, "masked", tmp_path / "bits2.npy", grid_rows=tmp_path / "rows.parquet"
    )
    assert info["version"] == 2 and info["rows_matched"] == len(rows)
    assert info["keys_off_grid"] == 1 and _stored(wh, info["footprint_id"]) == want

    # Keys form, with the package's aliases and timestamps at the quarter's last instant.
    keys = pa.table(
        {
            "firm_id": [rows[r][0] for _, _, r in cells],
            "target": pa.array([targets[t] for t, _, _ in cells]).dictionary_encode(),
            "quarter": pa.array([_qend(rows[r][1]) for _, _, r in cells], pa.timestamp("ns")),
            "forecast_horizon": pa.array([h for _, h, _ in cells], pa.int64()),
        }
    )
    pq.write_table(keys, tmp_path / "keys.parquet")
    info = import_footprint(wh, "masked_keys", tmp_path / "keys.parquet")
    assert _stored(wh, info["footprint_id"]) == want


def test_bad_masks_write_nothing(wh, tmp_path):
    before = _counts(wh)
    np.save(tmp_path / "short.npy", np.zeros(10, np.uint8))
    with pytest.raises(UserError, match="grid has .* rows"):
        import_footprint(wh, "bad", tmp_path / "short.npy")
    pq.write_table(
        pa.table({"firm": ["001001"], "target": ["revenue"], "origin": ["2012Q1"], "horizon": [1]}),
        tmp_path / "unknown.parquet",
    )
    with pytest.raises(UserError, match="unknown target"):
        import_footprint(wh, "bad", tmp_path / "unknown.parquet")
    pq.write_table(
        pa.table({"firm": ["001001"], "target": ["revtq"], "origin": ["2012Q1"], "horizon": [25]}),
        tmp_path / "far.parquet",
    )
    with pytest.raises(UserError, match="horizon outside"):
        import_footprint(wh, "bad", tmp_path / "far.parquet")
    pq.write_table(
        pa.table({"firm": ["777777"], "target": ["revtq"], "origin": ["2012Q1"], "horizon": [1]}),
        tmp_path / "other.parquet",
    )
    with pytest.raises(UserError, match="another panel"):
        import_footprint(wh, "bad", tmp_path / "other.parquet")
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(UserError, match="not a numpy"):
        import_footprint(wh, "bad", tmp_path / "junk.npy")
    with pytest.raises(UserError, match="goes with a bitmap"):
        import_footprint(wh, "bad", tmp_path / "far.parquet", grid_rows=tmp_path / "far.parquet")
    assert _counts(wh) == before


def test_positional_bitmap_needs_the_published_grid(wh, tmp_path):
    rows, targets = _grid(wh)
    np.save(tmp_path / "bits.npy", _bits([(0, 1, 0)], len(rows), len(targets)))
    before = _counts(wh)
    wh.execute("UPDATE panel.rule_set SET rules = 'paper'")
    try:
        with pytest.raises(UserError, match="--grid-rows"):
            import_footprint(wh, "bad", tmp_path / "bits.npy")
    finally:
        wh.execute("UPDATE panel.rule_set SET rules = 'published'")
    assert _counts(wh) == before
