"""Creating a footprint (or a new version of one): a validated predicate, a seeded
origin sample, or the frozen common sample of chosen submissions."""

from __future__ import annotations

from proforma.app.scoring import positional
from proforma.app.scoring.cells import ensure_cell_scores, scoring_context
from proforma.app.scoring.footprints.store import (
    SAMPLE_SEED,
    drop_footprint_temp,
    get_footprint_by_id,
    insert_footprint,
    set_cell_count,
    validate_predicate,
)
from proforma.app.scoring.sample import common_sample, prepare_footprint_cells, prepare_run_subs
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.panel import SPLITS


def create_footprint(
    wh: Warehouse,
    name: str,
    *,
    predicate: str = "TRUE",
    submissions: list[int] | None = None,
    n_origins: int | None = None,
    seed: int = SAMPLE_SEED,
    split: str = "test",
    description: str | None = None,
) -> int:
    """Create (a new version of) a footprint; returns its footprint_id.

    - predicate only: cells of the split where the predicate holds;
    - n_origins: a seeded calendar-balanced origin sample (and the predicate);
    - submissions: frozen common sample of those submissions (and the predicate).
    """
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise UserError(f"Footprint names use letters, digits, - and _: {name!r}")
    if split not in SPLITS:
        raise UserError(f"Unknown split {split!r}")
    predicate = validate_predicate(predicate)
    if submissions and n_origins:
        raise UserError("A footprint is frozen from submissions or from an origin sample, not both")
    if submissions:
        # Stored cell scores say which cells each submission predicts (own transactions);
        # an upload kept in the store says it through the split's cell layout, made here if
        # it must be (outside the transaction below).
        ensure_cell_scores(wh, [int(s) for s in submissions], scoring_context(wh))
        positional.cell_layout(wh, split)
    with wh.transaction():
        if submissions:
            fid = insert_footprint(
                wh,
                name,
                "cells",
                predicate,
                split,
                description,
                {"submissions": submissions, "predicate": predicate},
            )
            # The predicate scope first, then the common sample of the submissions in it
            # (intersected cell by cell: no gaps are stored for a footprint being made).
            prepare_footprint_cells(wh, {**get_footprint_by_id(wh, fid), "kind": "predicate"})
            prepare_run_subs(wh, [int(s) for s in submissions], uploads_shape=True)
            common_sample(wh, None, split)
            wh.run_step("eval/046_footprint_freeze", {"footprint_id": fid})
        elif n_origins:
            if n_origins < 1:
                raise UserError("n_origins must be positive")
            fid = insert_footprint(
                wh,
                name,
                "origins",
                predicate,
                split,
                description,
                {"n_origins": n_origins, "seed": seed, "predicate": predicate},
            )
            wh.run_step(
                "eval/045_footprint_origin_sample",
                {"footprint_id": fid, "seed": seed, "n_origins": n_origins, "split": split},
            )
        else:
            fid = insert_footprint(
                wh, name, "predicate", predicate, split, description, {"predicate": predicate}
            )
        set_cell_count(wh, fid)
    drop_footprint_temp(wh)
    return fid
