"""The service's JSON tables as Arrow tables (pandas with `.to_pandas()` where it is
installed): a board's records, the console's columns and rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa


def from_records(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Records (one dict per row) in the server's column order; an empty answer keeps
    its columns."""
    if not rows:
        return pa.table({c: pa.array([], pa.null()) for c in columns})
    names = list(columns) or list(rows[0])
    return pa.table({c: pa.array([r.get(c) for r in rows]) for c in names})


def from_lists(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> pa.Table:
    """Rows given as lists, column by column (the SQL console's answer)."""
    return pa.table(
        {c: pa.array([r[i] for r in rows]) for i, c in enumerate(columns)}
        if rows
        else {c: pa.array([], pa.null()) for c in columns}
    )
