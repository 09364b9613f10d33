"""What a board adds to an upload's row (issue 49) as the public sees it (docs/service.md,
"The truth: threat model"). Every number derived from the hidden truth is a channel to
its cells, so each is either counted in the upload's noise budget
(proforma.app.read.noise_budget) or withheld:

- its score on its own clean slice (the origins after its declared cutoff, one fixed
  slice per upload) carries its noise like its other numbers, as one more level
  (noise_budget.CLEAN_LEVEL, labels `{sid}/clean////{metric}`; R2 from the noised MSE),
  withheld under the minimum cells;
- its interval bounds, probability of ranking first and model-confidence-set p-value and
  membership are withheld (the public board's probabilities and sets are taken among
  the members that are not uploads: eval.rank_sets scope 'public');
- on a board ranked on a clean slice chosen by the reader, its row is withheld: a slice
  per quarter would be a fresh channel per quarter.
"""

from __future__ import annotations

from typing import Any

from proforma.app.read import disclosure
from proforma.app.read.noise_budget import CLEAN_LEVEL
from proforma.contracts.metrics import METRICS, UNCERTAINTY_METRICS

#: What the rank uncertainty adds to a row (proforma.app.scoring.leaderboard).
UNCERTAINTY_COLUMNS = (
    *(f"{m}_{end}" for m in UNCERTAINTY_METRICS for end in ("lo", "hi")),
    "p_best",
    "mcs_p",
    "in_mcs",
)


def _min_cells() -> int:
    from proforma.app.store.settings import get_settings

    return int(get_settings().public_min_cells)


def public_board_row(
    row: dict[str, Any], exact: dict[str, Any], dither: disclosure.Dither, *, on_slice: bool
) -> dict[str, Any]:
    """An upload's board row (`row`: its metrics already as published; `exact`: as
    scored) with what the board adds as the public may see it (`on_slice`: a board ranked
    on a slice the reader chose, where the row's numbers are withheld)."""
    out = {k: (None if k in UNCERTAINTY_COLUMNS else v) for k, v in row.items()}
    if on_slice:
        return {k: (None if k in METRICS else v) for k, v in out.items()}
    clean = {m: exact.get(f"{m}_clean") for m in UNCERTAINTY_METRICS if f"{m}_clean" in exact}
    if not clean:
        return out
    n = exact.get("clean_cells")
    if n is None or int(n) < _min_cells():
        return {**out, **{f"{m}_clean": None for m in clean}}
    sid = int(exact["submission_id"])
    public = disclosure.coarsen_metrics(
        {"n": n, **clean}, dither, sid, CLEAN_LEVEL, label=f"{sid}/{CLEAN_LEVEL}////"
    )
    return {**out, **{f"{m}_clean": public[m] for m in clean}}
