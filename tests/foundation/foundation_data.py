"""Tiny Compustat-shaped inputs for the foundation tests (Arrow only, no pandas)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.store.reference import raw_item_columns_from_file

ITEMS = raw_item_columns_from_file()
# (gvkey, permno, sich): a linked firm, an unlinked financial firm, a linked firm
# without SIC.
FIRMS = (("001004", 54594, 5080), ("001045", None, 6020), ("012345", 10001, None))
QUARTERS = 8  # 2000Q1 .. 2001Q4


def panel_columns() -> dict[str, pa.Array]:
    """A valid raw panel as the published benchmark ships it: 3 firms x 8 quarters."""
    gv, dd, fy, fq, perm, sich = [], [], [], [], [], []
    for g, p, s in FIRMS:
        for i in range(QUARTERS):
            y, q = 2000 + i // 4, i % 4 + 1
            gv.append(g)
            dd.append(dt.date(y, q * 3, 28))
            fy.append(float(y))
            fq.append(float(q))
            perm.append(None if p is None else float(p))
            sich.append(None if s is None else float(s))
    n = len(gv)
    cols: dict[str, pa.Array] = {
        "gvkey": pa.array(gv, pa.string()),
        "datadate": pa.array(dd, pa.date32()),
        "fyearq": pa.array(fy, pa.float64()),
        "fqtr": pa.array(fq, pa.float64()),
        "tic": pa.array(["TIC"] * n),
        "sich": pa.array(sich, pa.float64()),
        "naicsh": pa.array([None] * n, pa.float64()),
        "permno": pa.array(perm, pa.float64()),
    }
    for j, item in enumerate(ITEMS):
        cols[item] = pa.array([float(j * 100 + k) for k in range(n)], pa.float64())
    return cols


def write_panel(path: Path, **changes: pa.Array | None) -> Path:
    """Write the panel with some columns replaced (an Array) or removed (None)."""
    cols = panel_columns()
    for name, value in changes.items():
        if value is None:
            cols.pop(name, None)
        else:
            cols[name] = value
    pq.write_table(pa.table(cols), path)
    return path


def n_rows() -> int:
    return len(FIRMS) * QUARTERS
