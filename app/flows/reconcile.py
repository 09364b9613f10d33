"""`proforma reconcile`: a submission's statements projected onto the accounting
identities, stored as a derived submission (docs/report.md, "Reconciliation").

The data semantics are SQL: sql/reconcile/010 takes the parent's point forecasts to
reported units with the origin's frozen parameters (and the delta-method sd of each
value), sql/reconcile/020 brings the reconciled values back to the standardized space
exactly as the truth is standardized. The projection itself is numpy (app/flows/projection.py),
one origin quarter at a time. Each finished quarter is committed with its changed cells
(eval.reconcile_quarters, eval.reconcile_cells), so an interrupted job resumes where it
stopped; the derived submission goes through proforma.app.scoring.ingest_forecasts like every
forecaster's, with its parent and method in the metadata.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.flows.projection import WEIGHTS, IdentitySet, reconcile_statements
from proforma.app.scoring.submissions.store import drop_relations, point_relation
from proforma.app.store.sqlfiles import sql_file
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.models.numerics import one_blas_thread

_NEEDS = ("panel.origins", "panel.origin_params", "panel.item_k")


@dataclass(frozen=True)
class Reconciled:
    """What a reconcile job did."""

    reconcile_id: int
    submission_id: int
    name: str
    parent_id: int
    weights: str
    quarters: int
    quarters_resumed: int
    statements: int
    cells_changed: int
    max_residual: float | None
    elapsed_s: float


def default_name(parent_name: str, weights: str) -> str:
    return f"{parent_name} + {weights}-weighted reconciliation"


def resolve_parent(wh: Warehouse, submission: int | str) -> dict[str, Any]:
    """The current (not retired) submission named or numbered `submission`."""
    text = str(submission).strip()
    if text.isdigit():
        rows = wh.arrow("SELECT * FROM eval.submissions WHERE submission_id = ?", [int(text)])
    else:
        rows = wh.arrow(
            "SELECT * FROM eval.submissions WHERE name = ? "
            "ORDER BY retired_at NULLS FIRST, submission_id DESC LIMIT 1",
            [text],
        )
    if not rows.num_rows:
        raise UserError(f"No submission {text!r}; `proforma leaderboard` lists them")
    row = rows.to_pylist()[0]
    if row["retired_at"] is not None:
        raise UserError(f"Submission {text!r} was replaced; its forecasts are gone")
    if not row["rows"]:
        raise UserError(f"Submission {text!r} holds no forecasts")
    return row


def load_identities(wh: Warehouse) -> IdentitySet:
    rows = wh.fetchall("SELECT identity, item_id, sign FROM ref.identities")
    if not rows:
        raise UserError(
            "ref.identities is empty: run `proforma migrate` to load the reference tables"
        )
    return IdentitySet.from_terms([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])


def _job(wh: Warehouse, parent_id: int, weights: str, name: str) -> tuple[int, bool]:
    """The unfinished job of (parent, weights, name) to resume, or a new one."""
    row = wh.fetchone(
        "SELECT reconcile_id FROM eval.reconciliations WHERE parent_id = ? AND weights = ? "
        "AND name = ? AND status = 'running' ORDER BY reconcile_id DESC LIMIT 1",
        [parent_id, weights, name],
    )
    if row is not None:
        return int(row[0]), True
    # An unfinished job of the same name for another parent (the parent was replaced) can
    # never resume: its staged cells go.
    wh.execute(
        "DELETE FROM eval.reconcile_cells WHERE reconcile_id IN (SELECT reconcile_id "
        "FROM eval.reconciliations WHERE name = ? AND status = 'running')",
        [name],
    )
    rid = int(wh.scalar("SELECT nextval('eval.reconcile_id_seq')"))
    wh.execute(
        "INSERT INTO eval.reconciliations (reconcile_id, parent_id, weights, name, status, "
        "started_at) VALUES (?, ?, ?, ?, 'running', current_timestamp::TIMESTAMP)",
        [rid, parent_id, weights, name],
    )
    return rid, False


def reconcile_quarter(
    cells: pa.Table, weights: str, identities: IdentitySet
) -> tuple[pa.Table, int, float]:
    """One origin quarter's cells (reconcile_points rows) -> (changed cells with their
    reconciled value, statements with an enforceable identity, largest residual after)."""
    firm = cells.column("firm_id").to_numpy()
    horizon = cells.column("horizon").to_numpy().astype(np.int64)
    item = cells.column("item_id").to_numpy().astype(np.int64)
    keys, row = np.unique(firm.astype(np.int64) * 32 + horizon, return_inverse=True)
    col = np.searchsorted(identities.columns, item)
    values = np.full((keys.size, identities.columns.size), np.nan)
    values[row, col] = cells.column("v").to_numpy(zero_copy_only=False)
    w = None
    if weights == "variance":
        w = np.full_like(values, np.nan)
        sd = cells.column("dollar_sd").to_numpy(zero_copy_only=False).astype(float)
        w[row, col] = sd * sd
    result = reconcile_statements(values, w, identities)
    r, c = np.nonzero(result.changed)
    changed = pa.table(
        {
            "firm_id": pa.array(keys[r] // 32, pa.int32()),
            "item_id": pa.array(identities.columns[c], pa.int16()),
            "horizon": pa.array(keys[r] % 32, pa.int8()),
            "v": pa.array(result.values[r, c], pa.float64()),
        }
    )
    after = result.residual_after[np.isfinite(result.residual_after)]
    return changed, result.statements, float(after.max()) if after.size else float("nan")


def reconcile(
    wh: Warehouse,
    submission: int | str,
    weights: str = "variance",
    *,
    name: str | None = None,
    progress: bool = True,
) -> Reconciled:
    """Project every statement of `submission` onto its enforceable identities and store
    the result as a derived submission; resumes an interrupted job of the same name."""
    from proforma.app import scoring

    parent, name = _checked_job(wh, submission, weights, name)
    identities = load_identities(wh)
    t0 = time.perf_counter()
    rid, resumed = _job(wh, parent["submission_id"], weights, name)
    done = _project_quarters(wh, rid, parent, weights, identities, progress)
    sid = _store(wh, rid, parent, weights, name, scoring)
    totals = _finish_job(wh, rid, parent, sid)
    return Reconciled(
        rid,
        sid,
        name,
        parent["submission_id"],
        weights,
        int(totals[0]),
        len(done) if resumed else 0,
        int(totals[1]),
        int(totals[2]),
        None if totals[3] is None else float(totals[3]),
        time.perf_counter() - t0,
    )


def _checked_job(
    wh: Warehouse, submission: int | str, weights: str, name: str | None
) -> tuple[dict[str, Any], str]:
    """(the parent submission, the derived submission's name), or a UserError saying
    why the job cannot run."""
    if weights not in WEIGHTS:
        raise UserError(f"Unknown weights {weights!r}: use {' or '.join(WEIGHTS)}")
    wh.require_panel(*_NEEDS)
    if not wh.table_exists("eval.reconciliations"):
        raise UserError("The warehouse lacks the reconciliation tables: run `proforma migrate`")
    parent = resolve_parent(wh, submission)
    if weights == "variance" and not parent["has_sigma"]:
        raise UserError(
            f"Submission {parent['name']!r} has no sigma, so there is no predictive variance "
            f"to weight by: use --weights equal, or reconcile a submission with sigma"
        )
    name = name or default_name(parent["name"], weights)
    if name == parent["name"]:
        raise UserError("The reconciled submission needs a name other than its parent's")
    return parent, name


def _project_quarters(
    wh: Warehouse,
    rid: int,
    parent: dict[str, Any],
    weights: str,
    identities: IdentitySet,
    progress: bool,
) -> set[int]:
    """Project the parent's statements origin quarter by origin quarter, each quarter
    one transaction (a resumed job skips those it finished); returns the quarters found
    finished."""
    from proforma.models.progress import progress_bar

    # the parent's points, from eval.forecasts or its file in the upload store, read in place
    points = {"points": point_relation(wh, parent["submission_id"])}
    wh.run_step("reconcile/010_statement_cells", identifiers=points)
    try:
        done = {
            q
            for (q,) in wh.fetchall(
                "SELECT origin_q FROM eval.reconcile_quarters WHERE reconcile_id = ?", [rid]
            )
        }
        quarters = [
            q
            for (q,) in wh.fetchall(
                "SELECT DISTINCT origin_q FROM reconcile_points ORDER BY origin_q"
            )
        ]
        todo = [q for q in quarters if q not in done]
        with one_blas_thread():  # many small matrices: threaded BLAS only spins
            for q in progress_bar(
                todo,
                desc=f"reconcile ({weights})",
                unit="quarter",
                disable=not progress,
                leave=False,
            ):
                _project_quarter(wh, rid, q, weights, identities)
    finally:
        wh.execute("DROP TABLE IF EXISTS reconcile_points")
    return done


def _project_quarter(
    wh: Warehouse, rid: int, q: int, weights: str, identities: IdentitySet
) -> None:
    """One origin quarter: its changed cells and its record, in one transaction."""
    started = time.perf_counter()
    cells = wh.arrow(
        "SELECT firm_id, horizon, item_id, v, dollar_sd FROM reconcile_points "
        "WHERE origin_q = ? ORDER BY firm_id, horizon, item_id",
        [q],
    )
    changed, statements, residual = reconcile_quarter(cells, weights, identities)
    changed = changed.append_column("origin_q", pa.array(np.full(changed.num_rows, q), pa.int32()))
    changed = changed.append_column(
        "reconcile_id", pa.array(np.full(changed.num_rows, rid), pa.int32())
    )
    with wh.transaction():
        if changed.num_rows:
            wh.write_arrow("eval.reconcile_cells", changed)
        wh.execute(
            "INSERT INTO eval.reconcile_quarters VALUES (?, ?, ?, ?, ?, ?)",
            [
                rid,
                q,
                statements,
                changed.num_rows,
                None if np.isnan(residual) else residual,
                time.perf_counter() - started,
            ],
        )


def _finish_job(wh: Warehouse, rid: int, parent: dict[str, Any], sid: int) -> tuple:
    """The job's totals and its projection's identity violation recorded, the job done
    and its cells dropped; returns (quarters, statements, cells changed, max residual)."""
    totals = wh.one(
        "SELECT count(*), coalesce(sum(statements), 0), coalesce(sum(cells_changed), 0), "
        "max(max_residual) "
        "FROM eval.reconcile_quarters WHERE reconcile_id = ?",
        [rid],
    )
    # (made again: storing the derived submission may have used the view's name)
    points = {"points": point_relation(wh, parent["submission_id"])}
    violation = wh.query_step(
        "reconcile/030_projection_violation",
        {"reconcile_id": rid, "split": "test"},
        identifiers=points,
    ).to_pylist()[0]
    drop_relations(wh)
    with wh.transaction():
        wh.execute(
            "UPDATE eval.reconciliations SET status = 'done', submission_id = ?, "
            "statements = ?, cells_changed = ?, max_residual = ?, instances = ?, "
            "median_violation = ?, max_violation = ?, "
            "finished_at = current_timestamp::TIMESTAMP WHERE reconcile_id = ?",
            [
                sid,
                totals[1],
                totals[2],
                totals[3],
                violation["instances"],
                violation["median_violation"],
                violation["max_violation"],
                rid,
            ],
        )
        wh.execute("DELETE FROM eval.reconcile_cells WHERE reconcile_id = ?", [rid])
    return totals


def _store(
    wh: Warehouse, rid: int, parent: dict[str, Any], weights: str, name: str, scoring: Any
) -> int:
    """The derived submission through the common forecast path (proforma.app.scoring)."""
    metadata = {
        "parent_id": parent["submission_id"],
        "parent_name": parent["name"],
        "method": f"reconcile/{weights}",
        "reconcile_id": rid,
        "point": "mean of the parent's components" if parent["n_components"] > 1 else "parent's mu",
        "docs": "docs/report.md#reconciliation",
    }
    cursor = wh.cursor()  # its own result stream: ingest runs statements on wh meanwhile
    try:
        cursor.set_params({"reconcile_id": rid})
        # (a temp view is the cursor's own: the parent's points are made on it)
        points = point_relation(cursor, parent["submission_id"])
        reader = cursor.reader(
            sql_file("reconcile/020_derived_forecasts").render({"points": points})
        )
        return scoring.ingest_forecasts(
            wh, name, reader, family="gaussian", source="model", metadata=metadata
        )
    finally:
        cursor.close()
