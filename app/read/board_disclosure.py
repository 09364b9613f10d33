"""What a board adds to an upload's metrics (issue 49) as the public sees it (docs/service.md,
"The truth: threat model"): its interval bounds, probability of ranking first and MCS
p-value, its scores on its clean slice and a slice board's scores are derived from the
hidden truth, so they leave the warehouse through the disclosure policy
(proforma.app.read.disclosure), with labels of their own so that no two published
numbers share a dither, and are withheld over fewer than the minimum cells. Whether a
model is in the confidence set is published as it is: one bit per board, which
differencing two uploads cannot turn into a cell's value."""

from __future__ import annotations

from typing import Any

from proforma.app.read import disclosure
from proforma.contracts.metrics import UNCERTAINTY_METRICS

#: The grain of a published probability of an upload (first place, MCS p-value).
PROBABILITY_QUANTUM = 0.05
_PROBABILITIES = ("p_best", "mcs_p")


def _min_cells() -> int:
    from proforma.app.store.settings import get_settings

    return int(get_settings().public_min_cells)


def coarsen_board_row(
    row: dict[str, Any], exact: dict[str, Any], dither: disclosure.Dither, group: str
) -> dict[str, Any]:
    """An upload's leaderboard row (`row`: its metrics coarsened; `exact`: as scored)
    with what the board adds coarsened too: a slice board's metrics under the slice's
    labels, the clean-slice scores, the uncertainty."""
    if exact.get("clean_after"):
        return _slice_row(exact, dither)
    return _coarsen_clean(_coarsen_uncertainty(row, exact, dither, group), exact, dither, group)


def _slice_row(exact: dict[str, Any], dither: disclosure.Dither) -> dict[str, Any]:
    """A row of a board ranked on a clean slice: its metrics as an upload's always are,
    under the slice's own labels (`{sid}/clean/{quarter}/{metric}`)."""
    n = exact.get("n")
    sid = int(exact["submission_id"])
    if n is None or int(n) < _min_cells():
        return {k: (None if k in UNCERTAINTY_METRICS else v) for k, v in exact.items()}
    return disclosure.coarsen_metrics(exact, dither, sid, f"clean/{exact['clean_after']}")


def _coarsen_clean(
    row: dict[str, Any], exact: dict[str, Any], dither: disclosure.Dither, group: str
) -> dict[str, Any]:
    """The scores on the row's own clean slice, each to its metric's quantum over the
    slice's cells (`clean_cells`)."""
    out = dict(row)
    n = exact.get("clean_cells")
    sid = int(exact["submission_id"])
    withheld = n is None or int(n) < _min_cells()
    spread = {"mse": exact.get("mse_clean"), "r2": exact.get("r2_clean")}
    for m in UNCERTAINTY_METRICS:
        col = f"{m}_clean"
        if out.get(col) is None:
            continue
        if withheld:
            out[col] = None
            continue
        q = disclosure.quantum(m, n, {**spread, m: exact.get(col)})
        out[col] = disclosure.coarsen(exact[col], q, dither, f"{sid}/{group}/{m}/clean")
    return out


def _coarsen_uncertainty(
    row: dict[str, Any], exact: dict[str, Any], dither: disclosure.Dither, group: str
) -> dict[str, Any]:
    """An upload's leaderboard row with its uncertainty coarsened: each bound to the
    quantum of its metric over the row's cells (from the exact row: `exact`), each
    probability to PROBABILITY_QUANTUM; all of it withheld under the minimum cells."""
    n = exact.get("n")
    if n is None or int(n) < _min_cells():
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
