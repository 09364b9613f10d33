"""Numeric columns between Arrow and numpy without pandas (app/store/columns.py): the
same values as Arrow's own conversions, for slices, chunks, nulls, booleans and empty
columns, and a fall-back for what is not a plain number."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from proforma.app.store.columns import to_arrow, to_numpy


@pytest.mark.parametrize(
    "kind", [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint32(), pa.float32(), pa.float64()]
)
def test_numbers_read_as_arrow_reads_them(kind):
    values = pa.array([3, 1, 4, 1, 5, 9, 2, 6], kind)
    for column in (values, values.slice(3), values.slice(2, 4), pa.chunked_array([values] * 3)):
        got = to_numpy(column)
        want = column.to_numpy()
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert to_numpy(pa.chunked_array([], kind)).shape == (0,)
    assert to_numpy(values.slice(8)).shape == (0,)


def test_float_nulls_are_nan_and_other_nulls_fall_back():
    floats = pa.array([1.5, None, 2.5, None, 4.0])
    assert np.array_equal(to_numpy(floats), [1.5, np.nan, 2.5, np.nan, 4.0], equal_nan=True)
    assert np.array_equal(to_numpy(floats.slice(1, 3)), [np.nan, 2.5, np.nan], equal_nan=True)
    ints = pa.array([1, None, 3], pa.int64())
    assert np.array_equal(to_numpy(ints), ints.to_numpy(zero_copy_only=False), equal_nan=True)
    assert to_numpy(pa.array(["a", "b"])).tolist() == ["a", "b"]


def test_booleans_both_ways():
    mask = np.array([True, False, True, True, False, False, True, False, True, True])
    arrow = to_arrow(mask)
    assert arrow.type == pa.bool_() and arrow.to_pylist() == mask.tolist()
    assert to_numpy(arrow).tolist() == mask.tolist()
    assert to_numpy(arrow.slice(3, 5)).tolist() == mask[3:8].tolist()


def test_to_arrow_shares_memory_keeps_nan_and_masks_nulls():
    values = np.array([1.0, np.nan, 3.0])
    arrow = to_arrow(values)
    assert arrow.null_count == 0 and np.isnan(arrow.to_numpy()[1])
    values[0] = 7.0  # the same memory
    assert arrow[0].as_py() == 7.0
    masked = to_arrow(np.array([1.0, 2.0, 3.0]), mask=np.array([False, True, False]))
    assert masked.to_pylist() == [1.0, None, 3.0]
    strided = to_arrow(np.arange(10, dtype=np.int64)[::2])
    assert strided.to_pylist() == [0, 2, 4, 6, 8]
    assert to_arrow(np.array(["x"])).to_pylist() == ["x"]  # not a number: Arrow's own
