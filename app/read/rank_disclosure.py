"""A board's rank uncertainty as the public sees it (docs/service.md, "The truth: threat
model"): an upload's interval bounds, probability of ranking first and MCS p-value are
derived from the hidden truth, so they leave the warehouse through the disclosure policy
(proforma.app.read.disclosure), with labels of their own so that no two published
numbers share a dither; every member's uncertainty is withheld on a board of fewer than
the minimum cells. Whether a model is in the confidence set is published as it is: one
bit per board, which differencing two uploads cannot turn into a cell's value."""

from __future__ import annotations

from typing import Any

from proforma.app.read import disclosure
from proforma.contracts.metrics import UNCERTAINTY_METRICS

#: The grain of a published probability of an upload (first place, MCS p-value).
PROBABILITY_QUANTUM = 0.05
_PROBABILITIES = ("p_best", "mcs_p")


def bound_labels(submission_id: int, group: str) -> list[str]:
    """The dither labels of an upload's interval bounds and probabilities (distinct from
    its metrics' `{sid}/{group}/{metric}`)."""
    return [
        *(
            f"{submission_id}/{group}/{m}/ci_{side}"
            for m in UNCERTAINTY_METRICS
            for side in ("lo", "hi")
        ),
        *(f"{submission_id}/{group}/{p}" for p in _PROBABILITIES),
    ]


def coarsen_uncertainty(
    row: dict[str, Any], exact: dict[str, Any], dither: disclosure.Dither, group: str
) -> dict[str, Any]:
    """An upload's leaderboard row with its uncertainty coarsened: each bound to the
    quantum of its metric over the row's cells (from the exact row: `exact`), each
    probability to PROBABILITY_QUANTUM; all of it withheld under the minimum cells."""
    from proforma.app.store.settings import get_settings

    n = exact.get("n")
    if n is None or int(n) < get_settings().public_min_cells:
        return withhold_uncertainty(row)
    out = dict(row)
    sid = int(row["submission_id"])
    for m in UNCERTAINTY_METRICS:
        q = disclosure.quantum(m, n, exact)
        for side in ("lo", "hi"):
            col = f"{m}_{side}"
            if out.get(col) is not None:
                out[col] = disclosure.coarsen(out[col], q, dither, f"{sid}/{group}/{m}/ci_{side}")
    for p in _PROBABILITIES:
        if out.get(p) is not None:
            value = disclosure.coarsen(out[p], PROBABILITY_QUANTUM, dither, f"{sid}/{group}/{p}")
            out[p] = min(1.0, max(0.0, round(float(value), 2)))
    return out


def withhold_uncertainty(row: dict[str, Any]) -> dict[str, Any]:
    """The row without its uncertainty (a board under the minimum cells)."""
    out = dict(row)
    for key in list(out):
        if key.endswith(("_lo", "_hi")) or key in (*_PROBABILITIES, "in_mcs"):
            out[key] = None
    return out
