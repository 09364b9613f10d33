"""The panel signature a shipped checkpoint is matched on hashes the windows' values, not
their bytes: a reader that delivers the same windows in other types, batches or orders
keeps it (issue 48: a rebuild of the readers' list columns retired the shipped
checkpoint), and any change of a value moves it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from proforma.contracts.panel import TUPLE_WINDOW_SCHEMA
from proforma.models.forma.batching import WindowStore
from tests.forma.conftest import make_windows


@pytest.fixture(scope="module")
def windows() -> pa.Table:
    return pa.Table.from_batches(
        [make_windows(12, seed=1), make_windows(8, seed=2, split="val", origin_q0=7950)]
    )


def _signature(table: pa.Table | list[pa.RecordBatch]) -> str:
    batches = table.to_batches() if isinstance(table, pa.Table) else table
    return WindowStore.from_batches(batches).data_signature()


def _reordered_tuples(table: pa.Table, seed: int) -> pa.Table:
    """Each origin's parallel lists permuted the same way (a reader that does not sort)."""
    rng = np.random.default_rng(seed)
    cols = {c: table.column(c).to_pylist() for c in ("rel_q", "item_id", "x")}
    for i in range(table.num_rows):
        p = rng.permutation(len(cols["rel_q"][i]))
        for values in cols.values():
            values[i] = [values[i][k] for k in p]
    for c, values in cols.items():
        table = table.set_column(
            table.schema.get_field_index(c),
            table.schema.field(c),
            pa.array(values, table.schema.field(c).type),
        )
    return table


def test_a_reader_refactor_cannot_move_the_signature(windows):
    base = _signature(windows)
    assert len(base) == 16 and base == _signature(windows)
    # other batching, origins shuffled, one origin delivered twice (the first is kept)
    shuffled = windows.take(np.random.default_rng(0).permutation(windows.num_rows))
    assert _signature(shuffled.to_batches(max_chunksize=3)) == base
    assert _signature(pa.concat_tables([windows, windows.slice(0, 1)])) == base
    # wider types: int64 keys, large lists, float64 values that are float32 values
    wide = pa.schema(
        [
            ("firm_id", pa.int64()),
            ("origin_q", pa.int64()),
            ("split", pa.large_string()),
            ("ff48", pa.int32()),
            ("rel_q", pa.large_list(pa.int64())),
            ("item_id", pa.large_list(pa.int32())),
            ("x", pa.large_list(pa.float64())),
        ]
    )
    assert _signature(windows.cast(wide)) == base
    # tuples in another order inside each origin
    assert _signature(_reordered_tuples(windows, 3)) == base
    # -0.0 is 0.0
    x = windows.column("x").to_pylist()
    x[0] = [v if v != x[0][0] else 0.0 for v in x[0]]
    zero = windows.set_column(6, "x", pa.array(x, TUPLE_WINDOW_SCHEMA.field("x").type))
    x[0] = [-0.0 if v == 0.0 else v for v in x[0]]
    negative_zero = windows.set_column(6, "x", pa.array(x, TUPLE_WINDOW_SCHEMA.field("x").type))
    assert _signature(zero) == _signature(negative_zero)


def _changed(table: pa.Table, column: str, row: int, edit) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = edit(values[row])
    i = table.schema.get_field_index(column)
    return table.set_column(
        i, table.schema.field(column), pa.array(values, table.schema.field(column).type)
    )


def test_any_change_of_a_value_moves_the_signature(windows):
    base = _signature(windows)
    f32 = np.float32
    edits = {
        "one x by one float32 step": (
            "x",
            3,
            lambda v: [float(np.nextafter(f32(v[0]), f32(9)))] + v[1:],
        ),
        "one item": ("item_id", 2, lambda v: [v[0]] + [v[1] + 100] + v[2:]),
        "one quarter of a tuple": (
            "rel_q",
            5,
            lambda v: v[:-1] + [v[-1] - 1] if v[-1] > -11 else v,
        ),
        "the industry": ("ff48", 0, lambda v: (v % 48) + 1),
        "the split": ("split", 1, lambda v: "val" if v == "train" else "train"),
        "the firm": ("firm_id", 4, lambda v: v + 1000),
        "the origin quarter": ("origin_q", 4, lambda v: v + 400),
    }
    seen = {base}
    for what, (column, row, edit) in edits.items():
        sig = _signature(_changed(windows, column, row, edit))
        assert sig not in seen, what
        seen.add(sig)
    # a tuple dropped, an origin dropped
    dropped = _changed(
        _changed(_changed(windows, "x", 0, lambda v: v[:-1]), "item_id", 0, lambda v: v[:-1]),
        "rel_q",
        0,
        lambda v: v[:-1],
    )
    assert _signature(dropped) not in seen
    assert _signature(windows.slice(1)) not in seen


def test_canonical_tuples_make_the_same_training_store(windows):
    a = WindowStore.from_batches(windows.to_batches())
    b = WindowStore.from_batches(_reordered_tuples(windows, 7).to_batches())
    for name in ("offsets", "rel_q", "item_id", "x", "firm_id", "origin_q"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.canonical() is a  # canonical already: nothing copied
