"""Contexts (grid, gaps, which items) and the long-form quantile rows, by hand."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from proforma.models.chronos import CELL_SCHEMA, HORIZONS, QUANTILE_LEVELS, QUANTILE_SCHEMA
from proforma.models.chronos.context import contexts_from_batch, origin_context
from proforma.models.chronos.forecast import level_indices, long_form, quantile_cells

RAW_SCHEMA = pa.schema(
    [
        ("firm_id", pa.int32()),
        ("origin_q", pa.int32()),
        ("split", pa.string()),
        ("ff48", pa.int16()),
        ("z", pa.float64()),
        ("rel_q", pa.list_(pa.int8())),
        ("item_id", pa.list_(pa.int16())),
        ("v", pa.list_(pa.float64())),
    ]
)


def _window() -> tuple[list[int], list[int], list[float]]:
    """Item 5 every quarter but rel_q -3; item 2 only at -4; item 9 only at the origin."""
    rel, item, v = [], [], []
    for r in range(-11, 1):
        if r != -3:
            rel.append(r)
            item.append(5)
            v.append(1000.0 + r)
        if r == -4:
            rel.append(r)
            item.append(2)
            v.append(-7.5)
    rel.append(0)
    item.append(9)
    v.append(3e9)
    return rel, item, v


def test_context_is_a_contiguous_grid_with_gaps_and_origin_items_first() -> None:
    ctx = origin_context(4, 8040, *_window())
    assert list(ctx.item_ids) == [5, 9, 2] and ctx.n_targets == 2
    assert ctx.values.shape == (3, 12) and ctx.first_rel_q == -11
    col = {r: r + 11 for r in range(-11, 1)}
    assert np.isnan(ctx.values[0, col[-3]])
    assert ctx.values[0, col[-11]] == 989.0 and ctx.values[0, col[0]] == 1000.0
    assert ctx.values[1, col[0]] == 3e9 and np.isnan(ctx.values[1, :-1]).all()
    assert ctx.values[2, col[-4]] == -7.5 and np.isfinite(ctx.values[2]).sum() == 1


def test_short_history_starts_at_the_first_reported_quarter() -> None:
    ctx = origin_context(1, 8040, [-5, -5, 0, -2], [3, 4, 3, 4], [1.0, 2.0, 3.0, np.nan])
    assert ctx.values.shape == (2, 6) and list(ctx.item_ids) == [3, 4] and ctx.n_targets == 1
    # item 4's NaN at the origin is no report: it is past-only, with its one value at -5
    assert np.isfinite(ctx.values[1]).sum() == 1


def test_contexts_of_a_sliced_batch_match_its_rows() -> None:
    rel, item, v = _window()
    rows = {
        "firm_id": [1, 2, 3],
        "origin_q": [8040, 8041, 8042],
        "split": ["test"] * 3,
        "ff48": [1, 1, 1],
        "z": [1.0, 1.0, 1.0],
        "rel_q": [[0], rel, [-1, 0]],
        "item_id": [[1], item, [7, 7]],
        "v": [[5.0], v, [1.0, 2.0]],
    }
    batch = pa.RecordBatch.from_pydict(rows, schema=RAW_SCHEMA)
    tail = contexts_from_batch(batch.slice(1))
    assert [c.firm_id for c in tail] == [2, 3]
    assert np.array_equal(
        tail[0].values, origin_context(2, 8041, rel, item, v).values, equal_nan=True
    )
    assert tail[1].values.tolist() == [[1.0, 2.0]] and tail[1].n_targets == 1


def test_quantile_rows_keep_targets_sort_crossings_and_drop_non_finite_cells() -> None:
    ctx = origin_context(4, 8040, *_window())  # targets 5, 9; item 2 is past-only
    model_levels = [0.01, 0.025] + list(QUANTILE_LEVELS[1:-1]) + [0.975, 0.99]
    rng = np.random.default_rng(0)
    pred = np.sort(rng.normal(size=(3, len(model_levels), 32)), axis=1)
    pred[0, :, 2] = pred[0, ::-1, 2]  # item 5, horizon 3: fully reversed
    pred[1, 5, 7] = np.nan  # item 9, horizon 8: not finite
    cells, stats = quantile_cells([ctx], [pred], level_indices(model_levels))
    assert cells.schema == CELL_SCHEMA and cells.num_rows == stats.cells
    table = long_form(cells)
    assert table.schema == QUANTILE_SCHEMA
    assert stats.cells == 2 * HORIZONS - 1 and stats.non_finite_cells == 1
    assert stats.crossed_cells == 1
    assert table.num_rows == stats.cells * len(QUANTILE_LEVELS)
    rows = table.to_pydict()
    assert set(rows["item_id"]) == {5, 9} and set(rows["horizon"]) == set(range(1, HORIZONS + 1))
    mu = np.asarray(rows["mu"]).reshape(-1, len(QUANTILE_LEVELS))
    levels = np.asarray(rows["quantile_level"]).reshape(-1, len(QUANTILE_LEVELS))
    assert (levels == np.asarray(QUANTILE_LEVELS)).all()
    assert (np.diff(mu, axis=1) >= 0).all()
    keep = [model_levels.index(q) for q in QUANTILE_LEVELS]
    first = mu[0]  # item 5, horizon 1, in level order
    assert first == pytest.approx(pred[0, keep, 0], rel=1e-6)  # float32 as the model computes
    third = mu[2]  # item 5, horizon 3: the reversed quantiles, sorted back
    assert third == pytest.approx(np.sort(pred[0, keep, 2]), rel=1e-6)
    cells = set(zip(rows["item_id"], rows["horizon"], strict=True))
    assert (9, 8) not in cells and (9, 7) in cells


def test_a_model_without_the_benchmark_levels_is_refused() -> None:
    with pytest.raises(ValueError, match="lack 0.01"):
        level_indices([0.1 * k for k in range(1, 10)])


def test_long_form_of_no_cells_is_empty() -> None:
    empty, _ = quantile_cells([], [], level_indices(QUANTILE_LEVELS))
    assert long_form(empty).num_rows == 0 and long_form(empty).schema == QUANTILE_SCHEMA
