"""The factor imputation of the tabular view, stored once as its filled cells.

Every tabular competitor (elastic net, random forest, FFNNs, chained GBM), the published
seasonal random walk and the proforma20q export read the same imputed features (the
paper's "Competitor specifications"): the tabular view with its missing feature cells
filled by the 10-factor local-XS model of models/baselines/imputation.py, fit one
calendar quarter (origin_q) at a time over scale_level_0 and the levels and
year-over-year changes in the published release's column order; quarters with fewer than
n_factors + 1 firms are not imputed. Observed cells, the industry dummies and the targets
are never changed, so only the filled cells are stored:

    panel.tabular_imputed_cells(firm_id INTEGER, origin_q INTEGER, feature SMALLINT, value FLOAT)

`feature` is the column's index in the tabular view's feature order
(proforma.app.model_inputs.views.feature_columns), and proforma.app.model_inputs.views.tabular_reader(..., imputed=True) lays these
cells over the view. (A second copy of the 2,545-column view cost more to write than the
imputation itself, and 3 GB.) Quarters are read in whole-quarter chunks as dense matrices
(proforma.app.model_inputs.views.feature_matrices: the view's Arrow columns and the way back to numpy took a
third of the run); two quarters are imputed at a time (LAPACK and BLAS release the GIL),
and the fills of each chunk are appended in one write.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypedDict

import numpy as np
import pyarrow as pa

from proforma.app.store.reference import imputation_columns
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.panel import SPLITS
from proforma.contracts.provenance import utcnow
from proforma.models.baselines.fanout import Tracker
from proforma.models.baselines.imputation import ImputationConfig, impute_matrix
from proforma.models.numerics import one_blas_thread

TABLE = "panel.tabular_imputed_cells"
STAGING = "panel.tabular_imputed_cells_staging"
#: Fills gathered before one INSERT (about 14 MB of Arrow data).
WRITE_ROWS = 1_000_000
#: Origins per read of the tabular view (whole quarters): bounds the memory of a chunk.
READ_ORIGINS = 4_096
FILLS_SCHEMA = pa.schema(
    [
        ("firm_id", pa.int32()),
        ("origin_q", pa.int32()),
        ("feature", pa.int16()),
        ("value", pa.float32()),
    ]
)


def _quarter_slices(origin_q: np.ndarray) -> Iterator[slice]:
    """Row ranges of each quarter in rows sorted by origin_q."""
    cuts = np.flatnonzero(np.diff(origin_q)) + 1
    bounds = [0, *cuts.tolist(), origin_q.size]
    for lo, hi in itertools.pairwise(bounds):
        yield slice(lo, hi)


def quarter_fills(
    firm_id: np.ndarray,
    origin_q: np.ndarray,
    X: np.ndarray,
    config: ImputationConfig,
    features: np.ndarray,
) -> pa.Table:
    """The filled cells of ONE quarter's rows (empty when the quarter is too small or has no
    gap): firm_id, origin_q, feature (index in the view's feature order), value. X holds
    the quarter's imputation columns (NaN where missing), `features` their view indices."""
    if X.shape[0] < config.min_rows:
        return FILLS_SCHEMA.empty_table()
    gaps = np.isnan(X)
    if not gaps.any():
        return FILLS_SCHEMA.empty_table()
    filled = impute_matrix(X, config)
    rows, cols = np.nonzero(gaps)  # row-major order: by row, then column
    return pa.table(
        {
            "firm_id": firm_id[rows].astype(np.int32),
            "origin_q": origin_q[rows].astype(np.int32),
            "feature": features[cols],
            "value": filled[rows, cols].astype(np.float32),
        },
        schema=FILLS_SCHEMA,
    )


class Imputation(TypedDict):
    """A meta.imputations record as build_imputed reports it."""

    imputation_id: int
    build_id: int | None  # the latest successful build when it ran
    rows: int
    quarters: int
    cells_filled: int
    elapsed_s: float


def build_imputed(
    wh: Warehouse,
    config: ImputationConfig | None = None,
    *,
    tracker: Tracker | None = None,
    workers: int = 2,
) -> Imputation:
    """(Re)write panel.tabular_imputed_cells from the tabular view; all or nothing."""
    config = config or ImputationConfig()
    tracker = tracker or Tracker()
    if not wh.table_exists("meta.imputations"):
        raise UserError("The warehouse lacks meta.imputations: run `proforma migrate` first.")
    build_id = _latest_build(wh)
    features = _imputation_features(wh)
    t0 = time.perf_counter()
    rows = quarters = filled = 0
    reader_wh = wh.cursor()
    # Fills go to a staging table in autocommitted appends (DuckDB keeps a transaction's
    # uncommitted rows in memory: 363M fills took 8.6 GB at full scale), and one short
    # transaction swaps it in: all or nothing for readers, bounded memory for the run.
    wh.execute(
        f"CREATE OR REPLACE TABLE {STAGING} (firm_id INTEGER, origin_q INTEGER, "
        "feature SMALLINT, value FLOAT)"
    )
    try:
        with one_blas_thread(), ThreadPoolExecutor(max(1, workers)) as pool:
            for split in SPLITS:
                split_rows, split_quarters, split_filled = _impute_split(
                    wh, reader_wh, pool, split, features, config, tracker, workers
                )
                rows += split_rows
                quarters += split_quarters
                filled += split_filled
        if not rows:
            raise UserError("The tabular view is empty: run `proforma build` first.")
        elapsed = time.perf_counter() - t0
        _swap_in(wh, build_id, config, rows, quarters, filled, elapsed)
    finally:
        reader_wh.close()
        wh.execute(f"DROP TABLE IF EXISTS {STAGING}")
    imputation_id = wh.scalar("SELECT max(imputation_id) FROM meta.imputations")
    return {
        "imputation_id": imputation_id,
        "build_id": build_id,
        "rows": rows,
        "quarters": quarters,
        "cells_filled": filled,
        "elapsed_s": elapsed,
    }


def _swap_in(
    wh: Warehouse,
    build_id: int | None,
    config: ImputationConfig,
    rows: int,
    quarters: int,
    filled: int,
    elapsed: float,
) -> None:
    """In one short transaction, put the staging table in the imputed cells' place and
    record the imputation in meta.imputations."""
    with wh.transaction():
        wh.execute(f"DROP TABLE IF EXISTS {TABLE}")
        wh.execute(f"ALTER TABLE {STAGING} RENAME TO {TABLE.split('.')[1]}")
        wh.execute(
            "INSERT INTO meta.imputations (build_id, config, rows, quarters, cells_filled, "
            "elapsed_s, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                build_id,
                json.dumps(dataclasses.asdict(config)),
                rows,
                quarters,
                filled,
                elapsed,
                utcnow(),
            ],
        )


def _imputation_features(wh: Warehouse) -> np.ndarray:
    """The imputation's columns, in its order, as indices into the view's feature matrix."""
    from proforma.app.model_inputs.views import feature_columns, item_names

    feature_index = {c: j for j, c in enumerate(feature_columns(item_names(wh)))}
    return np.array(
        [feature_index[c] for c in imputation_columns() if c in feature_index], dtype=np.int16
    )


def _impute_split(
    wh: Warehouse,
    reader_wh: Warehouse,
    pool: ThreadPoolExecutor,
    split: str,
    features: np.ndarray,
    config: ImputationConfig,
    tracker: Tracker,
    workers: int,
) -> tuple[int, int, int]:
    """Impute a split quarter by quarter in the pool, appending the fills to the staging
    table in quarter order; returns its rows, quarters and cells filled."""
    from proforma.app.model_inputs.views import feature_matrices

    rows = quarters = 0
    advance = tracker.stage(f"impute {split}", 0)
    # a few quarters in flight; their fills are written in quarter order
    pending: deque = deque()
    batch = _FillBatch(wh, advance)
    for keys, feats in feature_matrices(reader_wh, split, chunk_origins=READ_ORIGINS):
        firm_id = keys.column("firm_id").to_numpy()
        origin_q = keys.column("origin_q").to_numpy()
        for q in _quarter_slices(origin_q):
            # float64, column-major: the layout the factor model was tuned on
            X = np.asfortranarray(feats[q][:, features], dtype=np.float64)
            rows += X.shape[0]
            quarters += 1
            pending.append(pool.submit(quarter_fills, firm_id[q], origin_q[q], X, config, features))
            while len(pending) > 2 * max(1, workers):
                batch.add(pending.popleft().result())
    while pending:
        batch.add(pending.popleft().result())
    return rows, quarters, batch.close()


class _FillBatch:
    """Fills gathered into writes of about WRITE_ROWS rows: one INSERT per quarter cost a
    third of the run in per-statement overhead."""

    def __init__(self, wh: Warehouse, advance) -> None:
        self.wh, self.advance = wh, advance
        self.tables: list[pa.Table] = []
        self.rows = self.total = 0

    def add(self, fills: pa.Table) -> None:
        self.tables.append(fills)
        self.rows += fills.num_rows
        self.advance(1)
        if self.rows >= WRITE_ROWS:
            self._write()

    def _write(self) -> None:
        if self.rows:
            self.wh.write_arrow(STAGING, pa.concat_tables(self.tables), mode="append")
        self.total += self.rows
        self.tables, self.rows = [], 0

    def close(self) -> int:
        self._write()
        return self.total


def current_imputation(wh: Warehouse) -> int | None:
    """The imputation of the latest build, when panel.tabular_imputed_cells holds it."""
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
