"""Arrow readers over the built panel: the tabular view and per-origin tuple windows.

Models never open the warehouse; the orchestration layer hands them these readers
(docs/contracts.md, "Arrow readers for models"). The data semantics live in SQL
(sql/build/150_tuple_view.sql and 160_tabular_view.sql define the table macros these
readers query); Python only walks a split's origin quarters in chunks, so memory stays
bounded at any panel size, and lays the long rows out into the contract's columns
(numpy scatter of the values SQL computed; no pandas).

Rows come in (origin_q, firm_id) order, so a consumer can group them by quarter while
streaming.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.panel import SPLITS, TUPLE_WINDOW_SCHEMA

N_HORIZONS = 20
HISTORY = 12
N_FF48 = 48
#: Origins per SQL query: bounds the memory of one chunk (a chunk is whole quarters).
CHUNK_ORIGINS = 20_000


def _check(wh: Warehouse, split: str) -> None:
    if split not in SPLITS:
        raise UserError(f"Unknown split {split!r}: use one of {', '.join(SPLITS)}")
    wh.require_panel("panel.truth_cells")


def item_names(wh: Warehouse) -> list[str]:
    """The 78 items in item_id order (index i holds item_id i + 1)."""
    rows = wh.fetchall("SELECT item FROM ref.items WHERE item_id > 0 ORDER BY item_id")
    return [r[0] for r in rows]


def feature_columns(items: list[str]) -> list[str]:
    """The 985 feature names in order: levels, yoy changes, scale, FF48 dummies."""
    cols = [f"{it}_level_{k}" for it in items for k in range(4)]
    cols += [f"{it}_yoy_{k}" for it in items for k in range(8)]
    cols.append("scale_level_0")
    cols += [f"indff48_{k}" for k in range(1, N_FF48 + 1)]
    return cols


def target_columns(items: list[str]) -> list[str]:
    """The 1,560 target names: {item}_t1..t20 in item_id order."""
    return [f"{it}_t{h}" for it in items for h in range(1, N_HORIZONS + 1)]


def tabular_schema(items: list[str]) -> pa.Schema:
    fields = [
        pa.field("firm_id", pa.int32()),
        pa.field("origin_q", pa.int32()),
        pa.field("split", pa.string()),
    ]
    fields += [pa.field(c, pa.float32()) for c in feature_columns(items)]
    fields += [pa.field(c, pa.float32()) for c in target_columns(items)]
    return pa.schema(fields)


def origin_chunks(
    wh: Warehouse,
    split: str,
    chunk_origins: int = CHUNK_ORIGINS,
    origin_q: int | None = None,
) -> list[tuple[int, int, int]]:
    """(lo_q, hi_q, n_origins) ranges of whole origin quarters covering a split, in order."""
    where = "split = ?" + (" AND origin_q = ?" if origin_q is not None else "")
    params = [split] + ([origin_q] if origin_q is not None else [])
    rows = wh.fetchall(
        f"SELECT origin_q, count(*) FROM panel.origins WHERE {where} GROUP BY 1 ORDER BY 1",
        params,
    )
    chunks: list[tuple[int, int, int]] = []
    lo: int | None = None
    hi = n = 0
    for q, c in rows:
        if lo is not None and n + c > chunk_origins:
            chunks.append((lo, hi, n))
            lo, n = None, 0
        if lo is None:
            lo = q
        hi, n = q, n + c
    if lo is not None:
        chunks.append((lo, hi, n))
    return chunks


def _rebatch(batches: Iterator[pa.RecordBatch], batch_size: int) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for start in range(0, batch.num_rows, batch_size):
            yield batch.slice(start, batch_size)


# -- tuple windows -----------------------------------------------------------------------
def _fold_windows(rows: pa.Table, split: str, schema: pa.Schema) -> pa.Table:
    """Long rows sorted by (origin_q, firm_id, ...) folded into one row per origin: the
    schema's list columns from the rows in order, its other columns from each origin's
    first row, `split` as given."""
    firm = rows.column("firm_id").to_numpy()
    origin = rows.column("origin_q").to_numpy()
    starts = np.flatnonzero(np.r_[True, (firm[1:] != firm[:-1]) | (origin[1:] != origin[:-1])])
    offsets = pa.array(np.r_[starts, rows.num_rows].astype(np.int32))
    columns = {}
    for field in schema:
        if field.name == "split":
            columns["split"] = pa.array([split] * len(starts), pa.string())
        elif pa.types.is_list(field.type):
            values = rows.column(field.name).combine_chunks()
            columns[field.name] = pa.ListArray.from_arrays(offsets, values)
        else:
            columns[field.name] = rows.column(field.name).take(starts)
    return pa.table(columns, schema=schema)


def tuple_windows(
    wh: Warehouse,
    split: str,
    batch_size: int = 2048,
    future: bool = True,
    *,
    firm_id: int | None = None,
    origin_q: int | None = None,
    chunk_origins: int = 5_000,
) -> pa.RecordBatchReader:
    """One row per eligible origin of `split`: its window as parallel lists.

    `rel_q` (-11..0 history incl. the scale token at 0; 1..20 future when `future`),
    `item_id` and standardized `x` (origin parameters, clipped at +-6); lists are sorted
    by (rel_q, item_id). Future tuples are the origin's truth cells: present_in_q0,
    realized and not purged (cut at the split's last quarter). `firm_id`/`origin_q`
    restrict to one firm or one origin quarter.
    """
    _check(wh, split)
    chunks = origin_chunks(wh, split, chunk_origins, origin_q)
    firm_filter = "" if firm_id is None else f" AND firm_id = {int(firm_id)}"
    future_filter = "" if future else " AND NOT is_future"

    def batches() -> Iterator[pa.RecordBatch]:
        for lo, hi, _ in chunks:
            # Sorted long rows, folded into list columns here: DuckDB's ordered list
            # aggregates are several times slower than one sort.
            rows = wh.arrow(
                f"""SELECT firm_id::INTEGER AS firm_id, origin_q::INTEGER AS origin_q,
                           ff48::SMALLINT AS ff48, rel_q::TINYINT AS rel_q,
                           item_id::SMALLINT AS item_id, x::FLOAT AS x
                    FROM panel.tuple_window_rows({int(lo)}, {int(hi)})
                    WHERE split = ?{firm_filter}{future_filter}
                    ORDER BY origin_q, firm_id, rel_q, item_id""",
                [split],
            )
            if rows.num_rows == 0:
                continue
            table = _fold_windows(rows, split, TUPLE_WINDOW_SCHEMA)
            yield from _rebatch(iter(table.to_batches()), batch_size)

    return pa.RecordBatchReader.from_batches(TUPLE_WINDOW_SCHEMA, batches())


RAW_WINDOW_SCHEMA = pa.schema(
    [
        pa.field("firm_id", pa.int32()),
        pa.field("origin_q", pa.int32()),
        pa.field("split", pa.string()),
        pa.field("ff48", pa.int16()),
        pa.field("z", pa.float64()),
        pa.field("rel_q", pa.list_(pa.int8())),
        pa.field("item_id", pa.list_(pa.int16())),
        pa.field("v", pa.list_(pa.float64())),
    ]
)


def raw_windows(
    wh: Warehouse,
    split: str = "test",
    batch_size: int = 2048,
    *,
    origins: pa.Table | None = None,
    chunk_origins: int = 5_000,
) -> pa.RecordBatchReader:
    """One row per eligible origin of `split`: the values the firm reported at rel_q
    -11..0 in reported units (items 1..78, no scale token), as parallel lists sorted by
    (rel_q, item_id), with the origin deflator `z` and industry `ff48`.

    `origins` (a table with int columns firm_id, origin_q) restricts the rows to those
    origins, e.g. a footprint's origin sample. For models that forecast in dollars and
    hand their forecasts back with `ingest_forecasts(..., space="dollars")`.
    """
    _check(wh, split)
    chunks = origin_chunks(wh, split, chunk_origins)
    view = "__raw_window_origins"
    sample_join = ""
    if origins is not None:
        missing = {"firm_id", "origin_q"} - set(origins.column_names)
        if missing:
            raise UserError(
                f"origins needs columns firm_id and origin_q (missing {sorted(missing)})"
            )
        sample_join = f" JOIN {view} AS s USING (firm_id, origin_q)"

    def batches() -> Iterator[pa.RecordBatch]:
        with contextlib.ExitStack() as stack:
            if origins is not None:
                stack.enter_context(wh.registered(view, origins.select(["firm_id", "origin_q"])))
            for lo, hi, _ in chunks:
                rows = wh.arrow(
                    f"""SELECT r.firm_id::INTEGER AS firm_id, r.origin_q::INTEGER AS origin_q,
                               r.ff48::SMALLINT AS ff48, r.z::DOUBLE AS z,
                               r.rel_q::TINYINT AS rel_q, r.item_id::SMALLINT AS item_id,
                               r.v::DOUBLE AS v
                        FROM panel.raw_window_rows({int(lo)}, {int(hi)}) AS r{sample_join}
                        WHERE r.split = ?
                        ORDER BY r.origin_q, r.firm_id, r.rel_q, r.item_id""",
                    [split],
                )
                if rows.num_rows == 0:
                    continue
                table = _fold_windows(rows, split, RAW_WINDOW_SCHEMA)
                yield from _rebatch(iter(table.to_batches()), batch_size)

    return pa.RecordBatchReader.from_batches(RAW_WINDOW_SCHEMA, batches())


# -- tabular view ------------------------------------------------------------------------
def _feature_blocks(
    wh: Warehouse,
    split: str,
    chunks: list[tuple[int, int, int]],
    items: list[str],
    imputed: bool,
) -> Iterator[tuple[pa.Table, np.ndarray, str, tuple[int, int]]]:
    """Per chunk of whole origin quarters: the keys (firm_id, origin_q, ff48 in (origin_q,
    firm_id) order), the dense float32 feature matrix in feature_columns order (NaN where
    the view is NULL; the imputation's fills laid over the gaps when `imputed`), the SQL
    prefix numbering the chunk's rows, and the chunk's quarter range."""
    n_feat = len(items) * 12 + 1 + N_FF48
    for lo, hi, _ in chunks:
        keys = wh.arrow(
            "SELECT firm_id::INTEGER AS firm_id, origin_q::INTEGER AS origin_q, ff48 "
            "FROM panel.origins WHERE split = ? AND origin_q BETWEEN ? AND ? "
            "ORDER BY origin_q, firm_id",
            [split, lo, hi],
        )
        n = keys.num_rows
        if n == 0:
            continue
        number = (
            "WITH o AS (SELECT firm_id, origin_q, (row_number() OVER "
            "(ORDER BY origin_q, firm_id) - 1)::INTEGER AS r FROM panel.origins "
            f"WHERE split = ? AND origin_q BETWEEN {int(lo)} AND {int(hi)}) "
        )
        feats = np.full((n, n_feat), np.nan, dtype=np.float32)
        f = wh.arrow(
            number + "SELECT o.r, t.item_id, t.* EXCLUDE (firm_id, origin_q, item_id) "
            f"FROM panel.tabular_feature_rows({int(lo)}, {int(hi)}) AS t "
            "JOIN o USING (firm_id, origin_q)",
            [split],
        )
        r = f.column("r").to_numpy()
        item = f.column("item_id").to_numpy().astype(np.int64)
        items_mask = item > 0
        base = (item[items_mask] - 1) * 4
        ybase = len(items) * 4 + (item[items_mask] - 1) * 8
        for j in range(4):
            vals = f.column(f"level_{j}").to_numpy(zero_copy_only=False)
            feats[r[items_mask], base + j] = vals[items_mask]
        for j in range(8):
            vals = f.column(f"yoy_{j}").to_numpy(zero_copy_only=False)
            feats[r[items_mask], ybase + j] = vals[items_mask]
        scale = ~items_mask
        feats[r[scale], len(items) * 12] = f.column("level_0").to_numpy(zero_copy_only=False)[scale]
        if imputed:  # the factor imputation's fills over the view's gaps
            fills = wh.arrow(
                number + "SELECT o.r, c.feature, c.value FROM panel.tabular_imputed_cells AS c "
                "JOIN o USING (firm_id, origin_q)",
                [split],
            )
            feats[fills.column("r").to_numpy(), fills.column("feature").to_numpy()] = fills.column(
                "value"
            ).to_numpy()
        ff = keys.column("ff48").to_numpy()
        dummies = np.zeros((n, N_FF48), dtype=np.float32)
        known = (ff >= 1) & (ff <= N_FF48)
        dummies[np.nonzero(known)[0], ff[known] - 1] = 1.0
        feats[:, len(items) * 12 + 1 :] = dummies
        yield keys, feats, number, (int(lo), int(hi))


def feature_matrices(
    wh: Warehouse, split: str, *, chunk_origins: int = CHUNK_ORIGINS, imputed: bool = False
) -> Iterator[tuple[pa.Table, np.ndarray]]:
    """The tabular view's features of `split` as dense float32 matrices, one per chunk of
    whole origin quarters (rows in (origin_q, firm_id) order, columns in feature_columns
    order, NaN where the view is NULL) with their keys (firm_id, origin_q, ff48): what
    tabular_reader turns into Arrow columns, for numpy consumers such as the imputation,
    which would otherwise pay for that conversion and its way back."""
    _check(wh, split)
    items = item_names(wh)
    chunks = origin_chunks(wh, split, chunk_origins)
    for keys, feats, _, _ in _feature_blocks(wh, split, chunks, items, imputed):
        yield keys, feats


def tabular_reader(
    wh: Warehouse,
    split: str,
    batch_size: int = 8192,
    columns: list[str] | None = None,
    imputed: bool = False,
    *,
    chunk_origins: int = CHUNK_ORIGINS,
    origin_q: int | None = None,
) -> pa.RecordBatchReader:
    """The tabular view of `split`, streamed in (origin_q, firm_id) order (only the
    origins of quarter `origin_q` when given: a round's, docs/rounds.md).

    Columns: firm_id int32, origin_q int32, split, the 985 features and the 1,560
    targets (float32; NULL when missing, not present at the origin, or purged).
    `columns` keeps only those columns (keys always come first). `imputed=True` lays the
    factor imputation's filled cells (panel.tabular_imputed_cells, app/model_inputs/imputed.py) over
    the view's gaps.
    """
    _check(wh, split)
    items = item_names(wh)
    schema = tabular_schema(items)
    if columns is not None:
        schema = _selected(schema, columns)
    if imputed and not wh.table_exists("panel.tabular_imputed_cells"):
        raise UserError(
            "No imputed tabular view (panel.tabular_imputed_cells): run `proforma run impute` "
            "(the factor imputation of the competitor suite) first."
        )
    chunks = origin_chunks(wh, split, chunk_origins, origin_q)
    n_feat = len(items) * 12 + 1 + N_FF48
    n_targ = len(items) * N_HORIZONS
    full_names = ["firm_id", "origin_q", "split"] + feature_columns(items) + target_columns(items)
    position = {c: j for j, c in enumerate(full_names)}
    wants_targets = any(
        position[f.name] - 3 >= n_feat
        for f in schema
        if f.name in position and f.name not in ("firm_id", "origin_q", "split")
    )

    def batches() -> Iterator[pa.RecordBatch]:
        for keys, feats, number, (lo, hi) in _feature_blocks(wh, split, chunks, items, imputed):
            n = keys.num_rows
            targ = np.full((n, n_targ if wants_targets else 0), np.nan, dtype=np.float32)
            if wants_targets:
                _fill_targets(wh, split, number, lo, hi, targ)
            batch = _tabular_batch(schema, split, keys, feats, targ, position, n_feat)
            yield from _rebatch(iter([batch]), batch_size)

    return pa.RecordBatchReader.from_batches(schema, batches())


def _tabular_batch(
    schema: pa.Schema,
    split: str,
    keys: pa.Table,
    feats: np.ndarray,
    targ: np.ndarray,
    position: dict[str, int],
    n_feat: int,
) -> pa.RecordBatch:
    """A block's rows in `schema`: its keys, the split's name, and each feature or target
    column (`position`: its place among the keys, features and targets) as float32."""
    n = keys.num_rows
    arrays = []
    for field in schema:
        name = field.name
        if name == "firm_id":
            arrays.append(keys.column("firm_id").combine_chunks())
        elif name == "origin_q":
            arrays.append(keys.column("origin_q").combine_chunks())
        elif name == "split":
            arrays.append(pa.array([split] * n, pa.string()))
        else:
            j = position[name] - 3
            col = feats[:, j] if j < n_feat else targ[:, j - n_feat]
            arrays.append(pa.array(col, pa.float32(), from_pandas=True))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _selected(schema: pa.Schema, columns: list[str]) -> pa.Schema:
    """The tabular schema cut to `columns`, the keys first; an unknown column is refused."""
    unknown = [c for c in columns if schema.get_field_index(c) < 0]
    if unknown:
        raise UserError(f"Unknown tabular column(s): {', '.join(unknown[:5])}")
    keep = ["firm_id", "origin_q", "split"] + [
        c for c in columns if c not in ("firm_id", "origin_q", "split")
    ]
    return pa.schema([schema.field(c) for c in keep])


def _fill_targets(
    wh: Warehouse, split: str, number: str, lo: int, hi: int, targ: np.ndarray
) -> None:
    """Write the block's realized targets into `targ` (a row per origin of the block,
    numbered by `number`'s CTE o; a column per item and horizon)."""
    t = wh.arrow(
        number + "SELECT o.r, t.item_id, t.horizon, t.actual "
        f"FROM panel.tabular_target_rows({int(lo)}, {int(hi)}) AS t "
        "JOIN o USING (firm_id, origin_q)",
        [split],
    )
    tr = t.column("r").to_numpy()
    tcol = (t.column("item_id").to_numpy().astype(np.int64) - 1) * N_HORIZONS + (
        t.column("horizon").to_numpy().astype(np.int64) - 1
    )
    targ[tr, tcol] = t.column("actual").to_numpy()
