"""The factor-imputed tabular view, stored once as `panel.tabular_imputed`.

Every tabular competitor (elastic net, random forest, FFNNs, chained GBM) and, under the
`published` rules, the seasonal random walk read the same imputed features (the paper's
"Competitor specifications"): the tabular view with its missing feature cells filled by
the 10-factor local-XS model of models/baselines/imputation.py, fit one calendar quarter
(origin_q) at a time over the levels, year-over-year changes and scale_level_0 in the
published release's column order. The table has exactly the tabular view's columns and
types; observed cells, the industry dummies and the targets are copied unchanged. `app.views.tabular_reader(..., imputed=True)` reads it.

Quarters are imputed as they complete, gathered into blocks of whole quarters (at least
BLOCK_ROWS rows): each block is converted to numpy once, imputed quarter by quarter, and
written with one INSERT. (Writing each quarter separately cost ~0.3 s per INSERT of
~2,500 columns: 213 quarters took longer than the imputation itself.) When the view
streams in origin_q order at most one block is held in memory; otherwise a split's
quarters are flushed at its end.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import time
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from app.errors import UserError
from app.reference import imputation_columns
from app.warehouse import Warehouse
from models.baselines.data import SPLITS
from models.baselines.fanout import Tracker
from models.baselines.imputation import ImputationConfig, impute_matrix

TABLE = "panel.tabular_imputed"
#: Rows gathered before one block is imputed and written (whole quarters; ~16k rows of the
#: ~2,500-column view is ~170 MB of Arrow data plus its float64 feature matrix).
BLOCK_ROWS = 16_384


def _quarters(reader: pa.RecordBatchReader) -> Iterator[pa.Table]:
    """Group a stream of batches into one table per origin_q, each as soon as it is whole."""
    pending: dict[int, list[pa.RecordBatch]] = {}
    floor: int | None = None  # highest origin_q seen so far
    ordered = True  # stays True while the stream never goes back to an earlier quarter
    for batch in reader:
        if batch.num_rows == 0:
            continue
        q = batch.column("origin_q").to_numpy()
        lo = int(q.min())
        if floor is not None and lo < floor:
            ordered = False  # unsorted stream: hold everything until its end
        floor = max(int(q.max()), floor if floor is not None else lo)
        for value in np.unique(q):
            pending.setdefault(int(value), []).append(batch.filter(pa.array(q == value)))
        if ordered:
            for done in sorted(k for k in pending if k < lo):
                yield pa.Table.from_batches(pending.pop(done))
    for k in sorted(pending):
        yield pa.Table.from_batches(pending.pop(k))


def _blocks(tables: Iterator[pa.Table], min_rows: int) -> Iterator[tuple[pa.Table, int]]:
    """Concatenate whole-quarter tables into blocks of at least min_rows rows (the last may
    be smaller); yields (block, number of quarters in it)."""
    pending: list[pa.Table] = []
    rows = 0
    for table in tables:
        pending.append(table)
        rows += table.num_rows
        if rows >= min_rows:
            yield pa.concat_tables(pending), len(pending)
            pending, rows = [], 0
    if pending:
        yield pa.concat_tables(pending), len(pending)


def impute_table(table: pa.Table, config: ImputationConfig) -> tuple[pa.Table, int]:
    """Rows of one or more quarters with the missing feature cells filled, each calendar
    quarter (origin_q) imputed on its own over the imputation columns (levels, yoy
    changes, scale_level_0; never the industry dummies); a quarter with fewer than
    n_factors + 1 rows keeps its gaps. Returns (table, cells filled)."""
    features = [c for c in imputation_columns() if c in table.column_names]
    X = np.empty((table.num_rows, len(features)), dtype=np.float64, order="F")
    for j, c in enumerate(features):
        X[:, j] = table.column(c).cast(pa.float64()).to_numpy(zero_copy_only=False)
    missing = np.isnan(X)
    if not missing.any():
        return table, 0
    quarters = table.column("origin_q").to_numpy()
    filled = X.copy(order="F")  # observed cells keep their exact value; only missing ones are set
    imputed = np.zeros_like(missing)
    for q in np.unique(quarters):
        rows = np.nonzero(quarters == q)[0]
        gaps = missing[rows]
        if rows.size >= config.min_rows and gaps.any():
            part = filled[rows]
            part[gaps] = impute_matrix(X[rows], config)[gaps]
            filled[rows] = part
            imputed[rows] = gaps
    position = {c: j for j, c in enumerate(features)}
    changed = set(np.nonzero(imputed.any(axis=0))[0].tolist())
    columns = []
    for field, col in zip(table.schema, table.columns, strict=True):
        j = position.get(field.name)
        if j is not None and j in changed:
            col = pa.array(filled[:, j]).cast(field.type)
        columns.append(col)
    table = pa.Table.from_arrays(columns, schema=table.schema)
    return table, int(imputed.sum())


def build_imputed(
    wh: Warehouse,
    config: ImputationConfig | None = None,
    *,
    batch_size: int = 8192,
    tracker: Tracker | None = None,
    block_rows: int = BLOCK_ROWS,
) -> dict:
    """(Re)write panel.tabular_imputed from the tabular view; all or nothing."""
    from app.views import tabular_reader

    config = config or ImputationConfig()
    tracker = tracker or Tracker()
    if not wh.table_exists("meta.imputations"):
        raise UserError("The warehouse lacks meta.imputations: run `proforma migrate` first.")
    build_id = _latest_build(wh)
    t0 = time.perf_counter()
    rows = quarters = filled = 0
    first = True
    reader_wh = wh.cursor()
    try:
        with wh.transaction():
            for split in SPLITS:
                advance = tracker.stage(f"impute {split}", 0)
                reader = tabular_reader(reader_wh, split, batch_size, imputed=False)
                for table, n_quarters in _blocks(_quarters(reader), block_rows):
                    table, n = impute_table(table, config)
                    wh.write_arrow(TABLE, table, mode="replace" if first else "append")
                    first = False
                    rows += table.num_rows
                    quarters += n_quarters
                    filled += n
                    advance(n_quarters)
            if first:
                raise UserError("The tabular view is empty: run `proforma build` first.")
            elapsed = time.perf_counter() - t0
            wh.execute(
                "INSERT INTO meta.imputations (build_id, config, rows, quarters, cells_filled, "
                "elapsed_s, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [build_id, json.dumps(dataclasses.asdict(config)), rows, quarters, filled, elapsed,
                 dt.datetime.now(dt.UTC).replace(tzinfo=None)],
            )
    finally:
        reader_wh.close()
    imputation_id = wh.scalar("SELECT max(imputation_id) FROM meta.imputations")
    return {"imputation_id": imputation_id, "build_id": build_id, "rows": rows, "quarters": quarters,
            "cells_filled": filled, "elapsed_s": elapsed}


def current_imputation(wh: Warehouse) -> int | None:
    """The imputation of the latest build, when panel.tabular_imputed holds it."""
    if not (wh.table_exists(TABLE) and wh.table_exists("meta.imputations")):
        return None
    build_id = _latest_build(wh)
    row = wh.fetchone(
        "SELECT imputation_id, build_id FROM meta.imputations ORDER BY imputation_id DESC LIMIT 1"
    )
    if row is None or row[1] != build_id:
        return None
    return int(row[0])


def _latest_build(wh: Warehouse) -> int | None:
    if not wh.table_exists("meta.builds"):
        return None
    return wh.scalar("SELECT max(build_id) FROM meta.builds WHERE status = 'succeeded'")
