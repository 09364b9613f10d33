"""The oracle: futures simulated from the true latent state at sampled test origins.

Origins come from proforma.app.sources.synthetic.origins. `path_batches` simulates M paths of H
quarters per origin with the same `step` as the history (fresh shocks, fresh macro futures), one vectorized lane per (origin, path),
and yields raw.oracle_paths rows in dollars (quarterly flows, one float32 column per item
of the 78). Horizon 0
holds the origin's own true values (path 0 only). Standardizing and scoring the paths is
the warehouse's side: proforma.app.flows.oracle.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from proforma.app.sources.synthetic import economics as econ
from proforma.app.sources.synthetic.firms import take
from proforma.app.sources.synthetic.items import derived_values, items

if TYPE_CHECKING:
    from proforma.app.sources.synthetic.simulation import Simulation

PATHS_SCHEMA = pa.schema(
    [
        pa.field("origin_id", pa.int32(), nullable=False),
        pa.field("horizon", pa.int8(), nullable=False),
        pa.field("path", pa.int16(), nullable=False),
    ]
    + [pa.field(it.item, pa.float32()) for it in items()]
)
ORIGIN_STATE = ("s", "g", "gm", "sga", "e_rev")


def origins_table(sim: Simulation) -> pa.Table:
    cap = sim.ensure_captured()
    st = cap["state"]
    k = sim.origin_q.size
    cols: dict[str, Any] = {
        "origin_id": pa.array(np.arange(k, dtype=np.int32)),
        "gvkey": pa.array(sim.gvkeys[sim.origin_firm], type=pa.string()),
        "origin_q": pa.array(sim.origin_q.astype(np.int32)),
        "paths": pa.array(np.full(k, sim.cfg.oracle_paths, dtype=np.int16)),
        "horizons": pa.array(np.full(k, sim.cfg.oracle_horizon, dtype=np.int8)),
    }
    for name in ORIGIN_STATE:
        cols[name] = pa.array(np.asarray(st[name], dtype=np.float64))
    cols["m"] = pa.array(sim.macro(sim.origin_q).astype(np.float64))
    return pa.table(cols)


def _item_matrix(values: dict[str, np.ndarray]) -> np.ndarray:
    """lanes x 78 in item_id order, derived items computed as the build does."""
    full = dict(values)
    full.update(derived_values(values))
    return np.stack([full[it.item] for it in items()], axis=1)


def _rows(origin: np.ndarray, horizon: int, path: np.ndarray, mat: np.ndarray) -> pa.RecordBatch:
    head = [
        pa.array(origin.astype(np.int32)),
        pa.array(np.full(origin.size, horizon, dtype=np.int8)),
        pa.array(path.astype(np.int16)),
    ]
    cols = [pa.array(mat[:, j].astype(np.float32)) for j in range(mat.shape[1])]
    return pa.RecordBatch.from_arrays(head + cols, schema=PATHS_SCHEMA)


def path_batches(sim: Simulation) -> Iterator[pa.RecordBatch]:
    """raw.oracle_paths rows: horizon 0 (true origin values), then M paths x H quarters;
    the sampled origins first, then a grown panel's frontier origins, one quarter at a time
    with its own stream ([seed, 47, quarter]), so the sampled origins' paths are the same
    with or without a frontier."""
    cfg = sim.cfg
    cap = sim.ensure_captured()
    k = sim.origin_q.size
    if k == 0:
        yield pa.RecordBatch.from_pylist([], schema=PATHS_SCHEMA)
        return
    yield _rows(np.arange(k), 0, np.zeros(k, dtype=np.int64), _item_matrix(cap["values"]))
    yield from _paths(sim, cap, np.arange(sim.n_sampled), sim.oracle_rng())
    for q in np.unique(sim.origin_q[sim.n_sampled :]):
        group = sim.n_sampled + np.flatnonzero(sim.origin_q[sim.n_sampled :] == q)
        yield from _paths(sim, cap, group, np.random.default_rng([cfg.seed, 47, int(q)]))


def _paths(
    sim: Simulation, cap: dict[str, econ.State], origins: np.ndarray, rng: np.random.Generator
) -> Iterator[pa.RecordBatch]:
    cfg = sim.cfg
    if origins.size == 0:
        return
    m_paths = cfg.oracle_paths
    lane_origin = np.repeat(origins, m_paths)
    lane_path = np.tile(np.arange(m_paths), origins.size)
    tr = take(sim.traits, sim.origin_firm[lane_origin])
    st = econ.take(cap["state"], lane_origin)
    q = sim.origin_q[lane_origin]
    m1, m = sim.macro(q - 1), sim.macro(q)
    for h in range(1, cfg.oracle_horizon + 1):
        m, m1 = econ.macro_step(m, m1, rng), m
        values = econ.step(tr, st, (q + h) % 4, (q + h) // 4, m, rng)
        yield _rows(lane_origin, h, lane_path, _item_matrix(values))
