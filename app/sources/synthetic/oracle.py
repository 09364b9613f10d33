"""The oracle: futures simulated from the true latent state at sampled test origins.

`sample_origins` picks test firm-quarters that the build will keep (non-financial,
inside a CCM link window, at least four quarters of history, one future quarter left).
`path_batches` simulates M paths of H quarters per origin with the same `step` as the
history (fresh shocks, fresh macro futures), one vectorized lane per (origin, path),
and yields raw.oracle_paths rows in dollars (quarterly flows, one float32 column per item
of the 78). Horizon 0
holds the origin's own true values (path 0 only). `oracle_forecasts` standardizes the
paths with each origin's frozen parameters (sql/oracle) and `submit_oracle` scores them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from app.errors import UserError
from app.sources.synthetic import economics as econ
from app.sources.synthetic.config import TEST_START_YEAR, SyntheticConfig
from app.sources.synthetic.firms import Traits, take
from app.sources.synthetic.items import derived_values, items
from app.sources.synthetic.reporting import in_link_window
from app.warehouse import Warehouse

if TYPE_CHECKING:
    from app.sources.synthetic.simulation import Simulation

PATHS_SCHEMA = pa.schema(
    [
        pa.field("origin_id", pa.int32(), nullable=False),
        pa.field("horizon", pa.int8(), nullable=False),
        pa.field("path", pa.int16(), nullable=False),
    ]
    + [pa.field(it.item, pa.float32()) for it in items()]
)
ORIGIN_STATE = ("s", "g", "gm", "sga", "e_rev")


def sample_origins(
    cfg: SyntheticConfig, tr: Traits, links: dict[str, np.ndarray], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(firm index, origin quarter) of cfg.oracle_origins test origins, sorted, no repeats."""
    lo = np.maximum(tr["entry_q"] + 3, max(TEST_START_YEAR * 4, cfg.q_start))
    hi = np.minimum(tr["exit_q"], cfg.q_end - 1)
    financial = (tr["sic"] >= 6000) & (tr["sic"] <= 6999) & ~tr["sic_missing"]
    count = np.where(financial, 0, np.maximum(hi - lo + 1, 0))
    firm = np.repeat(np.arange(count.size), count)
    q = lo[firm] + (np.arange(firm.size) - np.repeat(np.cumsum(count) - count, count))
    keep = in_link_window(links, firm, q)
    firm, q = firm[keep], q[keep]
    k = min(cfg.oracle_origins, firm.size)
    pick = np.sort(rng.choice(firm.size, size=k, replace=False)) if k else np.array([], dtype=np.int64)
    return firm[pick].astype(np.int64), q[pick].astype(np.int64)


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
    """raw.oracle_paths rows: horizon 0 (true origin values), then M paths x H quarters."""
    cfg = sim.cfg
    cap = sim.ensure_captured()
    k = sim.origin_q.size
    if k == 0:
        yield pa.RecordBatch.from_pylist([], schema=PATHS_SCHEMA)
        return
    yield _rows(np.arange(k), 0, np.zeros(k, dtype=np.int64), _item_matrix(cap["values"]))
    m_paths = cfg.oracle_paths
    lane_origin = np.repeat(np.arange(k), m_paths)
    lane_path = np.tile(np.arange(m_paths), k)
    tr = take(sim.traits, sim.origin_firm[lane_origin])
    st = econ.take(cap["state"], lane_origin)
    q = sim.origin_q[lane_origin]
    m1, m = sim.macro(q - 1), sim.macro(q)
    rng = sim.oracle_rng()
    for h in range(1, cfg.oracle_horizon + 1):
        m, m1 = econ.macro_step(m, m1, rng), m
        values = econ.step(tr, st, (q + h) % 4, (q + h) // 4, m, rng)
        yield _rows(lane_origin, h, lane_path, _item_matrix(values))


# ---- standardize and submit ----------------------------------------------------------------
def _require(wh: Warehouse, tables: list[str], hint: str) -> None:
    missing = [t for t in tables if not wh.table_exists(t)]
    if missing:
        raise UserError(f"Missing {', '.join(missing)}: {hint}")


def check_oracle_source(wh: Warehouse) -> dict[str, Any]:
    """The oracle paths must come from the current raw data (the latest ingest)."""
    _require(wh, ["raw.oracle_paths", "raw.oracle_origins", "raw.oracle_meta"], "run `proforma migrate`.")
    latest = wh.fetchone("SELECT source, parameters FROM raw.ingests ORDER BY ingest_id DESC LIMIT 1")
    meta = wh.fetchone("SELECT parameters FROM raw.oracle_meta LIMIT 1")
    if latest is None or latest[0] != "synthetic" or meta is None:
        raise UserError(
            "The oracle exists only for synthetic data: run `proforma ingest synthetic` "
            "(and `proforma build`) first."
        )
    if json.loads(latest[1]) != json.loads(meta[0]):
        raise UserError("raw.oracle_paths belong to an older ingest; re-run `proforma ingest synthetic`.")
    if not wh.scalar("SELECT count(*) FROM raw.oracle_paths WHERE horizon > 0"):
        raise UserError("This synthetic ingest has no oracle origins (--oracle-origins 0).")
    return json.loads(meta[0])


def oracle_forecasts(wh: Warehouse) -> pa.Table:
    """Mean and spread of the standardized oracle paths per (firm, origin, item, horizon)."""
    _require(
        wh,
        ["panel.firms", "panel.origins", "panel.item_k", "panel.origin_params"],
        "run `proforma build` first.",
    )
    return wh.query_step("oracle/010_standardize_paths")


def submit_oracle(wh: Warehouse, name: str = "oracle") -> tuple[int, int]:
    """Score the oracle like any model; returns (submission_id, rows)."""
    params = check_oracle_source(wh)
    table = oracle_forecasts(wh)
    if table.num_rows == 0:
        raise UserError(
            "No oracle origin matches an eligible origin of the current build "
            "(was the build run on this synthetic ingest?)."
        )
    from app.scoring import ingest_forecasts  # written by the scoring part

    submission_id = ingest_forecasts(
        wh,
        name,
        table.to_batches(max_chunksize=131_072),
        family="gaussian",
        source="model",
        metadata={
            "model": "oracle",
            "description": "mean of standardized simulated futures from the true latent state",
            "synthetic": params,
        },
    )
    return submission_id, table.num_rows
