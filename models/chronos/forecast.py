"""Chronos-2 forecasts of a list of origin contexts: 21 quantiles per target cell.

Each origin is one task of the pipeline (its items one multivariate group; no
cross-learning between origins). The pipeline returns, per origin, its model's native
quantile forecast for every series of the group; we keep the targets (items reported at the
origin) and the 21 benchmark levels. Chronos-2's quantile heads are trained jointly but
not constrained to be ordered, so a forecast's quantiles can cross; they are sorted per
cell (the monotone rearrangement, which never increases the quantile loss), so every
cell carries a valid, non-decreasing quantile function. Values stay in reported units:
the warehouse maps them into benchmark space with the origin-frozen monotone transform
(`ingest_forecasts(..., space="dollars")`), which keeps them ordered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.models.chronos import CELL_SCHEMA, HORIZONS, QUANTILE_LEVELS, QUANTILE_SCHEMA
from proforma.models.chronos.context import OriginContext


@dataclass
class ForecastStats:
    """What a run repaired or left out, for the submission's metadata."""

    origins: int = 0
    cells: int = 0
    crossed_cells: int = 0  # cells whose raw quantiles were not in order (sorted)
    non_finite_cells: int = 0  # cells with a NaN or infinite quantile (left out)
    skipped_origins: int = 0  # origins with no item reported at the origin
    extra: dict[str, Any] = field(default_factory=dict)

    def add(self, other: ForecastStats) -> None:
        for name in ("origins", "cells", "crossed_cells", "non_finite_cells", "skipped_origins"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, int]:
        return {
            "origins": self.origins,
            "cells": self.cells,
            "crossed_cells": self.crossed_cells,
            "non_finite_cells": self.non_finite_cells,
            "skipped_origins": self.skipped_origins,
        }


def level_indices(
    model_levels: Sequence[float], wanted: Sequence[float] = QUANTILE_LEVELS
) -> list[int]:
    """Positions of the wanted levels in the model's native grid; ValueError when one is missing."""
    model = np.asarray(model_levels, dtype=np.float64)
    out = []
    for q in wanted:
        hit = np.flatnonzero(np.abs(model - q) < 1e-9)
        if hit.size == 0:
            raise ValueError(f"the model's quantile levels {list(model_levels)} lack {q}")
        out.append(int(hit[0]))
    return out


def monotone(quantiles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quantiles sorted along the last axis, and which cells were out of order."""
    crossed = np.asarray((np.diff(quantiles, axis=-1) < 0).any(axis=-1))
    return np.sort(quantiles, axis=-1), crossed


def quantile_cells(
    contexts: Sequence[OriginContext], predictions: Sequence[np.ndarray], indices: Sequence[int]
) -> tuple[pa.Table, ForecastStats]:
    """CELL_SCHEMA rows from the pipeline's per-origin predictions [n_series, n_levels, >=20]:
    the targets' cells with finite quantiles, sorted per cell."""
    stats = ForecastStats()
    n_q = len(QUANTILE_LEVELS)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in CELL_SCHEMA.names}
    for ctx, pred in zip(contexts, predictions, strict=True):
        stats.origins += 1
        if ctx.n_targets == 0:
            stats.skipped_origins += 1
            continue
        # [targets, horizons, levels]
        q = np.asarray(pred, dtype=np.float32)[: ctx.n_targets][:, indices, :HORIZONS]
        q = q.transpose(0, 2, 1)
        finite = np.isfinite(q).all(axis=-1)
        q, crossed = monotone(q)
        stats.crossed_cells += int((crossed & finite).sum())
        stats.non_finite_cells += int((~finite).sum())
        item_idx, h_idx = np.nonzero(finite)
        n = item_idx.size
        stats.cells += n
        parts["firm_id"].append(np.full(n, ctx.firm_id, np.int32))
        parts["origin_q"].append(np.full(n, ctx.origin_q, np.int32))
        parts["item_id"].append(ctx.item_ids[item_idx].astype(np.int16))
        parts["horizon"].append((h_idx + 1).astype(np.int8))
        parts["quantiles"].append(q[item_idx, h_idx].reshape(-1))
    arrays = [
        pa.array(np.concatenate(parts[f.name]) if parts[f.name] else [], f.type)
        for f in CELL_SCHEMA
        if f.name != "quantiles"
    ]
    values = np.concatenate(parts["quantiles"]) if parts["quantiles"] else np.zeros(0, np.float32)
    arrays.append(pa.FixedSizeListArray.from_arrays(pa.array(values, pa.float32()), n_q))
    return pa.Table.from_arrays(arrays, schema=CELL_SCHEMA), stats


def long_form(cells: pa.RecordBatch | pa.Table) -> pa.Table:
    """QUANTILE_SCHEMA rows (one per cell and level, in level order) of CELL_SCHEMA rows."""
    n_q = len(QUANTILE_LEVELS)
    repeat = pa.array(np.repeat(np.arange(cells.num_rows), n_q))
    arrays = [
        cells.column(name).take(repeat) for name in ("firm_id", "origin_q", "item_id", "horizon")
    ]
    arrays.append(pa.array(np.tile(np.asarray(QUANTILE_LEVELS, np.float64), cells.num_rows)))
    quantiles = cells.column("quantiles")
    if isinstance(quantiles, pa.ChunkedArray):
        quantiles = quantiles.combine_chunks()
    arrays.append(pa.array(quantiles.flatten().to_numpy(zero_copy_only=False).astype(np.float64)))
    return pa.Table.from_arrays(arrays, schema=QUANTILE_SCHEMA)


def forecast_origins(
    pipeline: Any, contexts: Sequence[OriginContext], *, batch_size: int = 1024
) -> tuple[pa.Table, ForecastStats]:
    """Chronos-2 quantile forecasts (reported units) of the contexts' target items, as
    CELL_SCHEMA rows (`long_form` gives the quantile-submission rows).

    `pipeline` is a `chronos.Chronos2Pipeline`; `batch_size` counts series (items) per
    forward pass, as the pipeline does. Origins without a target are skipped.
    """
    indices = level_indices(pipeline.quantiles)
    usable = [c for c in contexts if c.n_targets > 0]
    predictions: dict[tuple[int, int], np.ndarray] = {}
    if usable:
        out = pipeline.predict(
            [c.values for c in usable], prediction_length=HORIZONS, batch_size=batch_size
        )
        for ctx, pred in zip(usable, out, strict=True):
            predictions[(ctx.firm_id, ctx.origin_q)] = pred.float().numpy()
    empty = np.zeros((0, len(pipeline.quantiles), HORIZONS))
    preds = [predictions.get((c.firm_id, c.origin_q), empty) for c in contexts]
    return quantile_cells(contexts, preds, indices)
