"""Model cards on a board (issue 49, item 4): which of a board's members it shows.

A submission's card is its declared metadata as columns (sql/service/
submission_records.sql: model family, parameters, compute hours and hardware, seeds,
training cutoff, code link, leakage statement). By default a board shows one entry per
uploader and model family, the latest (a team's tenth tweak does not push the others
off the page); the in-house models are each their own entry. The rest are shown on
request (`all_entries`), and a reader can keep one family or the models up to a size.
A filter picks the rows shown; the run, its common sample and its rank uncertainty
(P(best), the confidence set: over the whole board) are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proforma.app.store.sqlfiles import query_text
from proforma.app.store.warehouse import IN_IDS, Warehouse


@dataclass(frozen=True)
class CardFilter:
    """Which entries a board shows."""

    #: every entry, not only each uploader's latest per model family
    all_entries: bool = False
    #: only this model family (case-insensitive)
    model_family: str | None = None
    #: only models that declare at most this many parameters
    max_parameters: int | None = None


def cards(wh: Warehouse, submission_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The card columns of these submissions, by id."""
    rows = wh.arrow(
        "SELECT submission_id, source, uploaded_by, model_family, parameters "
        f"FROM ({query_text('service/submission_records')}) AS s "
        f"WHERE s.submission_id {IN_IDS}",
        [list(submission_ids)],
    ).to_pylist()
    return {int(r["submission_id"]): r for r in rows}


def shown(
    wh: Warehouse, submission_ids: Sequence[int], chosen: CardFilter | None = None
) -> set[int]:
    """The members a board shows under `chosen` (default: each uploader's latest entry
    per model family, every in-house model)."""
    f = chosen or CardFilter()
    found = cards(wh, submission_ids)
    keep = set(found)
    if not f.all_entries:
        latest: dict[tuple[Any, ...], int] = {}
        for sid, card in found.items():
            if card["source"] != "upload":
                continue
            group = (card["uploaded_by"], str(card["model_family"]).lower())
            latest[group] = max(latest.get(group, sid), sid)
        keep = {
            sid
            for sid, card in found.items()
            if card["source"] != "upload"
            or latest[(card["uploaded_by"], str(card["model_family"]).lower())] == sid
        }
    if f.model_family:
        want = f.model_family.strip().lower()
        keep = {s for s in keep if str(found[s]["model_family"]).lower() == want}
    if f.max_parameters is not None:
        keep = {
            s
            for s in keep
            if found[s]["parameters"] is not None and found[s]["parameters"] <= f.max_parameters
        }
    return keep
