"""`proforma oracle`: the synthetic panel's oracle scored like any model. Its simulated
futures (raw.oracle_paths, written by the synthetic source) are standardized with each
origin's frozen parameters (sql/oracle), averaged (mu) with their spread (sigma), and
written through the common forecast path."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from proforma.app import scoring
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError


def check_oracle_source(wh: Warehouse) -> dict[str, Any]:
    """The oracle paths must come from the current raw data (the latest ingest)."""
    missing = [
        t
        for t in ("raw.oracle_paths", "raw.oracle_origins", "raw.oracle_meta")
        if not wh.table_exists(t)
    ]
    if missing:
        raise UserError(f"Missing {', '.join(missing)}: run `proforma migrate`.")
    latest = wh.fetchone(
        "SELECT source, parameters FROM raw.ingests ORDER BY ingest_id DESC LIMIT 1"
    )
    meta = wh.fetchone("SELECT parameters FROM raw.oracle_meta LIMIT 1")
    if latest is None or latest[0] != "synthetic" or meta is None:
        raise UserError(
            "The oracle exists only for synthetic data: run `proforma ingest synthetic` "
            "(and `proforma build`) first."
        )
    if json.loads(latest[1]) != json.loads(meta[0]):
        raise UserError(
            "raw.oracle_paths belong to an older ingest; re-run `proforma ingest synthetic`."
        )
    if not wh.scalar("SELECT count(*) FROM raw.oracle_paths WHERE horizon > 0"):
        raise UserError("This synthetic ingest has no oracle origins (--oracle-origins 0).")
    return json.loads(meta[0])


def oracle_forecasts(wh: Warehouse) -> pa.Table:
    """Mean and spread of the standardized oracle paths per (firm, origin, item, horizon)."""
    wh.require_panel("panel.firms", "panel.origins", "panel.item_k", "panel.origin_params")
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
    submission_id = scoring.ingest_forecasts(
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
