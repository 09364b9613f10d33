"""The cell grid: a split's truth laid out by position, so that cells meet by index.

A forecast kept in the upload store meets its truth, its footprint and a run's common
sample through the grid instead of three hash joins on the packed cell key
(docs/scoring.md, "Cells by position"). sql/eval/042 defines the grid (eval.grid_rows,
eval.grid_cells: V0112): the split's eligible origins numbered in (firm, origin) order,
one slot per target item and horizon, position = row * slots + item slot * 20 + horizon
- 1, and the truth of each scoreable cell at its position. This module only loads it
into arrays and maps packed cell keys to positions and back: integer arithmetic and one
lookup in a (firm, quarter) table, no hashing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from proforma.app.scoring.provenance import current_build_id
from proforma.app.store.warehouse import Warehouse

#: Horizons per item slot.
HORIZONS = 20
#: The packed cell key (eval.cell_key): ((firm * 16384 + origin) * 128 + item) * 32 + horizon.
_FIRM, _ORIGIN, _ITEM, _HORIZON = 67_108_864, 4096, 32, 32


@dataclass(frozen=True)
class Grid:
    """One split's cells by position, with the truth of its scoreable cells."""

    build_id: int
    split: str
    fingerprint: str
    n_slots: int
    row_firm: np.ndarray  # (rows,) firm of each row
    row_origin: np.ndarray  # (rows,) origin quarter of each row
    lookup: np.ndarray  # (firms, quarters) row of (firm, q0 + quarter), -1 where none
    q0: int
    slot_item: np.ndarray  # (items,) item of each slot
    item_slot: np.ndarray  # (128,) slot of each item id, -1 where not a target
    actual: np.ndarray  # (positions,) float64, NaN where no scoreable truth
    change: np.ndarray  # (positions,) float64, the truth's change (y)

    @property
    def size(self) -> int:
        return int(self.actual.shape[0])

    def positions(self, cell: np.ndarray) -> np.ndarray:
        """The position of each packed cell key; -1 where the cell is not in the grid."""
        cell = np.asarray(cell, dtype=np.int64)
        n_firms, n_q = self.lookup.shape
        # the key's fields by shifts and masks (16384, 128 and 32 are powers of two)
        firm = cell >> 26
        quarter = ((cell >> 12) & 16383) - self.q0
        horizon = cell & 31
        ok = (firm >= 0) & (firm < n_firms) & (quarter >= 0) & (quarter < n_q)
        ok &= (horizon >= 1) & (horizon <= HORIZONS)
        firm *= n_q
        firm += quarter
        np.copyto(firm, 0, where=~ok)
        row = self.flat_lookup[firm]
        slot = self.item_slot[(cell >> 5) & 127]
        ok &= (row >= 0) & (slot >= 0)
        pos = row.astype(np.int64)
        pos *= self.n_slots
        slot *= HORIZONS
        pos += slot
        pos += horizon
        pos -= 1
        np.copyto(pos, -1, where=~ok)
        return pos

    @property
    def flat_lookup(self) -> np.ndarray:
        return self.lookup.reshape(-1)

    def cells(self, pos: np.ndarray) -> np.ndarray:
        """The packed cell key of each position (the inverse of `positions`)."""
        pos = np.asarray(pos, dtype=np.int64)
        row, rest = np.divmod(pos, self.n_slots)
        slot, h = np.divmod(rest, HORIZONS)
        firm = self.row_firm[row].astype(np.int64)
        origin = self.row_origin[row].astype(np.int64)
        item = self.slot_item[slot].astype(np.int64)
        return ((firm * 16384 + origin) * 128 + item) * 32 + h + 1

    def mask(self, cell: np.ndarray) -> np.ndarray:
        """A boolean array over the positions, true at these cells' (those in the grid)."""
        out = np.zeros(self.size, dtype=bool)
        pos = self.positions(cell)
        out[pos[pos >= 0]] = True
        return out

    @property
    def scoreable(self) -> np.ndarray:
        """True at the positions with scoreable truth (a footprint's cells are among them)."""
        return ~np.isnan(self.actual)

    @property
    def n_scoreable(self) -> int:
        return int(np.count_nonzero(self.scoreable))

    def relation_mask(self, wh: Warehouse, relation: str) -> np.ndarray:
        """The mask of a relation of scoreable cells of this split (fp_cells, common_cells):
        every scoreable position when it has as many cells as there are (a subset of
        equal size is the whole), else its cells' positions."""
        n = int(wh.scalar(f"SELECT count(*) FROM {relation}"))
        if n == self.n_scoreable:
            return self.scoreable
        return self.mask(wh.arrow(f"SELECT cell FROM {relation}")["cell"].to_numpy())

    def coordinates(self, pos: np.ndarray) -> dict[str, np.ndarray]:
        """item_id, horizon and origin_q of each position (the run aggregates' keys)."""
        row, rest = np.divmod(np.asarray(pos, dtype=np.int64), self.n_slots)
        slot, h = np.divmod(rest, HORIZONS)
        return {
            "item_id": self.slot_item[slot].astype(np.int16),
            "horizon": (h + 1).astype(np.int8),
            "origin_q": self.row_origin[row].astype(np.int32),
        }


_cache: dict[tuple[str, int, str], tuple[int, Grid]] = {}
_lock = threading.Lock()


def truth_fingerprint(wh: Warehouse, split: str) -> str:
    """Count and an order-free hash of the split's scoreable truth: a grid made from
    other truth (a new build, a truth changed in place) is made again."""
    n, digest = wh.one(
        "SELECT count(*), coalesce(bit_xor(hash(firm_id, origin_q, item_id, horizon, actual, "
        "change)), 0) FROM panel.truth WHERE split = ? AND isfinite(actual) AND isfinite(baseline)",
        [split],
    )
    return f"{int(n)}:{int(digest):016x}"


def grid_for(wh: Warehouse, split: str) -> Grid:
    """The split's grid for the current build and truth, made (042) when there is none,
    loaded once per process. A grid loaded in this process is taken again while the
    build and the truth's row count are the same (a statistic, no scan); one read from
    the warehouse is checked against the truth's full fingerprint."""
    build = current_build_id(wh)
    build_id = -1 if build is None else int(build)
    rows = int(wh.scalar("SELECT count(*) FROM panel.truth"))
    key = (str(wh.path), build_id, split)
    with _lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] == rows:
        return hit[1]
    fingerprint = truth_fingerprint(wh, split)
    stored = wh.fetchone(
        "SELECT fingerprint FROM eval.grids WHERE build_id = ? AND split = ?", [build_id, split]
    )
    n_items = int(wh.scalar("SELECT count(*) FROM ref.items WHERE is_target"))
    n_slots = n_items * HORIZONS
    if stored is None or stored[0] != fingerprint:
        with wh.transaction():
            wh.run_step(
                "eval/042_cell_grid",
                {
                    "split": split,
                    "grid_build_id": build_id,
                    "grid_slots": n_slots,
                    "grid_fingerprint": fingerprint,
                },
            )
    grid = _load(wh, build_id, split, fingerprint, n_slots)
    with _lock:
        _cache[key] = (rows, grid)
    return grid


def _load(wh: Warehouse, build_id: int, split: str, fingerprint: str, n_slots: int) -> Grid:
    rows = wh.arrow(
        "SELECT row, firm_id, origin_q FROM eval.grid_rows WHERE build_id = ? AND split = ? "
        "ORDER BY row",
        [build_id, split],
    )
    row_firm = rows["firm_id"].to_numpy().astype(np.int32)
    row_origin = rows["origin_q"].to_numpy().astype(np.int32)
    n_rows = len(row_firm)
    q0 = int(row_origin.min()) if n_rows else 0
    n_q = int(row_origin.max()) - q0 + 1 if n_rows else 1
    n_firms = int(row_firm.max()) + 1 if n_rows else 1
    lookup = np.full((n_firms, n_q), -1, dtype=np.int32)
    lookup[row_firm, row_origin - q0] = np.arange(n_rows, dtype=np.int32)
    slot_item = (
        wh.arrow("SELECT item_id FROM ref.items WHERE is_target ORDER BY item_id")["item_id"]
        .to_numpy()
        .astype(np.int16)
    )
    item_slot = np.full(128, -1, dtype=np.int64)
    item_slot[slot_item] = np.arange(len(slot_item))
    size = n_rows * n_slots
    actual = np.full(size, np.nan)
    change = np.full(size, np.nan)
    cells = wh.arrow(
        "SELECT pos, actual, change FROM eval.grid_cells WHERE build_id = ? AND split = ?",
        [build_id, split],
    )
    pos = cells["pos"].to_numpy()
    actual[pos] = cells["actual"].to_numpy(zero_copy_only=False)
    change[pos] = cells["change"].to_numpy(zero_copy_only=False)
    return Grid(
        build_id,
        split,
        fingerprint,
        n_slots,
        row_firm,
        row_origin,
        lookup,
        q0,
        slot_item,
        item_slot,
        actual,
        change,
    )
