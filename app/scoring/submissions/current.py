"""The current submissions: which stored submissions a score run may use (not retired,
with rows, made against the current panel), by id or name, why the others are stale, and
retiring one."""

from __future__ import annotations

from collections.abc import Sequence

from proforma.app.scoring.cells import forget_cell_scores
from proforma.app.store.warehouse import IN_IDS, Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import utcnow

#: A submission's firm ids and standardized values belong to the panel it was ingested
#: against. Builds with the same SQL, parameters, regularization statistics and raw
#: ingest make the same panel (the build is deterministic); any other build may number
#: firms differently and standardize differently, so its submissions are stale.
_PANEL_OF_SUBMISSIONS = """
WITH current_build AS (
    SELECT * FROM meta.builds WHERE status = 'succeeded' ORDER BY build_id DESC LIMIT 1
)
SELECT s.submission_id, s.name, s.build_id, b.raw_ingest_id,
       s.build_id IS NULL OR c.build_id IS NULL OR s.build_id = c.build_id
       OR (b.sql_checksum = c.sql_checksum AND CAST(b.parameters AS VARCHAR) = CAST(c.parameters AS VARCHAR)
           AND b.reg_stats = c.reg_stats
           AND b.reg_stats_checksum IS NOT DISTINCT FROM c.reg_stats_checksum
           AND b.raw_ingest_id IS NOT DISTINCT FROM c.raw_ingest_id) AS same_panel,
       c.build_id AS current_build_id, c.raw_ingest_id AS current_raw_ingest_id
FROM eval.submissions s
LEFT JOIN meta.builds b ON b.build_id = s.build_id
LEFT JOIN current_build c ON TRUE
"""


def stale_submissions(wh: Warehouse, ids: list[int] | None = None) -> dict[int, str]:
    """{submission_id: why} for submissions ingested against another panel than the current."""
    if not wh.table_exists("meta.builds"):
        return {}
    rows = wh.fetchall(
        f"SELECT * FROM ({_PANEL_OF_SUBMISSIONS}) WHERE NOT same_panel"
        + (f" AND submission_id {IN_IDS}" if ids is not None else ""),
        [ids] if ids is not None else None,
    )
    return {
        sid: (
            f"submission {name!r} was ingested against build {build} (raw ingest {raw}); the "
            f"panel is now build {cur} (raw ingest {cur_raw}), whose firm ids and "
            f"standardization may differ: submit it again"
        )
        for sid, name, build, raw, _, cur, cur_raw in rows
    }


def active_submissions(wh: Warehouse) -> list[int]:
    """Current submissions (not retired, with rows, made against the current panel) in id order."""
    ids = [
        r[0]
        for r in wh.fetchall(
            "SELECT submission_id FROM eval.submissions WHERE retired_at IS NULL AND rows > 0 "
            "ORDER BY submission_id"
        )
    ]
    stale = stale_submissions(wh, ids)
    return [s for s in ids if s not in stale]


def resolve_submissions(wh: Warehouse, submissions: Sequence[int | str] | None) -> list[int]:
    """Ids for a list of ids or names (None: every current submission)."""
    if submissions is None:
        ids = active_submissions(wh)
        if not ids:
            raise UserError("No submissions to score: submit a file or run a model first")
        return ids
    out = []
    for s in submissions:
        if isinstance(s, int) or (isinstance(s, str) and s.isdigit()):
            row = wh.fetchone(
                "SELECT submission_id, retired_at FROM eval.submissions WHERE submission_id = ?",
                [int(s)],
            )
        else:
            row = wh.fetchone(
                "SELECT submission_id, retired_at FROM eval.submissions "
                "WHERE name = ? ORDER BY retired_at NULLS FIRST, submission_id DESC "
                "LIMIT 1",
                [s],
            )
        if row is None:
            raise UserError(f"No submission {s!r}")
        if row[1] is not None:
            raise UserError(f"Submission {s!r} was replaced; its forecasts are gone")
        out.append(int(row[0]))
    if len(set(out)) != len(out):
        raise UserError("A submission is listed twice")
    stale = stale_submissions(wh, out)
    if stale:
        raise UserError("; ".join(stale.values()))
    if not out:
        raise UserError("No submissions to score")
    return out


def retire_submission(wh: Warehouse, submission_id: int) -> None:
    """Take a submission out of service (a failed upload): retired, its forecasts and
    stored cell scores deleted, its record and past score runs kept (one transaction)."""
    with wh.transaction():
        wh.execute("DELETE FROM eval.forecast_rows WHERE submission_id = ?", [submission_id])
        wh.execute("DELETE FROM eval.forecast_points WHERE submission_id = ?", [submission_id])
        wh.execute("DELETE FROM eval.submission_files WHERE submission_id = ?", [submission_id])
        forget_cell_scores(wh, [submission_id])
        wh.execute(
            "UPDATE eval.submissions SET retired_at = ? WHERE submission_id = ? "
            "AND retired_at IS NULL",
            [utcnow(), submission_id],
        )
