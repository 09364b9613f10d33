"""Scoring a stored upload by position: its cells meet the truth, the footprint and the
common sample through the cell layout (proforma.app.scoring.cell_layout), with no
per-cell rows and no joins.

An upload kept in the upload store (a point file or a single-family density file) is
laid out on the layout as dense arrays (mu and sigma at every position, NaN where it has
none: `dense_upload`, kept in memory for the run's next steps). A run hands DuckDB one Arrow
relation whose columns are the layout's arrays and the upload's, aligned by position, so
its rows already carry each cell's truth, change, slot and origin: 057 computes the
per-cell terms over it (the same SQL as for forecasts in tables), 067 and 069 the run
aggregates, and a footprint or a common sample other than the whole split is a boolean
column over the same positions.
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.scoring.cell_layout import CellLayout, layout_build_id, layout_for
from proforma.app.store.columns import to_arrow, to_numpy
from proforma.app.store.settings import get_settings
from proforma.app.store.warehouse import Warehouse

_names = itertools.count()
_lock = threading.Lock()
#: Grids of the score run in progress on a connection (pinned).
_pins: dict[int, dict[str, CellLayout]] = {}
#: Frames registered on a connection whose unregister waits for a rollback (release).
_pending: dict[int, set[str]] = {}


@dataclass(frozen=True)
class Dense:
    """An upload's forecasts at every position of one layout (NaN where it has none)."""

    mu: np.ndarray
    sigma: np.ndarray | None


_dense: dict[tuple[Any, ...], Dense] = {}


def cell_layout(wh: Warehouse, split: str) -> CellLayout:
    """The split's layout, its dense arrays in the cache folder (PROFORMA_CACHE_DIR); inside
    `pinned`, the one the first call of the block checked."""
    with _lock:
        pins = _pins.get(id(wh.con))
        hit = pins.get(split) if pins is not None else None
    if hit is not None:
        return hit
    # (the cache folder keeps the name it was made with: earlier releases' files stay usable)
    found = layout_for(wh, split, Path(get_settings().cache_dir) / "grids")
    if pins is not None:
        with _lock:
            pins[split] = found
    return found


def has_cell_layout(wh: Warehouse, split: str) -> bool:
    """Whether the split has a layout in the warehouse for the current build (one made for
    scoring; a split no upload was scored on has none, and making one is not free)."""
    return bool(
        wh.scalar(
            "SELECT count(*) FROM eval.grids WHERE build_id = ? AND split = ?",
            [layout_build_id(wh), split],
        )
    )


@contextlib.contextmanager
def pinned(wh: Warehouse) -> Iterator[None]:
    """One score run: the layout is checked against the truth once (a count of panel.truth,
    a quarter of a second on the demo panel), not at each of its steps."""
    with _lock:
        outer = id(wh.con) in _pins
        _pins.setdefault(id(wh.con), {})
    try:
        yield
    finally:
        if not outer:
            with _lock:
                _pins.pop(id(wh.con), None)


def dense_upload(
    wh: Warehouse, g: CellLayout, rec: dict[str, Any], *, float32_sigma: bool = False
) -> Dense:
    """The stored upload `rec` (from stored_file) laid out on layout `g`: its (cell, mu,
    sigma) file read, each cell's position computed and its values placed there (the
    last two layouts stay in memory for the run's next steps).

    float32_sigma (the published rules' getvariable('float32_residuals'), under which
    057 reads sigma as CAST(sigma AS FLOAT)): sigma laid out as 32-bit floats, the same
    values for 057 in half the memory. The checks keep every sigma of a finite
    prediction in the 32-bit normal range, so none turns 0 or infinite; a file with
    one that is not (it passed older checks) is laid out in 64 bits, and 057 meets it
    as before. mu stays 64-bit (its residual is rounded, not mu)."""
    key = (rec["path"], g.build_id, g.split, g.fingerprint, float32_sigma)
    with _lock:
        hit = _dense.get(key)
    if hit is not None:
        return hit
    # row group by row group (the store writes groups of about 123,000 rows): the
    # temporaries of a group's positions stay small (read whole, a 10M-row file's keys,
    # positions and masks took about 700 MB at once), and so do the reader's buffers
    # (iter_batches read ahead: 170 against 50 MB for a 15.7M-row density file). Arrow's
    # own pool decoded the same groups with three times the CPU, so each group is read on
    # one thread, and the groups are shared out to `layout_workers` threads (the decoding
    # and numpy's arithmetic release the GIL); a cell lies at one position, so the
    # threads write disjoint places.
    source = pq.ParquetFile(rec["path"])
    names = [n for n in ("mu", "sigma") if n in source.schema_arrow.names]
    shares = _shares(source.num_row_groups, layout_workers())
    del source
    values = _layout(g, rec["path"], names, shares, float32_sigma)
    if values is None:
        # a sigma the 32-bit float does not hold as it is (only an upload that passed
        # older checks has one): the 64-bit layout, so that 057 meets it as before
        values = _layout(g, rec["path"], names, shares, False)
    assert values is not None
    dense = Dense(values["mu"], values.get("sigma"))
    pa.default_memory_pool().release_unused()  # the batches' buffers, kept by the pool
    with _lock:
        while len(_dense) >= 2:
            _dense.pop(next(iter(_dense)))
        _dense[key] = dense
    return dense


#: The 32-bit float's normal range: a sigma in it, or 0, NaN or infinite, is the same
#: value to 057 once narrowed (CAST(sigma AS FLOAT)); the checks keep every sigma of a
#: finite prediction in it.
_FLOAT32_NORMAL = (float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max))


def _layout(
    g: CellLayout, path: str, names: list[str], shares: list[range], narrow: bool
) -> dict[str, np.ndarray] | None:
    """The file's columns `names` at every position of `g` (NaN where it has no cell),
    its row groups shared out as `shares`, one thread each; sigma as 32-bit floats when
    `narrow`, or None when a sigma would not be the same value narrowed."""
    values = {
        name: np.empty(g.size, dtype=np.float32 if name == "sigma" and narrow else None)
        for name in names
    }
    lo, hi = _FLOAT32_NORMAL
    unnarrowed: list[bool] = []

    def blank(part: range) -> None:
        for name in names:
            values[name][part.start : part.stop] = np.nan

    def place(groups: range) -> None:
        reader = pq.ParquetFile(path)
        for group in groups:
            batch = reader.read_row_group(group, columns=["cell", *names], use_threads=False)
            pos = g.positions(to_numpy(batch.column("cell")))
            inside = pos >= 0
            at = pos[inside]
            for name in names:
                column = to_numpy(batch.column(name))[inside]
                if narrow and name == "sigma":
                    size = np.abs(column)
                    if np.any(np.isfinite(size) & (size != 0) & ((size < lo) | (size > hi))):
                        unnarrowed.append(True)
                        return
                values[name][at] = column

    if len(shares) == 1:
        blank(range(g.size))
        place(shares[0])
    else:
        with ThreadPoolExecutor(len(shares)) as pool:
            # every position blanked (the pages first touched on all threads) before any
            # is placed
            list(pool.map(blank, _shares(g.size, len(shares))))
            list(pool.map(place, shares))
    return None if unnarrowed else values


def layout_workers() -> int:
    """Threads that lay an upload out on the layout: DuckDB's thread setting (the
    machine's cores when unset), at most 4."""
    configured = get_settings().threads
    return max(1, min(4, configured if configured else (os.cpu_count() or 1)))


def _shares(n: int, workers: int) -> list[range]:
    """0..n-1 (row groups, positions) in `workers` contiguous ranges of nearly equal
    size."""
    workers = max(1, min(workers, n))
    bounds = [n * i // workers for i in range(workers + 1)]
    return [range(lo, hi) for lo, hi in itertools.pairwise(bounds)]


def frame(
    g: CellLayout,
    dense: Dense,
    keep: np.ndarray | None = None,
    *,
    with_pos: bool = False,
    with_row: bool = False,
    span: tuple[int, int] | None = None,
) -> pa.Table:
    """The layout's and the upload's columns side by side, one row per position (no copy
    of the arrays), over the positions of `span` (lo, hi) or all: sh, oq, actual, y (the
    truth's change), mu, sigma, keep when a mask is given, pos (the position) when
    with_pos and row (the layout row: firm and origin quarter) when with_row."""
    lo, hi = span if span is not None else (0, g.size)
    part = slice(lo, hi)
    columns: dict[str, Any] = {
        "sh": to_arrow(g.sh[part]),
        "oq": to_arrow(g.oq[part]),
        "actual": to_arrow(g.actual[part]),
        "y": to_arrow(g.change[part]),
        "mu": to_arrow(dense.mu[part]),
        "sigma": (
            to_arrow(dense.sigma[part])
            if dense.sigma is not None
            else pa.nulls(hi - lo, pa.float64())
        ),
    }
    if keep is not None:
        columns["keep"] = to_arrow(keep[part])
    if with_pos:
        columns["pos"] = to_arrow(np.arange(lo, hi, dtype=np.int64))
    if with_row:
        columns["row"] = to_arrow(g.rows(lo, hi))
    return pa.table(columns)


#: Positions a step reads at once (about 80 MB of the layout's arrays): a run's steps go
#: over the layout span by span, each span whole (item, horizon, origin) groups, and the
#: layout's pages a span read are released after it, so the memory a run holds does not
#: grow with the panel (the upload's own layout aside). Each span is a statement of its
#: own, and a smaller span costs time for little memory (docs/scoring.md, "Figures
#: behind the code's choices").
SPAN = 1 << 22


def spans(g: CellLayout, size: int | None = None) -> Iterator[tuple[int, int]]:
    """(lo, hi) ranges covering the layout in order, each of whole groups (a group is the
    k positions of one slot in an origin's block of k rows) and about `size` (SPAN)
    positions (one group at least)."""
    size = size or SPAN
    lo = hi = 0
    for first, k in zip(g.block_first.tolist(), g.block_rows.tolist(), strict=True):
        start, end = first * g.n_slots, (first + k) * g.n_slots
        step = max(1, size // k) * k  # whole groups
        for cut in range(start, end, step):
            nxt = min(cut + step, end)
            if hi - lo and nxt - lo > size:
                yield lo, hi
                lo = hi
            hi = nxt
    if hi > lo:
        yield lo, hi


def release_pages(g: CellLayout, span: tuple[int, int]) -> None:
    """Drop the layout's memory-mapped pages of `span` from this process (they are the
    cache folder's file pages: read again from the page cache should a step need them)."""
    lo, hi = span
    for values in (g.sh, g.oq, g.actual, g.change):
        handle = getattr(values, "_mmap", None)
        if handle is None or not hasattr(mmap, "MADV_DONTNEED"):
            continue
        base = int(getattr(values, "offset", 0))
        start = (base + lo * values.itemsize) // mmap.PAGESIZE * mmap.PAGESIZE
        stop = min(base + hi * values.itemsize, len(handle))
        if stop > start:
            handle.madvise(mmap.MADV_DONTNEED, start, stop - start)


def span_terms(
    wh: Warehouse,
    g: CellLayout,
    dense: Dense,
    params: dict[str, Any],
    keep: np.ndarray | None = None,
    *,
    with_pos: bool = False,
    with_row: bool = False,
) -> Iterator[str]:
    """`terms` over the layout span by span: yields 057's view once per span (read it
    before asking for the next); the span's layout pages are released after it. One view
    serves every span: each span's frame replaces the last under the name the view
    reads (057 made once, not once a span: 15 to 30 ms each, a tenth of a demo's run)."""
    cut = list(spans(g))
    if not cut:
        return
    first = frame(g, dense, keep, with_pos=with_pos, with_row=with_row, span=cut[0])
    with terms(wh, first, params) as (view, name):
        del first
        for i, span in enumerate(cut):
            try:
                if i:
                    wh.con.register(
                        name, frame(g, dense, keep, with_pos=with_pos, with_row=with_row, span=span)
                    )
                yield view
            finally:
                release_pages(g, span)


@contextlib.contextmanager
def terms(wh: Warehouse, table: pa.Table, params: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """057's view single_cell_terms over a `frame`: the positions with scoreable truth and
    a forecast (an upload's gap can lie in the common sample: uploads do not shape it), and
    in the mask when the frame has one, with the submission's parameters; yields
    the view's name and the name the frame is registered under (a frame of the same
    columns registered under it in its place is what the view reads next)."""
    release(wh)
    name = f"positional_frame_{next(_names)}"
    cells = f"positional_cells_{next(_names)}"
    keep = " AND keep" if "keep" in table.column_names else ""
    wh.con.register(name, table)
    try:
        wh.execute(
            f"CREATE OR REPLACE TEMP VIEW {cells} AS SELECT * FROM {name} "
            f"WHERE isfinite(actual) AND isfinite(mu){keep}"
        )
        wh.run_step("eval/057_single_cell_terms", params, identifiers={"cells": cells})
        yield "single_cell_terms", name
    finally:
        # In a transaction a failed statement aborted, the views go with its rollback; a
        # cleanup error must not hide the statement's own.
        try:
            wh.execute("DROP VIEW IF EXISTS single_cell_terms")
            wh.execute(f"DROP VIEW IF EXISTS {cells}")
            wh.con.unregister(name)
        except duckdb.TransactionException:
            with _lock:
                _pending.setdefault(id(wh.con), set()).add(name)


def release(wh: Warehouse) -> None:
    """Let go of the Arrow data of frames whose view an aborted transaction kept: their
    views went with its rollback, the connection still holds the data until unregistered
    (done here, outside that transaction)."""
    with _lock:
        names = _pending.pop(id(wh.con), set())
    for name in names:
        try:
            wh.con.unregister(name)
        except duckdb.TransactionException:  # still inside the aborted transaction
            with _lock:
                _pending.setdefault(id(wh.con), set()).add(name)
