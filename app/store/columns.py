"""Numeric columns between Arrow and numpy without pandas.

Arrow's own conversions (`pa.array` of a numpy array, `Array.to_numpy`) import pandas
on their first call in a process, for pandas-specific types that a numeric column never
has: half a second of every `proforma score`, whose columns are all plain numbers. These
two functions wrap and read the same memory through the buffer protocol instead, and
fall back to Arrow's conversion for anything but a fixed-width number or a boolean
without nulls (strings, an integer column with nulls), which then costs what it did.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_NUMERIC = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}
_ARROW = {np.dtype(v): k for k, v in _NUMERIC.items()}


def to_numpy(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The column's values as a numpy array (a view of Arrow's memory where it can be,
    read-only then): nulls of a float column are NaN."""
    if isinstance(column, pa.ChunkedArray):
        if column.num_chunks == 1:
            return to_numpy(column.chunk(0))
        if column.num_chunks > 1:
            return np.concatenate([to_numpy(chunk) for chunk in column.chunks])
        empty = _NUMERIC.get(column.type)
        return np.empty(0, dtype=empty) if empty is not None else column.to_numpy()
    if column.type == pa.bool_() and not column.null_count:
        bits = np.unpackbits(np.frombuffer(column.buffers()[1], dtype=np.uint8), bitorder="little")
        return bits[column.offset : column.offset + len(column)].astype(bool)
    dtype = _NUMERIC.get(column.type)
    floating = dtype is not None and np.issubdtype(dtype, np.floating)
    if dtype is None or (column.null_count and not floating):
        return column.to_numpy(zero_copy_only=False)
    validity, data = column.buffers()
    n, start = len(column), column.offset
    if data is None:  # an empty array may have no data buffer
        return np.empty(0, dtype=dtype)
    values = np.frombuffer(data, dtype=dtype, count=n, offset=start * np.dtype(dtype).itemsize)
    if not column.null_count:
        return values
    bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
    return np.where(bits[start : start + n].astype(bool), values, np.nan).astype(dtype)


def to_arrow(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """A 1-d numeric or boolean numpy array as an Arrow array, sharing a number's memory:
    null where `mask` is true, else no nulls (NaN stays a value, as in pa.array)."""
    if mask is not None and not mask.any():
        mask = None
    if values.ndim != 1:
        return pa.array(values, mask=mask)
    if values.dtype == np.bool_ and mask is None:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    kind = _ARROW.get(values.dtype)
    if kind is None:
        return pa.array(values, mask=mask)
    validity = None if mask is None else pa.py_buffer(np.packbits(~mask, bitorder="little"))
    data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(kind, len(values), [validity, data])
