"""The cell layout: a split's truth laid out by position, so that cells meet by index.

(Its tables keep the name they were made with: eval.grids, eval.grid_rows,
eval.grid_cells.)

A forecast kept in the upload store meets its truth, its footprint and a run's common
sample through the layout instead of hash joins on the packed cell key (docs/scoring.md,
"Cells by position"). sql/eval/042 defines the layout (eval.grid_rows, eval.grid_cells:
V0112): the split's eligible origins numbered in (origin, firm) order, one slot per
target item and horizon (sh = item slot * 20 + horizon - 1), and the truth of each
scoreable cell at its position: origin-major, then slot, then firm (the rows of one
origin quarter are a block of k rows from row b; a cell lies at b * slots + sh * k +
row - b), so each (item, horizon, origin quarter) group is one contiguous range. This
module keeps the layout as dense arrays (one value per position) in a cache folder beside
the upload store, mapped into memory by every process that scores, and maps packed cell
keys to positions and back: integer arithmetic and one lookup in a (firm, quarter)
table, no hashing.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from proforma.app.scoring.provenance import current_build_id
from proforma.app.store.columns import to_numpy
from proforma.app.store.warehouse import Warehouse

#: Horizons per item slot.
HORIZONS = 20
#: The format's version, part of the layout's fingerprint (a warehouse's layout in another
#: format is made again) and of its cache folder's name. 2: origin-major (1: row-major).
FORMAT = 2
#: The dense columns kept per position, and their types.
COLUMNS = {"sh": np.int16, "oq": np.int16, "actual": np.float64, "change": np.float64}


@dataclass(frozen=True)
class CellLayout:
    """One split's cells by position, with the truth of its scoreable cells."""

    build_id: int
    split: str
    fingerprint: str
    n_slots: int
    n_scoreable: int
    row_firm: np.ndarray  # (rows,) firm of each row
    row_origin: np.ndarray  # (rows,) origin quarter of each row (ascending)
    block_first: np.ndarray  # (blocks,) first row of each origin quarter's block
    block_rows: np.ndarray  # (blocks,) rows in each block
    row_base: np.ndarray  # (rows,) position of the row's slot 0: b * slots + row - b
    row_stride: np.ndarray  # (rows,) rows in the row's block: the step from slot to slot
    lookup: np.ndarray  # (firms, quarters) row of (firm, q0 + quarter), -1 where none
    q0: int
    slot_item: np.ndarray  # (items,) item of each slot
    item_slot: np.ndarray  # (128,) slot of each item id, -1 where not a target
    sh: np.ndarray  # (positions,) item slot * 20 + horizon - 1
    oq: np.ndarray  # (positions,) origin quarter - q0
    actual: np.ndarray  # (positions,) NaN where no scoreable truth
    change: np.ndarray  # (positions,) float64, the truth's change (y)
    folder: Path | None = None  # the cache folder of the dense arrays

    @property
    def size(self) -> int:
        return int(self.actual.shape[0])

    def positions(self, cell: np.ndarray) -> np.ndarray:
        """The position of each packed cell key (eval.cell_key); -1 where the cell is not
        in the layout."""
        cell = np.asarray(cell, dtype=np.int64)
        if not self.row_base.size:
            return np.full(cell.shape, -1, dtype=np.int64)
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
        row = self.lookup.reshape(-1)[firm]
        slot = self.item_slot[(cell >> 5) & 127]
        ok &= (row >= 0) & (slot >= 0)
        np.copyto(row, 0, where=~ok)
        slot *= HORIZONS
        slot += horizon
        slot -= 1  # sh
        slot *= self.row_stride[row]
        pos = self.row_base[row]
        pos += slot
        np.copyto(pos, -1, where=~ok)
        return pos

    def cells(self, pos: np.ndarray) -> np.ndarray:
        """The packed cell key of each position (the inverse of `positions`)."""
        pos = np.asarray(pos, dtype=np.int64)
        block = np.searchsorted(self.block_first * self.n_slots, pos, side="right") - 1
        first = self.block_first[block].astype(np.int64)
        sh, offset = np.divmod(pos - first * self.n_slots, self.block_rows[block])
        row = first + offset
        slot, h = np.divmod(sh, HORIZONS)
        firm = self.row_firm[row].astype(np.int64)
        origin = self.row_origin[row].astype(np.int64)
        item = self.slot_item[slot].astype(np.int64)
        return ((firm * 16384 + origin) * 128 + item) * 32 + h + 1

    def rows(self, lo: int, hi: int) -> np.ndarray:
        """The layout row (a firm and origin quarter, eval.grid_rows) of each position in
        [lo, hi): within an origin quarter's block the rows cycle slot by slot."""
        pos = np.arange(lo, hi, dtype=np.int64)
        block = np.searchsorted(self.block_first * self.n_slots, pos, side="right") - 1
        first = self.block_first[block].astype(np.int64)
        pos -= first * self.n_slots
        pos %= self.block_rows[block]
        pos += first
        return pos.astype(np.int32)

    def mask(self, cell: np.ndarray) -> np.ndarray:
        """A boolean array over the positions, true at these cells' (those in the layout)."""
        out = np.zeros(self.size, dtype=bool)
        pos = self.positions(cell)
        out[pos[pos >= 0]] = True
        return out

    def relation_mask(
        self, wh: Warehouse, relation: str, n: int | None = None
    ) -> np.ndarray | None:
        """The mask of a relation of scoreable cells of this split (fp_cells,
        common_cells) of `n` cells when known (else counted), or None when it holds every
        scoreable cell (a subset of equal size is the whole: nothing to mask, and nothing
        read)."""
        if n is None:
            n = int(wh.scalar(f"SELECT count(*) FROM {relation}"))
        if n == self.n_scoreable:
            return None
        return self.mask(to_numpy(wh.arrow(f"SELECT cell FROM {relation}")["cell"]))

    def cells_fingerprint(self, wh: Warehouse, relation: str) -> str:
        """The sample fingerprint (`relation_fingerprint`) of every scoreable cell of the
        split, given `relation`, a relation holding exactly those cells: computed from it
        once and kept in the layout's cache folder (the cells are fixed by the folder's
        truth and layout; DuckDB's version is in the file's name, its hash being DuckDB's)."""
        import duckdb

        path = (
            self.folder / f"cells_fingerprint.duckdb-{duckdb.__version__}.txt"
            if self.folder is not None
            else None
        )
        if path is not None and path.is_file():
            return path.read_text(encoding="ascii").strip()
        n, found = relation_fingerprint(wh, relation)
        if n != self.n_scoreable:
            raise ValueError(f"{relation} holds {n} cells, not the layout's {self.n_scoreable}")
        if path is not None:
            tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
            tmp.write_text(found, encoding="ascii")
            os.replace(tmp, path)
        return found

    def keys_params(self) -> dict[str, object]:
        """SQL variables that turn (sh, oq) back into item_id, horizon and origin_q, and a
        frame's `row` into its firm and origin quarter (eval.grid_rows of this layout)."""
        return {
            "grid_slot_items": [int(i) for i in self.slot_item],
            "grid_q0": self.q0,
            "grid_build_id": self.build_id,
            "grid_split": self.split,
        }


def relation_fingerprint(wh: Warehouse, relation: str) -> tuple[int, str]:
    """The size and order-free fingerprint of a relation of cells (a run's common sample)."""
    n, digest = wh.one(f"SELECT count(*), coalesce(bit_xor(hash(cell)), 0) FROM {relation}")
    return int(n), f"{int(n)}:{int(digest):016x}"


def layout_build_id(wh: Warehouse) -> int:
    """The build a layout of the current build is filed under (-1: none)."""
    build = current_build_id(wh)
    return -1 if build is None else int(build)


_cache: dict[tuple[str, int, str], tuple[int, CellLayout]] = {}
_lock = threading.Lock()


def truth_fingerprint(wh: Warehouse, split: str) -> str:
    """Count and an order-free hash of the split's scoreable truth: a layout made from
    other truth (a new build, a truth changed in place) is made again."""
    n, digest = wh.one(
        "SELECT count(*), coalesce(bit_xor(hash(firm_id, origin_q, item_id, horizon, actual, "
        "change)), 0) FROM panel.truth WHERE split = ? AND isfinite(actual) AND isfinite(baseline)",
        [split],
    )
    return f"{int(n)}:{int(digest):016x}:g{FORMAT}"


def truth_rows(wh: Warehouse) -> int:
    """The truth's stored cells: panel.truth_cells where the build made it (a count
    DuckDB keeps: no scan; the view panel.truth joins the splits, 0.3 CPU-s a count at the
    demo scale), else panel.truth itself (a panel written as a table)."""
    source = "panel.truth_cells" if wh.table_exists("panel.truth_cells") else "panel.truth"
    return int(wh.scalar(f"SELECT count(*) FROM {source}"))


def layout_for(wh: Warehouse, split: str, cache_root: Path) -> CellLayout:
    """The split's layout for the current build and truth: made (042) when the warehouse
    has none for this truth, its dense arrays written under `cache_root` (shared by
    warehouses of the same truth and layout) when missing, mapped once per process.

    A layout of the current build is taken while the truth has the rows it was made from
    (`truth_rows`: a statistic, no scan); a new build, or a truth with other rows, has its truth
    fingerprinted and the layout made again when the fingerprint differs. (A truth whose
    values are changed in place under the same build, which no flow does, is not seen.)"""
    build_id = layout_build_id(wh)
    rows = truth_rows(wh)
    key = (str(wh.path), build_id, split)
    with _lock:
        hit = _cache.get(key)
    if hit is not None and hit[0] == rows:
        return hit[1]
    stored = wh.fetchone(
        "SELECT fingerprint, truth_rows FROM eval.grids WHERE build_id = ? AND split = ?",
        [build_id, split],
    )
    n_items = int(wh.scalar("SELECT count(*) FROM ref.items WHERE is_target"))
    n_slots = n_items * HORIZONS
    # a layout in another format (an older FORMAT) is made again like one of other truth
    if stored is None or int(stored[1]) != rows or not str(stored[0]).endswith(f":g{FORMAT}"):
        fingerprint = truth_fingerprint(wh, split)
        if stored is None or stored[0] != fingerprint:
            with wh.transaction():
                wh.run_step(
                    "eval/042_cell_grid",
                    {
                        "split": split,
                        "grid_build_id": build_id,
                        "grid_slots": n_slots,
                        "grid_fingerprint": fingerprint,
                        "grid_truth_rows": rows,
                    },
                )
        else:
            # the same truth, its rows counted another way when the layout was made (an
            # older release counted the view): record this count, so it is not checked again
            wh.execute(
                "UPDATE eval.grids SET truth_rows = ? WHERE build_id = ? AND split = ?",
                [rows, build_id, split],
            )
    layout = _load(wh, build_id, split, n_slots, cache_root)
    with _lock:
        _cache[key] = (rows, layout)
    return layout


def _load(wh: Warehouse, build_id: int, split: str, n_slots: int, cache_root: Path) -> CellLayout:
    fingerprint, n_scoreable = wh.one(
        "SELECT fingerprint, n_cells FROM eval.grids WHERE build_id = ? AND split = ?",
        [build_id, split],
    )
    rows = wh.arrow(
        "SELECT row, firm_id, origin_q FROM eval.grid_rows WHERE build_id = ? AND split = ? "
        "ORDER BY row",
        [build_id, split],
    )
    row_firm = to_numpy(rows["firm_id"]).astype(np.int32)
    row_origin = to_numpy(rows["origin_q"]).astype(np.int32)
    n_rows = len(row_firm)
    q0 = int(row_origin.min()) if n_rows else 0
    n_q = int(row_origin.max()) - q0 + 1 if n_rows else 1
    n_firms = int(row_firm.max()) + 1 if n_rows else 1
    lookup = np.full((n_firms, n_q), -1, dtype=np.int32)
    lookup[row_firm, row_origin - q0] = np.arange(n_rows, dtype=np.int32)
    # rows come in origin order: each quarter's rows are one block
    _, block_first, block_rows = np.unique(row_origin, return_index=True, return_counts=True)
    block_first = block_first.astype(np.int64)
    block_rows = block_rows.astype(np.int64)
    row_b = np.repeat(block_first, block_rows)
    row_base = row_b * n_slots + (np.arange(n_rows, dtype=np.int64) - row_b)
    row_stride = np.repeat(block_rows, block_rows)
    slot_item = to_numpy(
        wh.arrow("SELECT item_id FROM ref.items WHERE is_target ORDER BY item_id")["item_id"]
    ).astype(np.int16)
    item_slot = np.full(128, -1, dtype=np.int64)
    item_slot[slot_item] = np.arange(len(slot_item))
    layout = hashlib.sha256(row_firm.tobytes() + row_origin.tobytes() + slot_item.tobytes())
    folder = cache_root / (
        f"v{FORMAT}-{split}-{fingerprint.replace(':', '-')}-{layout.hexdigest()[:16]}"
    )
    if not all((folder / f"{name}.npy").is_file() for name in COLUMNS):
        _write_dense(wh, build_id, split, n_rows, n_slots, row_origin, q0, block_rows, folder)
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r") for name in COLUMNS}
    return CellLayout(
        build_id,
        split,
        str(fingerprint),
        n_slots,
        int(n_scoreable),
        row_firm,
        row_origin,
        block_first,
        block_rows,
        row_base,
        row_stride,
        lookup,
        q0,
        slot_item,
        item_slot,
        arrays["sh"],
        arrays["oq"],
        arrays["actual"],
        arrays["change"],
        folder,
    )


#: Positions laid out per piece when the dense arrays are written (about 50 bytes each
#: in flight: the arrays' 20 plus the arithmetic's), so writing a layout holds some 50 MB
#: whatever the panel's size, instead of every array whole (about 45 bytes a position:
#: 1.4 GB at 2,000 firms, 20 GB at 30,000).
WRITE_CHUNK = 1 << 20
#: Cells per Arrow batch read from eval.grid_cells while writing (24 bytes each).
READ_BATCH = 1 << 20


def _write_dense(
    wh: Warehouse,
    build_id: int,
    split: str,
    n_rows: int,
    n_slots: int,
    row_origin: np.ndarray,
    q0: int,
    block_rows: np.ndarray,
    folder: Path,
    chunk: int | None = None,
) -> None:
    """The layout's dense arrays from eval.grid_cells, written beside each other and
    renamed into place (a reader never sees half a layout).

    Written piece by piece in position order (`chunk` positions at a time): the cells
    stream from DuckDB sorted by position (DuckDB's sort keeps to its memory limit and
    spills), and each piece's slot and origin quarter follow from the block layout, so
    no array is ever whole in memory. The files are those `np.save` writes of the whole
    arrays, byte for byte."""
    chunk = chunk or WRITE_CHUNK
    size = n_rows * n_slots
    block_rows = np.asarray(block_rows, dtype=np.int64)
    block_first = np.concatenate([[0], np.cumsum(block_rows)[:-1]]).astype(np.int64)
    block_pos = block_first * n_slots  # first position of each block
    block_oq = (row_origin[block_first] - q0).astype(np.int16) if n_rows else block_rows[:0]
    tmp = folder.with_name(f".{folder.name}.{secrets.token_hex(6)}.tmp")
    tmp.mkdir(parents=True)  # the cache folder too, on first use
    files = _npy_files(tmp, size)
    reader = wh.reader(
        "SELECT pos, actual, change FROM eval.grid_cells WHERE build_id = ? AND split = ? "
        "ORDER BY pos",
        [build_id, split],
        batch_size=READ_BATCH,
    )
    cells = _SortedCells(iter(reader))
    try:
        for lo in range(0, size, chunk):
            hi = min(lo + chunk, size)
            actual, change = cells.piece(lo, hi)
            sh, block = _slots_and_blocks(lo, hi, block_pos, block_rows)
            for name, values in (
                ("sh", sh),
                ("oq", block_oq[block]),
                ("actual", actual),
                ("change", change),
            ):
                files[name].write(values.data)  # no copy: the array's own buffer
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        for _ in cells.batches:  # the connection takes other work once its result is read out
            pass
        for f in files.values():
            f.close()
    try:
        os.replace(tmp, folder)
    except OSError:  # another process made it first: keep theirs
        shutil.rmtree(tmp, ignore_errors=True)
    _prune(folder.parent, split)


def _npy_files(folder: Path, size: int) -> dict[str, Any]:
    """One open .npy file per dense column, its header written for `size` values."""
    files = {}
    for name, dtype in COLUMNS.items():
        f = open(folder / f"{name}.npy", "wb")  # noqa: SIM115 - the caller closes them
        header = {
            "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
            "fortran_order": False,
            "shape": (size,),
        }
        np.lib.format.write_array_header_1_0(f, header)
        files[name] = f
    return files


class _SortedCells:
    """The truth's cells as they stream in position order, handed out piece by piece."""

    def __init__(self, batches: Iterator[Any]) -> None:
        self.batches = batches
        self.left: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def piece(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(actual, change) at positions [lo, hi), NaN where no cell: what is left of the
        last batch, then new batches."""
        actual = np.full(hi - lo, np.nan)
        change = np.full(hi - lo, np.nan)
        while True:
            if self.left is None:
                batch = next(self.batches, None)
                if batch is None:
                    break
                self.left = (
                    to_numpy(batch.column(0)),
                    to_numpy(batch.column(1)),
                    to_numpy(batch.column(2)),
                )
            pos, act, chg = self.left
            cut = int(np.searchsorted(pos, hi))
            actual[pos[:cut] - lo] = act[:cut]
            change[pos[:cut] - lo] = chg[:cut]
            if cut < len(pos):
                self.left = (pos[cut:], act[cut:], chg[cut:])
                break
            self.left = None
        return actual, change


def _slots_and_blocks(
    lo: int, hi: int, block_pos: np.ndarray, block_rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(slot, block) of each position in [lo, hi): origin-major, then slot, then row, so
    sh = (position - block start) // rows in the block."""
    p = np.arange(lo, hi, dtype=np.int64)
    block = np.searchsorted(block_pos, p, side="right") - 1
    p -= block_pos[block]
    p //= block_rows[block]
    return p.astype(np.int16), block


#: Layouts kept per split in the cache folder (the newest; an older build's is made again
#: from its warehouse's eval.grid_cells should it be scored again).
KEEP = 2


def _prune(root: Path, split: str) -> None:
    """Bound the cache: a build of 30,000 firms lays out gigabytes per layout."""
    layouts = sorted(
        (f for f in root.glob(f"v*-{split}-*") if f.is_dir()),
        key=lambda f: f.stat().st_mtime,
        reverse=True,
    )
    for old in layouts[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
