"""The tabular view as numpy arrays: what every tabular competitor fits on.

Models never open the warehouse. The orchestration layer hands them the Arrow record
batches of `proforma.app.model_inputs.views.tabular_reader` (docs/contracts.md); this module turns those
batches into one float32 feature matrix (NaN = missing) and one target cube
`Y[row, item, horizon-1]`, and turns predictions back into the forecast Arrow schema.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pyarrow as pa

from proforma.contracts import ROOT
from proforma.contracts.forecasts import FORECAST_SCHEMA

KEY_COLUMNS = ("firm_id", "origin_q", "split")
N_HORIZONS = 20
N_FEATURES = 985
_TARGET = re.compile(r"^(?P<item>.+)_t(?P<h>[0-9]+)$")


@lru_cache(maxsize=1)
def item_names() -> tuple[str, ...]:
    """The 78 items in item_id order (item_id = position + 1), from reference/items.csv."""
    with open(ROOT / "reference" / "items.csv", newline="") as fh:
        return tuple(row["item"] for row in csv.DictReader(fh))


def item_id(name: str) -> int:
    return item_names().index(name) + 1


def feature_columns(items: Sequence[str] | None = None) -> list[str]:
    """The 985 feature names in the contract's order."""
    items = items or item_names()
    cols = [f"{it}_level_{k}" for it in items for k in range(4)]
    cols += [f"{it}_yoy_{k}" for it in items for k in range(8)]
    cols.append("scale_level_0")
    cols += [f"indff48_{k}" for k in range(1, 49)]
    return cols


def target_columns(items: Sequence[str] | None = None) -> list[str]:
    items = items or item_names()
    return [f"{it}_t{h}" for it in items for h in range(1, N_HORIZONS + 1)]


@dataclass
class TabularData:
    """Rows of the tabular view: keys, features X (n, p) and targets Y (n, items, 20)."""

    firm_id: np.ndarray
    origin_q: np.ndarray
    split: np.ndarray
    X: np.ndarray
    Y: np.ndarray
    features: list[str]
    items: tuple[str, ...] = field(default_factory=item_names)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    def rows(self, mask: np.ndarray) -> TabularData:
        return TabularData(
            self.firm_id[mask],
            self.origin_q[mask],
            self.split[mask],
            self.X[mask],
            self.Y[mask],
            self.features,
            self.items,
        )

    @staticmethod
    def concat(*parts: TabularData) -> TabularData:
        first = parts[0]
        return TabularData(
            np.concatenate([p.firm_id for p in parts]),
            np.concatenate([p.origin_q for p in parts]),
            np.concatenate([p.split for p in parts]),
            np.concatenate([p.X for p in parts]),
            np.concatenate([p.Y for p in parts]),
            first.features,
            first.items,
        )

    def of_split(self, *splits: str) -> TabularData:
        return self.rows(np.isin(self.split, list(splits)))

    def target(self, item: str | int, horizon: int) -> np.ndarray:
        i = item if isinstance(item, int) else self.items.index(item)
        return self.Y[:, i, horizon - 1]

    def subsample(self, n: int | None, seed: int = 0) -> TabularData:
        """At most n rows, drawn without replacement (reproducibly); all rows when n is None."""
        if n is None or self.n <= n:
            return self
        keep = np.sort(np.random.default_rng(seed).choice(self.n, size=n, replace=False))
        return self.rows(keep)

    def fingerprint(self) -> str:
        """A short hash of the rows' keys and values: fits are reused only on the same data."""
        h = hashlib.sha256()
        for a in (self.firm_id, self.origin_q, self.X, self.Y):
            h.update(np.ascontiguousarray(a).tobytes())
        h.update("|".join(self.features).encode())
        return h.hexdigest()[:16]


def from_batches(
    batches: Iterable[pa.RecordBatch] | pa.RecordBatchReader | pa.Table,
) -> TabularData:
    """Collect tabular-view batches into numpy (features float32 with NaN for NULL)."""
    if isinstance(batches, pa.Table):
        batches = batches.to_batches()
    items = item_names()
    keys: dict[str, list[np.ndarray]] = {k: [] for k in KEY_COLUMNS}
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    features: list[str] | None = None
    for batch in batches:
        if features is None:
            features = _check_schema(batch.schema, items)
            tcols = target_columns(items)
        if batch.num_rows == 0:
            continue
        keys["firm_id"].append(batch.column("firm_id").to_numpy().astype(np.int32))
        keys["origin_q"].append(batch.column("origin_q").to_numpy().astype(np.int32))
        keys["split"].append(np.asarray(batch.column("split").to_pylist(), dtype=object))
        xs.append(_matrix(batch, features))
        ys.append(_matrix(batch, tcols).reshape(batch.num_rows, len(items), N_HORIZONS))
    if features is None:
        features = feature_columns(items)
    if not xs:
        return TabularData(
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
            np.zeros(0, object),
            np.zeros((0, len(features)), np.float32),
            np.zeros((0, len(items), N_HORIZONS), np.float32),
            features,
            items,
        )
    return TabularData(
        np.concatenate(keys["firm_id"]),
        np.concatenate(keys["origin_q"]),
        np.concatenate(keys["split"]),
        np.concatenate(xs),
        np.concatenate(ys),
        features,
        items,
    )


def _check_schema(schema: pa.Schema, items: Sequence[str]) -> list[str]:
    names = set(schema.names)
    missing = [c for c in KEY_COLUMNS if c not in names]
    missing += [c for c in target_columns(items) if c not in names]
    if missing:
        raise ValueError(f"tabular batches lack {len(missing)} column(s), e.g. {missing[:3]}")
    features = [c for c in schema.names if c not in KEY_COLUMNS and not _TARGET.match(c)]
    if len(features) != N_FEATURES:
        raise ValueError(
            f"tabular batches hold {len(features)} feature columns, expected {N_FEATURES}"
        )
    return features


def _matrix(batch: pa.RecordBatch, columns: Sequence[str]) -> np.ndarray:
    out = np.empty((batch.num_rows, len(columns)), dtype=np.float32)
    for j, c in enumerate(columns):
        col = batch.column(c)
        out[:, j] = col.cast(pa.float32()).to_numpy(zero_copy_only=False)  # NULL -> NaN
    return out


def to_table(data: TabularData) -> pa.Table:
    """The inverse of from_batches (used by the imputation writer and by tests)."""
    cols: dict[str, pa.Array] = {
        "firm_id": pa.array(data.firm_id, pa.int32()),
        "origin_q": pa.array(data.origin_q, pa.int32()),
        "split": pa.array(data.split.tolist(), pa.string()),
    }
    for j, c in enumerate(data.features):
        cols[c] = pa.array(data.X[:, j], pa.float32(), from_pandas=True)
    flat = data.Y.reshape(data.n, -1)
    for j, c in enumerate(target_columns(data.items)):
        cols[c] = pa.array(flat[:, j], pa.float32(), from_pandas=True)
    return pa.table(cols)


def forecast_batches(
    firm_id: np.ndarray,
    origin_q: np.ndarray,
    item_ids: Sequence[int],
    mu: np.ndarray,
    sigma: np.ndarray | None = None,
    *,
    component: int = 0,
    keep: np.ndarray | None = None,
    rows_per_batch: int = 4096,
) -> Iterator[pa.RecordBatch]:
    """Long-format forecast batches from mu[row, item_index, horizon-1] (NaN = no forecast).

    `keep` (same shape as mu) restricts output to chosen cells, e.g. those with a
    realized target: only those can ever be scored.
    """
    n, _, n_h = mu.shape
    ids = np.asarray(item_ids, dtype=np.int16)
    horizons = np.arange(1, n_h + 1, dtype=np.int8)
    for lo in range(0, n, rows_per_batch):
        m = mu[lo : lo + rows_per_batch]
        ok = np.isfinite(m)
        if keep is not None:
            ok &= keep[lo : lo + rows_per_batch]
        r, i, h = np.nonzero(ok)
        if r.size == 0:
            continue
        s = None
        if sigma is not None:
            s = pa.array(sigma[lo : lo + rows_per_batch][r, i, h].astype(np.float64))
        else:
            s = pa.nulls(r.size, pa.float64())
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(firm_id[lo + r].astype(np.int32)),
                pa.array(origin_q[lo + r].astype(np.int32)),
                pa.array(ids[i]),
                pa.array(horizons[h]),
                pa.array(np.full(r.size, component, dtype=np.int16)),
                pa.array(m[r, i, h].astype(np.float64)),
                s,
            ],
            schema=FORECAST_SCHEMA,
        )
