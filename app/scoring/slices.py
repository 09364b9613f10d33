"""Clean slices of a board (issue 49, item 3; docs/scoring.md, "Clean slices").

A submission declares the last quarter it trained on (the upload form's
`training_cutoff`, kept in eval.submissions.metadata). Its clean slice is the board's
cells whose origin quarter comes after that cutoff: there it cannot have seen the
targets' period. The slice's metrics are finished by the registry's SQL from the run's
stored per-(firm, origin quarter) sums (eval.cluster_losses), so no cell is scored again.
A model whose cutoff is at or after the first origin of the footprint's split is flagged
on every board (`after_test_start`); a model with no declared cutoff (the in-house models,
trained on the training split) is clean on every cell.

A board can also rank on a slice (`slice_rows`): the origins after a given quarter, with
the members whose cutoff is at or before it as entrants; they share the board's common
sample, so the slice's cells are the same for every entrant.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from proforma.app.store.warehouse import IN_IDS, Warehouse
from proforma.contracts.metrics import METRICS, SUMS, UNCERTAINTY_METRICS, cluster_sums
from proforma.contracts.quarters import parse_quarter, quarter_label

#: The declared cutoff as a quarter ordinal (a date counts as its quarter).
_CUTOFF = "eval.origin_from_text(json_extract_string(s.metadata, '$.training_cutoff'))"


def declared_cutoffs(wh: Warehouse, submission_ids: Sequence[int]) -> dict[int, int | None]:
    """{submission: its declared training cutoff as a quarter ordinal, None if none}."""
    return {
        int(sid): (None if q is None else int(q))
        for sid, q in wh.fetchall(
            f"SELECT s.submission_id, {_CUTOFF} FROM eval.submissions s "
            f"WHERE s.submission_id {IN_IDS}",
            [list(submission_ids)],
        )
    }


def split_start(wh: Warehouse, score_run_id: int) -> int | None:
    """The first origin quarter of the split the run's footprint scores."""
    q = wh.scalar(
        "SELECT min(o.origin_q) FROM panel.origins o WHERE o.split = ("
        "SELECT f.split FROM eval.score_runs r JOIN eval.footprints f USING (footprint_id) "
        "WHERE r.score_run_id = ?)",
        [score_run_id],
    )
    return None if q is None else int(q)


def _finish() -> str:
    return ", ".join(f"CAST({METRICS[m].finish} AS DOUBLE) AS {m}" for m in UNCERTAINTY_METRICS)


def slice_metrics(
    wh: Warehouse, score_run_id: int, after: dict[int, int | None]
) -> dict[int, dict[str, Any]]:
    """{submission: n and the UNCERTAINTY_METRICS on its cells with an origin after
    `after[submission]` (all its cells when None)}; a member without stored clusters or
    without a cell on its slice is left out."""
    if not after:
        return {}
    sums = ", ".join(
        f"CAST(sum({s}) AS {SUMS[s].type}) AS {s}" for s in cluster_sums()
    )  # (a sum of BIGINT is a HUGEINT)
    rows = wh.arrow(
        f"""
        SELECT submission_id, n, {_finish()}
        FROM (SELECT c.submission_id, {sums}
              FROM eval.cluster_losses c
              JOIN (SELECT unnest(?::INTEGER[]) AS submission_id,
                           unnest(?::INTEGER[]) AS after_q) k USING (submission_id)
              WHERE c.score_run_id = ? AND (k.after_q IS NULL OR c.origin_q > k.after_q)
              GROUP BY c.submission_id)
        WHERE n > 0
        """,
        [list(after), list(after.values()), score_run_id],
    ).to_pylist()
    return {int(r.pop("submission_id")): r for r in rows}


def add_clean_columns(
    wh: Warehouse, score_run_id: int, rows: list[dict[str, Any]], metrics: Sequence[str]
) -> None:
    """Each board row gains its declared cutoff, the flag of a cutoff at or after the
    split's first origin and, on a global board, its score on its own clean slice
    ({metric}_clean over clean_cells) for the track's headline `metrics`."""
    ids = sorted({int(r["submission_id"]) for r in rows})
    cutoffs = declared_cutoffs(wh, ids)
    start = split_start(wh, score_run_id)
    clean = slice_metrics(wh, score_run_id, cutoffs) if metrics else {}
    for row in rows:
        sid = int(row["submission_id"])
        q = cutoffs.get(sid)
        row["training_cutoff"] = None if q is None else quarter_label(q)
        row["after_test_start"] = q is not None and start is not None and q >= start
        if metrics:
            mine = clean.get(sid, {})
            row["clean_cells"] = mine.get("n")
            for m in metrics:
                row[f"{m}_clean"] = mine.get(m)


def parse_slice(text: str) -> int:
    """A slice's start as the API and the CLI take it ('2015Q4': origins after it); a
    UserError that says how to write it otherwise."""
    return parse_quarter(text.strip().upper())


def slice_rows(
    wh: Warehouse,
    score_run_id: int,
    track_metric: str,
    after_q: int,
    higher: bool,
    shown_metrics: Sequence[str] = UNCERTAINTY_METRICS,
) -> list[dict[str, Any]]:
    """The board ranked on the origins after `after_q`: its members whose cutoff is at or
    before `after_q` (or undeclared), each with n and the headline metrics on the slice,
    best first by `track_metric`."""
    ids = wh.scalar(
        "SELECT submission_ids FROM eval.score_runs WHERE score_run_id = ?", [score_run_id]
    )
    cutoffs = declared_cutoffs(wh, [int(s) for s in ids or []])
    entrants: dict[int, int | None] = {
        sid: after_q for sid, q in cutoffs.items() if q is None or q <= after_q
    }
    metrics = slice_metrics(wh, score_run_id, entrants)
    info = {
        int(r[0]): r[1:]
        for r in wh.fetchall(
            "SELECT submission_id, name, source FROM eval.submissions "
            f"WHERE submission_id {IN_IDS}",
            [list(metrics)],
        )
    }
    out = []
    for sid, values in metrics.items():
        name, source = info[sid]
        q = cutoffs[sid]
        out.append(
            {
                "model": name,
                "submission_id": sid,
                "source": source,
                "n": values["n"],
                **{m: values[m] for m in shown_metrics},
                "training_cutoff": None if q is None else quarter_label(q),
                "clean_after": quarter_label(after_q),
            }
        )

    def key(r: dict[str, Any]) -> tuple[bool, float]:
        v = r[track_metric]
        missing = v is None or math.isnan(v)
        return (missing, 0.0 if missing else (-v if higher else v))

    out.sort(key=key)
    for rank, r in enumerate(out, 1):
        r["rank"] = rank
    return out
