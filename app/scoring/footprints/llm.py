"""The `llm` footprint: the LLM protocol's pinned origin sample (docs/llm.md).

Drawn once by sql/eval/047_footprint_llm_sampler.sql and frozen as an `origins`
footprint whose rows keep the firm's gvkey, so it survives rebuilds; a new draw (other
seed or size) is a new version of the footprint.
"""

from __future__ import annotations

import json
from typing import TypedDict

from proforma.app.scoring.footprints.store import (
    SAMPLE_SEED,
    Footprint,
    drop_footprint_temp,
    footprint_definition,
    insert_footprint,
    set_cell_count,
)
from proforma.app.store.sqlfiles import sql_file
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError

LLM_FOOTPRINT = "llm"
#: The paper's sample size and this project's pinned seed.
LLM_ORIGINS = 2103
LLM_SEED = SAMPLE_SEED
MIN_BLOCK, MAX_BLOCK = 4, 20
MIN_HISTORY = 4
SAMPLER = "llm-blocks"
SAMPLER_STEP = "eval/047_footprint_llm_sampler"


def is_block_sample(footprint: Footprint) -> bool:
    """Whether a footprint record was drawn by the block sampler (not the older generic
    seeded origin sample that `llm` once was)."""
    definition = footprint_definition(footprint)
    return footprint["kind"] == "origins" and definition.get("sampler") == SAMPLER


def create_llm_footprint(
    wh: Warehouse,
    name: str = LLM_FOOTPRINT,
    *,
    n_origins: int = LLM_ORIGINS,
    seed: int = LLM_SEED,
    description: str | None = None,
) -> int:
    """Draw the block sample into a new version of footprint `name`; returns its id."""
    if n_origins < MIN_BLOCK:
        raise UserError(f"An LLM sample needs at least {MIN_BLOCK} origins (one block)")
    wh.require_panel("panel.truth")
    definition = {
        "sampler": SAMPLER,
        "n_origins": n_origins,
        "seed": seed,
        "min_block": MIN_BLOCK,
        "max_block": MAX_BLOCK,
        "min_history": MIN_HISTORY,
        "sampler_checksum": sql_file(SAMPLER_STEP).checksum[:16],
        "predicate": "TRUE",
    }
    description = description or (
        f"LLM protocol sample: blocks of {MIN_BLOCK}-{MAX_BLOCK} consecutive test origins per "
        f"firm, calendar-balanced, {n_origins:,} origins (fewer if the panel has fewer), "
        f"seed {seed}"
    )
    with wh.transaction():
        fid = insert_footprint(wh, name, "origins", "TRUE", "test", description, definition)
        wh.run_step(
            SAMPLER_STEP,
            {
                "footprint_id": fid,
                "seed": seed,
                "n_origins": n_origins,
                "split": "test",
                "min_block": MIN_BLOCK,
                "max_block": MAX_BLOCK,
                "min_history": MIN_HISTORY,
            },
        )
        pool_origins, pool_firms = wh.one("SELECT count(*), count(DISTINCT firm_id) FROM llm_pool")
        wh.execute("DROP TABLE llm_pool")
        wh.execute(
            "UPDATE eval.footprints SET definition = ? WHERE footprint_id = ?",
            [
                json.dumps(
                    {**definition, "pool_origins": pool_origins, "pool_firms": pool_firms},
                    sort_keys=True,
                ),
                fid,
            ],
        )
        set_cell_count(wh, fid)
    drop_footprint_temp(wh)
    return fid


class SampleCounts(TypedDict):
    """What an origin sample holds, and the pool it was drawn from (None: not recorded)."""

    origins: int
    firms: int
    first_q: int | None
    last_q: int | None
    by_year: dict[int, int]  # origins per calendar year
    pool_origins: int | None
    pool_firms: int | None


def sample_counts(wh: Warehouse, footprint_id: int) -> SampleCounts:
    """Origins, firms and origins per calendar year of a sample, and its eligible pool."""
    row = wh.one(
        "SELECT count(*), count(DISTINCT coalesce(gvkey, firm_id::VARCHAR)), min(origin_q), "
        "max(origin_q) FROM eval.footprint_origins WHERE footprint_id = ?",
        [footprint_id],
    )
    years = wh.fetchall(
        "SELECT origin_q // 4 AS year, count(*) FROM eval.footprint_origins "
        "WHERE footprint_id = ? GROUP BY 1 ORDER BY 1",
        [footprint_id],
    )
    definition = wh.scalar(
        "SELECT definition FROM eval.footprints WHERE footprint_id = ?", [footprint_id]
    )
    definition = json.loads(definition) if definition else {}
    return {
        "origins": int(row[0]),
        "firms": int(row[1]),
        "first_q": row[2],
        "last_q": row[3],
        "by_year": {int(y): int(n) for y, n in years},
        "pool_origins": definition.get("pool_origins"),
        "pool_firms": definition.get("pool_firms"),
    }
