"""Coherence of forecast statements in dollars (sql/eval/080_coherence.sql)."""

from __future__ import annotations

from proforma.app.scoring.provenance import eval_sql_version
from proforma.app.scoring.submissions.store import drop_relations, point_relation
from proforma.app.store.warehouse import IN_IDS, Warehouse

_NEEDS = ("panel.origins", "panel.origin_params", "panel.item_k")


def compute_coherence(wh: Warehouse, submission_id: int, split: str = "test") -> int:
    """(Re)compute eval.coherence rows of a submission; returns identity instances scored."""
    version = eval_sql_version()
    points = point_relation(wh, submission_id)  # a stored upload: its file, in place
    try:
        with wh.transaction():
            wh.execute("DELETE FROM eval.coherence WHERE submission_id = ?", [submission_id])
            wh.run_step(
                "eval/080_coherence",
                {"submission_id": submission_id, "split": split, "eval_sql_version": version},
                identifiers={"points": points},
            )
    finally:
        drop_relations(wh)
    return int(
        wh.scalar(
            "SELECT coalesce(max(n_instances), 0) FROM eval.coherence "
            "WHERE submission_id = ? AND identity = 'ALL'",
            [submission_id],
        )
    )


def ensure_coherence(wh: Warehouse, submission_ids: list[int]) -> None:
    """Compute coherence for submissions lacking it under the current scoring SQL."""
    if not all(wh.table_exists(t) for t in _NEEDS):
        return
    version = eval_sql_version()
    # one query for the run's submissions (one each cost a run O(k) round trips)
    done = {
        r[0]
        for r in wh.fetchall(
            "SELECT DISTINCT submission_id FROM eval.coherence "
            f"WHERE submission_id {IN_IDS} AND eval_sql_version = ?",
            [list(submission_ids), version],
        )
    }
    for sid in submission_ids:
        if sid not in done:
            compute_coherence(wh, sid)


def coherence_table(wh: Warehouse, submission_id: int | None = None):
    """Median identity violation by identity and overall ('ALL'), per submission."""
    sql = "SELECT s.name, c.* FROM eval.coherence c JOIN eval.submissions s USING (submission_id)"
    params = []
    if submission_id is not None:
        sql += " WHERE c.submission_id = ?"
        params.append(submission_id)
    return wh.arrow(sql + " ORDER BY c.submission_id, c.identity = 'ALL' DESC, c.identity", params)
