"""Scoring a stored upload by position: its cells meet the truth, the footprint and the
common sample through the cell grid (proforma.app.scoring.grid), with no per-cell rows.

An upload kept in the upload store (a point file or a single-family density file) is
never copied into a cell-score table. When a run needs its cells, its file is read into
arrays (once per process), each cell's grid position is computed, and the cells are
handed to DuckDB as one Arrow relation that already carries the truth (a gather by
position): 057 computes the per-cell terms over it, 067 the run aggregates, and the
coverage and gaps of a footprint are bitmaps over the positions. The arithmetic is the
same SQL as for forecasts in tables (057), so the numbers are the same.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.scoring.grid import Grid
from proforma.app.store.warehouse import Warehouse

#: The relation 057 reads for a stored upload (registered Arrow data).
CELLS_VIEW = "positional_cells"


@dataclass(frozen=True)
class Upload:
    """A stored upload's rows as arrays."""

    path: str
    cell: np.ndarray
    mu: np.ndarray
    sigma: np.ndarray | None


_uploads: dict[str, Upload] = {}
_scored: dict[tuple[Any, ...], Any] = {}
_lock = threading.Lock()
_names = itertools.count()


def upload_arrays(path: str) -> Upload:
    """The stored file's cells, mu and sigma (the last two files read stay in memory: a
    run reads a new upload's file for its cell count, its coverage and its aggregates)."""
    with _lock:
        hit = _uploads.get(path)
    if hit is not None:
        return hit
    table = pq.read_table(path)
    sigma = (
        table["sigma"].to_numpy(zero_copy_only=False).astype(np.float64)
        if "sigma" in table.column_names
        else None
    )
    upload = Upload(
        path,
        table["cell"].to_numpy(zero_copy_only=False).astype(np.int64),
        table["mu"].to_numpy(zero_copy_only=False).astype(np.float64),
        sigma,
    )
    with _lock:
        while len(_uploads) >= 2:
            _uploads.pop(next(iter(_uploads)))
        _uploads[path] = upload
    return upload


def cell_relation(
    upload: Upload, grid: Grid, *, keep: np.ndarray | None = None, coordinates: bool = False
) -> pa.Table:
    """The upload's cells that have scoreable truth in the grid (and lie in `keep`, a
    boolean array over the positions, when given) as (pos, cell, mu, sigma, actual), with
    y (the truth's change), item_id, horizon and origin_q when `coordinates`."""
    pos = _positions(upload, grid)
    inside = pos >= 0
    truth = np.full(pos.shape, np.nan)
    truth[inside] = grid.actual[pos[inside]]
    take = ~np.isnan(truth)
    if keep is not None:
        take[take] = keep[pos[take]]
    at = pos[take]
    columns: dict[str, Any] = {
        "pos": at,
        "cell": upload.cell[take],
        "mu": upload.mu[take],
        "sigma": (
            upload.sigma[take]
            if upload.sigma is not None
            else pa.nulls(int(take.sum()), type=pa.float64())
        ),
        "actual": truth[take],
    }
    if coordinates:
        columns["y"] = grid.change[at]
        columns.update(grid.coordinates(at))
    return pa.table(columns)


def _positions(upload: Upload, grid: Grid) -> np.ndarray:
    key = ("positions", upload.path, grid.build_id, grid.split, grid.fingerprint)
    with _lock:
        hit = _scored.get(key)
    if hit is None:
        hit = grid.positions(upload.cell)
        _remember(key, hit)
    return hit


def _remember(key: tuple[Any, ...], value: Any) -> None:
    with _lock:
        while len(_scored) >= 6:
            _scored.pop(next(iter(_scored)))
        _scored[key] = value


def scored_positions(
    wh: Warehouse, sid: int, upload: Upload, grid: Grid, params: dict[str, Any]
) -> tuple[np.ndarray, int]:
    """The grid positions the upload scores under these 057 parameters (the cells 057
    keeps: a finite mu, scoreable truth and, under the paper's rules, a usable sigma),
    and how many of them have density terms; kept per process for the run's next step."""
    key = (
        sid,
        upload.path,
        grid.build_id,
        grid.split,
        grid.fingerprint,
        repr(sorted(params.items())),
    )
    with _lock:
        hit = _scored.get(key)
    if hit is not None:
        return hit[0], int(hit[1])
    table = cell_relation(upload, grid)
    with terms(wh, table, params) as view:
        out = wh.arrow(f"SELECT pos, u IS NOT NULL AS density FROM {view}")
    pos = out["pos"].to_numpy()
    density = int(np.count_nonzero(out["density"].to_numpy(zero_copy_only=False)))
    _remember(key, (pos, density))
    return pos, density


class terms:
    """Context manager: 057's view single_cell_terms over Arrow cells (columns of
    `cell_relation`), with the submission's parameters; yields the view's name."""

    def __init__(self, wh: Warehouse, table: pa.Table, params: dict[str, Any]) -> None:
        self.wh, self.table, self.params = wh, table, params
        self.name = f"{CELLS_VIEW}_{next(_names)}"

    def __enter__(self) -> str:
        self.wh.con.register(self.name, self.table)
        self.wh.run_step(
            "eval/057_single_cell_terms", self.params, identifiers={"cells": self.name}
        )
        return "single_cell_terms"

    def __exit__(self, *exc: object) -> None:
        self.wh.execute("DROP VIEW IF EXISTS single_cell_terms")
        self.wh.con.unregister(self.name)
