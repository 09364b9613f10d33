"""Chronos-2 contexts from raw windows: one multivariate group per origin.

A context is the firm's reported values on a contiguous quarter grid that starts at the
window's first reported quarter (at most 11 quarters before the origin) and ends at the
origin; a quarter an item was not reported is NaN (Chronos-2 treats NaN as missing).

Which items: every item reported anywhere in the window joins the group (it is part of
the firm's information set and Chronos-2's group attention can use it), but forecasts
are kept only for the items reported AT the origin. Those are the items the benchmark's
truth has cells for (present_in_q0); a forecast of any other item could never be
scored. Chronos-2 makes no difference between a target and a past-only covariate
(both are series of the group whose future is unknown), so this choice costs nothing.
Targets come first in the group, so a forecast's first `n_targets` rows are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import ArrayLike

from proforma.models.chronos import HISTORY


@dataclass(frozen=True)
class OriginContext:
    """One origin's group: `values[i]` is item `item_ids[i]` on quarters first_rel_q..0."""

    firm_id: int
    origin_q: int
    item_ids: np.ndarray  # int16, targets first, each part in item_id order
    n_targets: int
    values: np.ndarray  # float64 [n_items, n_quarters], NaN where not reported

    @property
    def first_rel_q(self) -> int:
        return 1 - self.values.shape[1]


def origin_context(
    firm_id: int, origin_q: int, rel_q: ArrayLike, item_id: ArrayLike, v: ArrayLike
) -> OriginContext:
    """The context of one origin from its reported tuples (rel_q in -11..0)."""
    rel_all = np.asarray(rel_q, dtype=np.int64)
    items_all = np.asarray(item_id, dtype=np.int64)
    v_all = np.asarray(v, dtype=np.float64)
    keep = np.isfinite(v_all) & (rel_all <= 0) & (rel_all > -HISTORY)
    rel_q, item_id, v = rel_all[keep], items_all[keep], v_all[keep]
    if v.size == 0:
        return OriginContext(firm_id, origin_q, np.zeros(0, np.int16), 0, np.zeros((0, 1)))
    at_origin = np.unique(item_id[rel_q == 0])
    others = np.setdiff1d(np.unique(item_id), at_origin)
    order = np.concatenate([at_origin, others])
    row = np.empty(order.max() + 1, dtype=np.int64)
    row[order] = np.arange(order.size)
    first = int(rel_q.min())
    values = np.full((order.size, 1 - first), np.nan)
    values[row[item_id], rel_q - first] = v
    return OriginContext(
        int(firm_id), int(origin_q), order.astype(np.int16), int(at_origin.size), values
    )


def contexts_from_batch(batch: pa.RecordBatch) -> list[OriginContext]:
    """The contexts of a `raw_windows` batch, in its row order."""
    firm = batch.column("firm_id").to_numpy()
    origin = batch.column("origin_q").to_numpy()
    lists = {name: batch.column(name) for name in ("rel_q", "item_id", "v")}
    offsets = lists["rel_q"].offsets.to_numpy()
    flat = {name: col.flatten().to_numpy(zero_copy_only=False) for name, col in lists.items()}
    out = []
    for r in range(batch.num_rows):
        lo, hi = offsets[r] - offsets[0], offsets[r + 1] - offsets[0]
        out.append(
            origin_context(
                firm[r], origin[r], flat["rel_q"][lo:hi], flat["item_id"][lo:hi], flat["v"][lo:hi]
            )
        )
    return out
