"""A footprint's cells, each submission's coverage of them, and a run's common sample.

A submission's coverage of a footprint and its gaps (the footprint cells it does not
predict) are computed once per scoring context from its stored cell scores (055); a
run's common sample is the footprint minus the gaps of its submissions (058), so its
cost does not grow with the submissions already scored. The sample's fingerprint (its
size and an XOR of cell hashes) tells a later run that it has the same sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.scoring import positional
from proforma.app.scoring.cell_layout import relation_fingerprint
from proforma.app.scoring.cells import Context, cell_score_rows, single_params, submission_row
from proforma.app.scoring.footprints.store import (
    Footprint,
    drop_temp,
    prepare_footprint,
    temp_kind,
)
from proforma.app.scoring.submissions.store import stored_file
from proforma.app.store.columns import to_arrow, to_numpy
from proforma.app.store.warehouse import IN_IDS, Warehouse

#: A submission's gaps are stored when it predicts at least this share of a footprint;
#: a run intersects the cells of the others directly (e.g. a 25-item model on Full).
GAPS_MIN_SHARE = 0.5


@dataclass(frozen=True)
class Coverage:
    footprint_cells: int
    predicted_cells: int
    gaps_stored: bool


def prepare_footprint_cells(wh: Warehouse, fp: Footprint) -> int:
    """fp_cells: the footprint's scoreable truth cells (040), a view until a step that
    joins it asks for a table (`fp_cells_table`), so a run of uploads kept in the store on
    a footprint that is its whole split never reads them (they are the layout's); returns
    their number (recorded when the footprint was made from this build, else counted)."""
    n = prepare_footprint(wh, fp, recount=False)
    wh.execute("CREATE OR REPLACE TEMP VIEW fp_cells AS FROM fp_truth")
    return n


def fp_cells_table(wh: Warehouse) -> None:
    """fp_cells as a temp table, made once per run: 055 and 058 join it, some more than
    once (a view would scan the truth each time). A view over it (common_cells) reads
    the table from then on: names bind when a view is read."""
    if temp_kind(wh, "fp_cells") == "VIEW":
        wh.execute("DROP VIEW fp_cells")
        wh.execute("CREATE TEMP TABLE fp_cells AS FROM fp_truth")


def ensure_coverage(
    wh: Warehouse,
    footprint_id: int,
    submission_ids: list[int],
    ctx: Context,
    n_cells: int | None = None,
) -> dict[int, Coverage]:
    """Each submission's coverage of the footprint in fp_cells, of `n_cells` cells when
    known (computed and stored for those that have none in this context)."""
    sql = (
        "SELECT submission_id, footprint_cells, predicted_cells, gaps_stored "
        "FROM eval.footprint_coverage WHERE footprint_id = ? AND build_id IS NOT DISTINCT FROM ? "
        f"AND eval_sql_version = ? AND rules = ? AND submission_id {IN_IDS}"
    )
    args = [footprint_id, ctx.build_id, ctx.eval_sql_version, ctx.rules.name, submission_ids]
    have = {r[0]: Coverage(int(r[1]), int(r[2]), bool(r[3])) for r in wh.fetchall(sql, args)}
    by_position = _ByPosition(wh, footprint_id, ctx, n_cells)
    for sid in submission_ids:
        if sid in have:
            continue
        stored = stored_file(wh, sid)
        if stored is not None:
            have[sid] = by_position.coverage(sid, stored)
            continue
        fp_cells_table(wh)
        with wh.transaction():
            for table in ("footprint_coverage", "sample_gaps"):
                wh.execute(
                    f"DELETE FROM eval.{table} WHERE footprint_id = ? AND submission_id = ?",
                    [footprint_id, sid],
                )
            wh.run_step(
                "eval/055_footprint_coverage",
                {
                    "footprint_id": footprint_id,
                    "submission_id": sid,
                    "build_id": ctx.build_id,
                    "eval_sql_version": ctx.eval_sql_version,
                    "rules": ctx.rules.name,
                    "gaps_min_share": GAPS_MIN_SHARE,
                },
            )
        row = wh.one("SELECT footprint_cells, predicted_cells, gaps_stored FROM sub_coverage")
        have[sid] = Coverage(int(row[0]), int(row[1]), bool(row[2]))
    wh.execute("DROP TABLE IF EXISTS sub_coverage")
    return have


class _ByPosition:
    """Coverage and gaps of uploads kept in the store, over the footprint split's cell
    layout (the footprint's cells from fp_cells, as a mask made once per call)."""

    def __init__(
        self, wh: Warehouse, footprint_id: int, ctx: Context, n_cells: int | None = None
    ) -> None:
        self.wh, self.footprint_id, self.ctx, self.n_cells = wh, footprint_id, ctx, n_cells
        split = wh.scalar(
            "SELECT split FROM eval.footprints WHERE footprint_id = ?", [footprint_id]
        )
        self.split = str(split)
        self._mask: tuple[np.ndarray | None] | None = None

    def coverage(self, sid: int, stored: dict[str, Any]) -> Coverage:
        wh, ctx = self.wh, self.ctx
        layout = positional.cell_layout(wh, self.split)
        if self._mask is None:
            self._mask = (layout.relation_mask(wh, "fp_cells", self.n_cells),)
        footprint = self._mask[0]
        n_fp = layout.n_scoreable if footprint is None else int(np.count_nonzero(footprint))
        params = single_params(submission_row(wh, sid), ctx)
        dense = positional.dense_upload(
            wh, layout, stored, float32_sigma=params["float32_residuals"]
        )
        # The whole test split is what its cell record counted (compute_cell_scores).
        counted = (
            wh.scalar(
                "SELECT cells FROM eval.cell_score_sets WHERE submission_id = ? "
                "AND build_id IS NOT DISTINCT FROM ? AND eval_sql_version = ? AND rules = ?",
                [sid, ctx.build_id, ctx.eval_sql_version, ctx.rules.name],
            )
            if footprint is None and self.split == "test"
            else None
        )
        if counted is not None:
            predicted = int(counted)
        else:
            predicted = sum(
                int(wh.scalar(f"SELECT count(*) FROM {view}"))
                for view in positional.span_terms(wh, layout, dense, params, footprint)
            )
        # Gaps are kept when the upload predicts at least GAPS_MIN_SHARE of the footprint,
        # as 055 keeps those of forecasts in tables (a run's common sample is then the
        # footprint minus them); a run intersects a smaller upload's cells instead
        # (_stored_cells), so an upload of a few firms does not store the ~10M gaps of a
        # demo-scale footprint.
        keep_gaps = n_fp > 0 and predicted >= GAPS_MIN_SHARE * n_fp
        gap_cells = None
        if keep_gaps and predicted < n_fp:
            scored = np.concatenate(
                [
                    to_numpy(wh.arrow(f"SELECT pos FROM {view}")["pos"])
                    for view in positional.span_terms(
                        wh, layout, dense, params, footprint, with_pos=True
                    )
                ]
                or [np.zeros(0, dtype=np.int64)]
            )
            gaps = ~np.isnan(layout.actual) if footprint is None else footprint.copy()
            gaps[scored] = False
            gap_cells = layout.cells(np.flatnonzero(gaps))
        cov = Coverage(n_fp, predicted, keep_gaps)
        with wh.transaction():
            for table in ("footprint_coverage", "sample_gaps"):
                wh.execute(
                    f"DELETE FROM eval.{table} WHERE footprint_id = ? AND submission_id = ?",
                    [self.footprint_id, sid],
                )
            wh.execute(
                "INSERT INTO eval.footprint_coverage "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, now()::TIMESTAMP)",
                [
                    self.footprint_id,
                    sid,
                    ctx.build_id,
                    ctx.eval_sql_version,
                    ctx.rules.name,
                    cov.footprint_cells,
                    cov.predicted_cells,
                    cov.gaps_stored,
                ],
            )
            if gap_cells is not None and len(gap_cells):
                with wh.registered(f"gaps_{sid}", pa.table({"cell": to_arrow(gap_cells)})) as view:
                    wh.execute(
                        f"INSERT INTO eval.sample_gaps SELECT ?, ?, cell FROM {view}",
                        [self.footprint_id, sid],
                    )
        return cov


def _stored_cells(wh: Warehouse, split: str) -> None:
    """Temp table run_stored_cells: the scored cells of the run's uploads kept in the store
    whose gaps are not stored (058 intersects them; they have no rows in eval.cell_scores)."""
    wh.execute("CREATE OR REPLACE TEMP TABLE run_stored_cells (submission_id INTEGER, cell BIGINT)")
    for (sid,) in wh.fetchall(
        "SELECT submission_id FROM run_subs WHERE NOT gaps_stored AND shapes_sample"
    ):
        if stored_file(wh, int(sid)) is None:
            continue
        cells = cell_score_rows(wh, int(sid), split).select(["cell"])
        with wh.registered(f"stored_cells_{sid}", cells) as view:
            wh.execute(f"INSERT INTO run_stored_cells SELECT ?, cell FROM {view}", [int(sid)])


def prepare_run_subs(
    wh: Warehouse,
    submission_ids: list[int],
    gaps_stored: dict[int, bool] | None = None,
    *,
    uploads_shape: bool = False,
) -> None:
    """Temp table run_subs: the run's submissions with family, whether their gaps on the
    footprint are stored (without a map: none is, so 058 intersects their cells) and
    whether they shape the common sample: every submission but an upload does. An
    upload's gaps never remove a cell from the others' sample: one upload that leaves out
    one cell would otherwise move every in-house model's exact numbers by that cell's
    loss alone and give its truth back (docs/service.md, "The truth: threat model");
    an upload is scored on its own cells of the sample, and its coverage says so. A
    footprint frozen from submissions (`uploads_shape`) takes every one's cells."""
    stored = gaps_stored or {}
    wh.set_params(
        {
            "submission_ids": [int(s) for s in submission_ids],
            "gaps_stored_ids": [int(s) for s in submission_ids if stored.get(s)],
            "uploads_shape": uploads_shape,
        }
    )
    wh.execute(
        "CREATE OR REPLACE TEMP TABLE run_subs AS "
        "SELECT submission_id, family, family = 'quantile' AS is_quantile, "
        "submission_id IN (SELECT unnest(getvariable('gaps_stored_ids'))) AS gaps_stored, "
        "(source <> 'upload' OR getvariable('uploads_shape')) AS shapes_sample "
        "FROM eval.submissions WHERE submission_id IN (SELECT unnest(getvariable('submission_ids')))"
    )


def common_sample(
    wh: Warehouse, footprint_id: int | None, split: str = "test", n_cells: int | None = None
) -> tuple[int, str]:
    """common_cells from fp_cells (of `n_cells` cells when known) and run_subs (058);
    returns its size and fingerprint.

    When every submission of the run has its gaps stored and none has a gap, the common
    sample is the whole footprint: common_cells is then a view of fp_cells instead of a
    copy of it (a copy of 10M cells cost 0.2-0.4 s of every such run), and when the
    footprint is its whole split its fingerprint is the layout's (kept beside it), so the
    run reads no truth for it."""
    drop_temp(wh, "common_cells")
    whole = footprint_id is not None and wh.scalar(
        "SELECT coalesce(bool_and(gaps_stored), true) AND NOT EXISTS ("
        "SELECT 1 FROM eval.sample_gaps g JOIN run_subs r USING (submission_id) "
        "WHERE g.footprint_id = ? AND r.shapes_sample) FROM run_subs WHERE shapes_sample",
        [footprint_id],
    )
    if whole:
        wh.execute("CREATE TEMP VIEW common_cells AS FROM fp_cells")
        if n_cells is not None and positional.has_cell_layout(wh, split):
            layout = positional.cell_layout(wh, split)
            if n_cells == layout.n_scoreable:
                return n_cells, layout.cells_fingerprint(wh, "common_cells")
    else:
        fp_cells_table(wh)
        _stored_cells(wh, split)
        try:
            wh.run_step(
                "eval/058_common_cells", {"footprint_id": footprint_id if footprint_id else -1}
            )
        finally:
            wh.execute("DROP TABLE IF EXISTS run_stored_cells")
    return relation_fingerprint(wh, "common_cells")
