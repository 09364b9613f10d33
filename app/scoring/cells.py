"""Per-cell scores, computed once per submission and scoring context, then stored.

A cell's own scores (residual, NLL, CRPS, z, PIT u, interval hits; for mixtures and
quantile forecasts the combined values) depend on the submission and the truth only, not on
the footprint or the other submissions. They are computed by sql/eval/050 from the
per-cell terms (057 single forecasts, 054 mixtures, 056 quantile forecasts) into
eval.cell_scores, and eval.cell_score_sets
records the context they belong to: the build (the truth), the scoring-SQL version and
the build's rule set. Score runs read them; a new context computes them again.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
from duckdb.func import PythonUDFType
from duckdb.sqltypes import DOUBLE

from proforma.app.scoring import positional
from proforma.app.scoring.provenance import current_build, eval_sql_version
from proforma.app.scoring.submissions.store import CELL_VIEW, StoreError, stored_file
from proforma.app.store.columns import to_arrow, to_numpy
from proforma.app.store.rules import build_rules
from proforma.app.store.warehouse import IN_IDS, Warehouse, out_of_resources
from proforma.contracts.errors import UserError
from proforma.contracts.families import param_names
from proforma.contracts.metrics import COVERAGE_LEVELS, coverage_bounds
from proforma.contracts.provenance import utcnow
from proforma.contracts.rules import RuleSet

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Context:
    """What stored scores depend on besides the submission: the truth (build), the SQL
    that computed them, and the rule set."""

    build_id: int | None
    eval_sql_version: str
    rules: RuleSet


def scoring_context(wh: Warehouse) -> Context:
    build = current_build(wh)
    build_id = (build or {}).get("build_id")
    return Context(
        int(build_id) if build_id is not None else None, eval_sql_version(), build_rules(build)
    )


def _t_cdf(x: pa.Array, nu: pa.Array) -> pa.Array:
    """Student-t CDF for the SQL UDF eval_t_cdf (SQL has no incomplete beta function).
    NaN in, NaN out: DuckDB takes no NULL from a UDF of default null handling, and a
    mixture component with a non-finite mu (its cell is never scored) has a NaN w."""
    from scipy import special  # here, not at the top: scipy would weigh on every CLI start

    xs = to_numpy(x).astype(float)
    ns = to_numpy(nu).astype(float)
    return to_arrow(special.stdtr(ns, xs))


def register_functions(wh: Warehouse) -> None:
    """Register the scoring UDFs on this connection (idempotent). A function another
    connection to the same database registered is in the shared catalog, and creating it
    again fails: outside a transaction that failure is harmless, inside one it would
    abort the transaction, so there the function is looked up first (duckdb_functions()
    lists some 3,000 functions: 35-50 ms, a tenth of a `score`'s start)."""
    if "eval_t_cdf" in wh.functions:
        return
    if wh.in_transaction and wh.scalar(
        "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'eval_t_cdf'"
    ):
        wh.functions.add("eval_t_cdf")
        return
    try:
        wh.con.create_function(
            "eval_t_cdf", _t_cdf, [DOUBLE, DOUBLE], DOUBLE, type=PythonUDFType.ARROW
        )
    except duckdb.Error as exc:
        if "already" not in str(exc).lower():
            raise
    wh.functions.add("eval_t_cdf")


def quantile_level_params(levels: list[float]) -> dict[str, Any]:
    """SQL variables of a quantile forecast: its levels, size, the median's component and the
    components of each central interval's pair ((1 - p) / 2 and (1 + p) / 2), or None
    where the grid lacks them."""

    def component(level: float) -> int | None:
        for k, tau in enumerate(levels):
            if math.isclose(tau, level, rel_tol=0, abs_tol=1e-9):
                return k
        return None

    out: dict[str, Any] = {
        "quantile_levels": [float(t) for t in levels],
        "k_levels": len(levels),
        "median_k": component(0.5),
    }
    for p in COVERAGE_LEVELS:
        lo, hi = coverage_bounds(p)
        out[f"lo{p}"] = component(lo)
        out[f"hi{p}"] = component(hi)
    return out


#: Submissions (eval.submissions s) whose cell scores are eval.cell_point_scores (053):
#: one component, no sigma, not a quantile forecast; all others are in
#: eval.cell_density_scores (050). Routing and aggregation (064-066) both use this.
POINT_ONLY = "(NOT s.has_sigma AND s.family <> 'quantile' AND s.n_components = 1)"


def submission_row(wh: Warehouse, sid: int) -> dict[str, Any]:
    rows = wh.arrow(
        "SELECT submission_id, family, df, has_sigma, n_components, quantile_levels, "
        f"{POINT_ONLY} AS point_only FROM eval.submissions s WHERE submission_id = ?",
        [sid],
    ).to_pylist()
    if not rows:
        raise UserError(f"No submission {sid}")
    return rows[0]


def forget_cell_scores(wh: Warehouse, submission_ids: list[int]) -> None:
    """Drop what is stored per cell for these submissions (and their footprint coverage)."""
    if not submission_ids:
        return
    for table in (
        "cell_density_scores",
        "cell_point_scores",
        "cell_score_sets",
        "footprint_coverage",
        "sample_gaps",
    ):
        wh.execute(
            f"DELETE FROM eval.{table} WHERE submission_id {IN_IDS}",
            [submission_ids],
        )


def rule_params(rules: RuleSet) -> dict[str, Any]:
    """The SQL variables of the rules the per-cell terms read (053, 054, 057: sigma_floor,
    sigma_in_sample, float32_residuals; docs/contracts.md, "Rule sets")."""
    return rules.variables()


def family_params(sub: dict[str, Any]) -> dict[str, Any]:
    """The SQL variables of a submission's family (054, 057): its name and its shape
    parameters (every one the registry knows, NULL where the family has none)."""
    return {"family": sub["family"], **{name: sub.get(name) for name in param_names()}}


def single_params(sub: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """The SQL variables of 057's per-cell terms for a single-forecast submission."""
    return {
        "submission_id": int(sub["submission_id"]),
        **family_params(sub),
        **rule_params(ctx.rules),
    }


#: The per-cell terms of each kind of forecast: the step that makes the temp view, and
#: the view's name. Each reads a relation of (cell, actual, component, mu, sigma).
TERMS = {
    "single": ("eval/057_single_cell_terms", "single_cell_terms"),
    "mixture": ("eval/054_mixture_cell_terms", "mixture_cell_terms"),
    "pair": ("eval/054_mixture_cell_terms", "mixture_pair_cell_terms"),
    "quantile": ("eval/056_quantile_cell_terms", "quantile_cell_terms"),
}


def terms_kind(family: str, n_components: int, first_component: int | None = None) -> str:
    """Which per-cell terms score a submission: a two-component mixture whose first
    component is known takes the pair terms (054's one-join form), any other mixture the
    general ones."""
    if family == "quantile":
        return "quantile"
    if n_components == 2 and first_component is not None:
        return "pair"
    return "mixture" if n_components > 1 else "single"


def cell_terms(
    wh: Warehouse,
    sub: dict[str, Any],
    params: dict[str, Any],
    cells: str,
    *,
    step: str,
    first_component: int | None = None,
) -> tuple[str, dict[str, Any]]:
    """Make `cells` with `step` (a view of the submission's forecasts met with the truth)
    and the per-cell terms over it for the submission's kind (057, 054, 056): the terms
    view's name, and `params` with what the terms read besides (a quantile forecast's levels),
    for the step that reads the view. The static scorer and the rounds share the terms
    this way. `first_component`: the lowest component number of a mixture's forecasts
    (a two-component mixture is then scored by the pair terms)."""
    kind = terms_kind(sub["family"], int(sub["n_components"] or 1), first_component)
    if kind == "pair":
        params = {**params, "first_component": first_component}
    if kind == "quantile":
        params = {**params, **quantile_level_params(list(sub["quantile_levels"] or []))}
    wh.run_step(step, params)
    terms_step, view = TERMS[kind]
    wh.run_step(terms_step, params, identifiers={"cells": cells})
    return view, params


def drop_cell_terms(wh: Warehouse) -> None:
    """Drop whichever per-cell terms view `cell_terms` made on this connection."""
    for _, view in TERMS.values():
        wh.execute(f"DROP VIEW IF EXISTS {view}")
    wh.execute("DROP VIEW IF EXISTS mixture_components")


def compute_cell_scores(wh: Warehouse, sid: int, ctx: Context) -> int:
    """Score every cell of one submission into eval.cell_scores (its own transaction);
    returns the cells scored. An upload kept in the store stores no per-cell rows: its
    cells are scored by position when a run reads them (proforma.app.scoring.positional),
    and only its record (cells it scores in the test split) is written here."""
    sub = submission_row(wh, sid)
    stored = stored_file(wh, sid)
    register_functions(wh)
    started, t0 = utcnow(), time.perf_counter()
    # the grid and the upload's layout on it are made outside the transaction
    grid = positional.cell_layout(wh, "test") if stored is not None else None
    params = single_params(sub, ctx)
    dense = (
        positional.dense_upload(wh, grid, stored, float32_sigma=params["float32_residuals"])
        if grid is not None and stored
        else None
    )
    try:
        with wh.transaction():
            forget_cell_scores(wh, [sid])
            if grid is not None and dense is not None:
                cells = density = 0
                for view in positional.span_terms(wh, grid, dense, params):
                    # z is NULL exactly where the density terms are (057); cheaper than u
                    n, nz = wh.one(f"SELECT count(*), count(z) FROM {view}")
                    cells, density = cells + int(n), density + int(nz)
            else:
                cells, density = _insert_cell_scores(wh, sub, params)
            wh.execute(
                "INSERT INTO eval.cell_score_sets VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    sid,
                    ctx.build_id,
                    ctx.eval_sql_version,
                    ctx.rules.name,
                    cells,
                    density,
                    started,
                    time.perf_counter() - t0,
                ],
            )
    finally:
        drop_cell_terms(wh)
        wh.execute(f"DROP VIEW IF EXISTS {CELL_VIEW}")
        positional.release(wh)
    return int(cells)


def cell_score_rows(wh: Warehouse, sid: int, split: str = "test") -> pa.Table:
    """Every scored cell of one submission with its scores (the columns of
    eval.cell_scores), computed for this scoring context when missing: eval.cell_scores
    rows for forecasts in tables; for an upload kept in the store, its cells of `split`
    met by position (057 over the grid, as its runs score them)."""
    ctx = scoring_context(wh)
    register_functions(wh)
    stored = stored_file(wh, sid)
    columns = "cell, r, NULL::DOUBLE AS r_abs, nll, crps, z, u, " + ", ".join(
        f"in{p}" for p in COVERAGE_LEVELS
    )
    if stored is None:
        ensure_cell_scores(wh, [sid], ctx)
        return wh.arrow(
            "SELECT * EXCLUDE (submission_id) FROM eval.cell_scores WHERE submission_id = ? "
            "ORDER BY cell",
            [sid],
        )
    grid = positional.cell_layout(wh, split)
    params = single_params(submission_row(wh, sid), ctx)
    dense = positional.dense_upload(wh, grid, stored, float32_sigma=params["float32_residuals"])
    with positional.terms(wh, positional.frame(grid, dense, with_pos=True), params) as (view, _):
        rows = wh.arrow(f"SELECT pos, {columns.replace('cell, ', '')} FROM {view}")
    cell = grid.cells(to_numpy(rows["pos"]))
    out = rows.drop(["pos"]).add_column(0, "cell", to_arrow(cell))
    return out.sort_by("cell")


def _insert_cell_scores(
    wh: Warehouse, sub: dict[str, Any], params: dict[str, Any]
) -> tuple[int, int]:
    """Per-cell rows of a submission whose forecasts are in eval.forecasts (050-053);
    returns (cells, cells with density terms)."""
    sid = int(sub["submission_id"])
    first_q, last_q, first_component = wh.one(
        "SELECT coalesce(min(origin_q), 0), coalesce(max(origin_q), -1), min(component) "
        "FROM eval.forecasts WHERE submission_id = ?",
        [sid],
    )
    params = {
        **params,
        "has_sigma": bool(sub["has_sigma"]),
        "first_q": int(first_q),
        "last_q": int(last_q),
    }
    if sub["point_only"]:
        wh.run_step("eval/053_cell_scores_point", params)
    else:
        terms, params = cell_terms(
            wh,
            sub,
            params,
            CELL_VIEW,
            step="eval/049_submission_cells",
            first_component=first_component,
        )
        wh.run_step("eval/050_cell_scores", params, identifiers={"terms": terms})
    cells, density = wh.one(
        "SELECT count(*), count(u) FROM eval.cell_scores WHERE submission_id = ?", [sid]
    )
    return int(cells), int(density)


def ensure_cell_scores(
    wh: Warehouse,
    submission_ids: list[int],
    ctx: Context,
    *,
    recompute: bool = False,
    progress: Progress | None = None,
) -> list[int]:
    """Compute the cell scores of the submissions that have none for this context (all of
    them with recompute=True); returns the ids computed now."""
    current = {
        r[0]
        for r in wh.fetchall(
            "SELECT submission_id FROM eval.cell_score_sets WHERE build_id IS NOT DISTINCT FROM ? "
            f"AND eval_sql_version = ? AND rules = ? AND submission_id {IN_IDS}",
            [ctx.build_id, ctx.eval_sql_version, ctx.rules.name, submission_ids],
        )
    }
    todo = [s for s in submission_ids if recompute or s not in current]
    for n, sid in enumerate(todo, 1):
        t0 = time.perf_counter()
        try:
            cells = compute_cell_scores(wh, sid, ctx)
        except StoreError as exc:
            # its stored upload file is missing or damaged: the others are scored
            record_failure(wh, sid, ctx, str(exc))
            if progress:
                progress(f"cell scores {n}/{len(todo)}: submission {sid} FAILED ({exc})")
            continue
        except duckdb.Error as exc:
            # One submission's failure never blocks the others: it is recorded for this
            # context (runs leave it out) and the rest are scored. The machine's limits
            # and interrupts are not the submission's fault: they stop the run.
            if isinstance(exc, duckdb.InterruptException) or out_of_resources(exc):
                raise
            record_failure(wh, sid, ctx, f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            if progress:
                progress(f"cell scores {n}/{len(todo)}: submission {sid} FAILED ({exc})")
            continue
        if progress:
            progress(
                f"cell scores {n}/{len(todo)}: submission {sid}, {cells:,} cells, "
                f"{time.perf_counter() - t0:.1f}s"
            )
    return todo


def record_failure(wh: Warehouse, sid: int, ctx: Context, error: str) -> None:
    """Record that submission `sid` could not be scored in context `ctx` (its own
    transaction): score runs of this context leave it out (a new build, sql/eval
    version or rule set tries it again)."""
    with wh.transaction():
        forget_cell_scores(wh, [sid])
        wh.execute(
            "INSERT INTO eval.submission_failures VALUES (?, ?, ?, ?, ?, ?)",
            [sid, ctx.build_id, ctx.eval_sql_version, ctx.rules.name, utcnow(), error[:1000]],
        )


def failed_submissions(wh: Warehouse, ctx: Context, submission_ids: list[int]) -> dict[int, str]:
    """{submission_id: error} of these submissions whose scoring failed in context `ctx`."""
    if not submission_ids or not wh.table_exists("eval.submission_failures"):
        return {}
    return {
        int(sid): str(error)
        for sid, error in wh.fetchall(
            "SELECT submission_id, arg_max(error, failed_at) FROM eval.submission_failures "
            "WHERE build_id IS NOT DISTINCT FROM ? AND eval_sql_version = ? AND rules = ? "
            f"AND submission_id {IN_IDS} GROUP BY submission_id",
            [ctx.build_id, ctx.eval_sql_version, ctx.rules.name, submission_ids],
        )
    }


def forget_stale_cell_scores(wh: Warehouse, ctx: Context) -> int:
    """Drop stored cells of another context whose submission is retired or of another
    build (they would never be read again); returns the submissions dropped. Current
    submissions of this build keep theirs until they are recomputed on their next score."""
    ids = [
        r[0]
        for r in wh.fetchall(
            "SELECT c.submission_id FROM eval.cell_score_sets c "
            "JOIN eval.submissions s USING (submission_id) "
            "WHERE s.retired_at IS NOT NULL OR c.build_id IS DISTINCT FROM ?",
            [ctx.build_id],
        )
    ]
    with wh.transaction():
        forget_cell_scores(wh, ids)
    return len(ids)
