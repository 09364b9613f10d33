"""Score runs: common sample, metrics, PIT, Diebold-Mariano, coverage, provenance.

All data semantics are the sql/eval steps; this module orders them. A run reads stored
per-cell scores (proforma.app.scoring.cells, computed once per submission and scoring context),
makes the common sample from each submission's stored gaps (proforma.app.scoring.sample), references
the results of submissions already scored on the same sample (068: eval.run_results, no
copy) and aggregates only the others (065, 070). The run's results are written in one transaction with their
provenance (build, rule set, scoring-SQL version, submission checksums, sample
fingerprint, which results were copied from which run, time).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from proforma.app.scoring import positional
from proforma.app.scoring.cells import (
    POINT_ONLY,
    Context,
    Progress,
    ensure_cell_scores,
    failed_submissions,
    forget_stale_cell_scores,
    register_functions,
    scoring_context,
    single_params,
    submission_row,
)
from proforma.app.scoring.footprints.standard import ensure_standard_footprints
from proforma.app.scoring.footprints.store import Footprint, drop_footprint_temp, get_footprint
from proforma.app.scoring.provenance import current_build, to_json
from proforma.app.scoring.sample import (
    Coverage,
    common_sample,
    ensure_coverage,
    prepare_footprint_cells,
    prepare_run_subs,
)
from proforma.app.scoring.significance import Group, Pair, run_dm_tests
from proforma.app.scoring.submissions.current import resolve_submissions
from proforma.app.scoring.submissions.store import stored_file
from proforma.app.store.warehouse import IN_IDS, Warehouse
from proforma.contracts.errors import NothingToScore, UserError
from proforma.contracts.provenance import utcnow

_RUN_TEMP = (
    "run_agg",
    "run_clusters",
    "run_pit",
    "run_fine",
    "agg_subs",
    "reuse",
    "same_sample_runs",
    "run_subs",
    "sub_coverage",
)


#: A submission enters a footprint's default run (no explicit list) only when it
#: predicts at least this share of the footprint's cells. Models that restrict coverage
#: (chained GBM's 25 items, the oracle's origin sample, a partial upload) are scored on
#: the footprints they cover instead of shrinking everyone's common sample
#: (the paper's "one footprint per group" protocol).
MIN_COVERAGE = 0.95


def score(
    wh: Warehouse,
    footprint: str = "full",
    submissions: Sequence[int | str] | None = None,
    *,
    coherence: bool = True,
    baselines: bool = True,
    min_coverage: float = MIN_COVERAGE,
    full: bool = False,
    progress: Progress | None = None,
    exclude: Sequence[int] = (),
    board: bool | None = None,
) -> int:
    """Score submissions (default: all current ones but `exclude`) on a footprint; returns
    score_run_id.

    The run is the footprint's board (eval.board_runs) when `board`, by default when no
    list is given; a caller that lists every current submission by its own rule (the
    competitor suite's footprints) says board=True.

    The common sample is the footprint's finite truth cells that every submission
    predicts finitely. With no explicit list, only submissions covering at least
    `min_coverage` of the footprint enter the run; the others get a coverage row only.
    Results: eval.metrics, eval.quarter_losses, eval.pit, eval.dm_tests, eval.coverage,
    eval.score_runs (provenance); eval.coherence per submission when the panel's
    standardization tables exist. Cell scores and coverage are computed only for
    submissions that have none in the current scoring context, and results are copied
    for submissions already scored on the same common sample; `full=True` recomputes
    everything from the forecasts (the same numbers, up to the order of summation).

    A submission whose cell scores fail (a value the scoring SQL cannot hold) is left
    out and recorded in eval.submission_failures for this scoring context
    (proforma.app.scoring.cells.failed_submissions); the others are scored all the same, and runs
    of the same context leave it out without trying again.
    """
    with positional.pinned(wh):
        return _score(
            wh,
            footprint,
            submissions,
            coherence=coherence,
            baselines=baselines,
            min_coverage=min_coverage,
            full=full,
            progress=progress,
            exclude=exclude,
            board=submissions is None if board is None else board,
        )


def _score(
    wh: Warehouse,
    footprint: str,
    submissions: Sequence[int | str] | None,
    *,
    coherence: bool,
    baselines: bool,
    min_coverage: float,
    full: bool,
    progress: Progress | None,
    exclude: Sequence[int],
    board: bool,
) -> int:
    wh.require_panel("panel.truth", "panel.firms")
    if baselines and submissions is None:
        from proforma.app.scoring.baselines import run_reference_baselines

        run_reference_baselines(wh)
    ensure_standard_footprints(wh)
    fp = get_footprint(wh, footprint)
    candidates = [s for s in resolve_submissions(wh, submissions) if s not in set(exclude)]
    started, t0 = utcnow(), time.perf_counter()
    ctx = scoring_context(wh)
    candidates = _scored_candidates(wh, ctx, candidates, full=full, progress=progress)
    try:
        n_fp = prepare_footprint_cells(wh, fp)
        coverage = ensure_coverage(wh, fp["footprint_id"], candidates, ctx, n_fp)
        ids = candidates
        if submissions is None and len(candidates) > 1:
            ids = _covering(fp, candidates, coverage, n_fp, min_coverage)
        positional.cell_layout(wh, fp["split"])  # made (if it must be) before the run's transaction
        with wh.transaction():
            run_id = _write_run(
                wh,
                fp,
                ctx,
                ids,
                candidates,
                coverage,
                n_fp,
                full=full,
                started=started,
                t0=t0,
                board=board,
            )
    finally:
        positional.release(wh)
        for name in _RUN_TEMP:
            wh.execute(f"DROP TABLE IF EXISTS {name}")
        drop_footprint_temp(wh)
    if progress:
        progress(
            f"footprint {fp['name']}@{fp['version']}: score run {run_id}, "
            f"{time.perf_counter() - t0:.1f}s"
        )
    _after_run(wh, run_id, ids, board=board, coherence=coherence)
    return run_id


def _scored_candidates(
    wh: Warehouse,
    ctx: Context,
    candidates: list[int],
    *,
    full: bool,
    progress: Progress | None,
) -> list[int]:
    """The candidates whose cell scores exist (made now where missing), less those that
    failed in this scoring context; NothingToScore when none is left."""
    register_functions(wh)
    forget_stale_cell_scores(wh, ctx)
    failed = failed_submissions(wh, ctx, candidates)
    candidates = [s for s in candidates if s not in failed]
    ensure_cell_scores(wh, candidates, ctx, recompute=full, progress=progress)
    failed.update(failed_submissions(wh, ctx, candidates))
    candidates = [s for s in candidates if s not in failed]
    if not candidates:
        raise NothingToScore(
            "No submission left to score: "
            + ("; ".join(f"submission {s} failed ({why})" for s, why in failed.items()) or "none")
        )
    return candidates


def _covering(
    fp: Footprint,
    candidates: list[int],
    coverage: dict[int, Coverage],
    n_fp: int,
    min_coverage: float,
) -> list[int]:
    """The candidates that predict at least `min_coverage` of the footprint (a board's
    members); NothingToScore when none does."""
    ids = [s for s in candidates if n_fp and coverage[s].predicted_cells >= min_coverage * n_fp]
    if not ids:
        raise NothingToScore(
            f"No submission covers {min_coverage:.0%} of footprint "
            f"{fp['name']}@{fp['version']}; name the submissions to score explicitly"
        )
    return ids


def _after_run(wh: Warehouse, run_id: int, ids: list[int], *, board: bool, coherence: bool) -> None:
    """A board run's rank uncertainty, and the members' identity checks."""
    if board:
        # a board shows how sure its ranking is (issue 49): seconds at demo scale
        from proforma.app.scoring.uncertainty import compute_board_uncertainty

        compute_board_uncertainty(wh, run_id)
    if coherence:
        from proforma.app.scoring.coherence import ensure_coherence

        ensure_coherence(wh, ids)


def refresh_board(wh: Warehouse, footprint: str = "full", progress: Progress | None = None) -> int:
    """A board run of `footprint` after a run of named submissions, so that its board
    (eval.board_runs) holds every current submission again whatever scored last; returns
    the board's score_run_id (the one it had when nothing covers the footprint).

    The named run's results are referenced, not recomputed, when the common sample did
    not move (068), so this costs the common sample and the new members' tests. It makes
    no reference baselines and checks no identities: the named run's caller chose those."""
    try:
        return score(wh, footprint, None, coherence=False, baselines=False, progress=progress)
    except NothingToScore:
        from proforma.app.scoring.leaderboard import board_run

        return board_run(wh, footprint)


def footprint_shares(wh: Warehouse, footprint: str, submission_ids: list[int]) -> dict[int, float]:
    """The share of the footprint's scoreable cells each submission predicts (its cell
    scores and coverage are computed and stored as a run would, so the run that may
    follow reuses them); a submission whose scoring failed is left out. A caller that
    scores only footprints a new submission enters (share >= MIN_COVERAGE) rescoring
    nothing else."""
    with positional.pinned(wh):
        return _footprint_shares(wh, footprint, submission_ids)


def score_ahead(
    wh: Warehouse, footprint: str = "full", submissions: Sequence[int | str] | None = None
) -> list[int]:
    """What a later run of `footprint` reuses, made now without a run: the cell scores
    and the footprint coverage of the submissions (default: every current one) and their
    identity checks. A caller that waits for one more submission (the demo, while Forma
    forecasts) scores the others meanwhile, and the run then only adds the newcomer.
    Returns the submissions prepared (a submission whose scoring failed is left out, as
    a run leaves it out)."""
    from proforma.app.scoring.coherence import ensure_coherence

    ids = resolve_submissions(wh, submissions)
    shares = footprint_shares(wh, footprint, ids)
    ensure_coherence(wh, list(shares))
    return list(shares)


def _footprint_shares(wh: Warehouse, footprint: str, submission_ids: list[int]) -> dict[int, float]:
    wh.require_panel("panel.truth", "panel.firms")
    ensure_standard_footprints(wh)
    fp = get_footprint(wh, footprint)
    ctx = scoring_context(wh)
    register_functions(wh)
    ensure_cell_scores(wh, submission_ids, ctx)
    failed = failed_submissions(wh, ctx, submission_ids)
    ids = [s for s in submission_ids if s not in failed]
    try:
        n_fp = prepare_footprint_cells(wh, fp)
        coverage = ensure_coverage(wh, fp["footprint_id"], ids, ctx, n_fp) if ids else {}
    finally:
        drop_footprint_temp(wh)
    return {s: (c.predicted_cells / n_fp if n_fp else 0.0) for s, c in coverage.items()}


def _write_run(
    wh: Warehouse,
    fp: Footprint,
    ctx: Context,
    ids: list[int],
    candidates: list[int],
    coverage: dict[int, Coverage],
    n_fp: int,
    *,
    full: bool,
    started: Any,
    t0: float,
    board: bool,
) -> int:
    """The run's rows (inside the caller's transaction); returns its score_run_id.
    `board`: its members are the footprint's whole current membership (eval.board_runs)."""
    run_id = int(wh.scalar("SELECT nextval('eval.score_run_id_seq')"))
    prepare_run_subs(wh, ids, {s: coverage[s].gaps_stored for s in ids})
    n, fingerprint = _common_sample(wh, fp, ids, coverage, n_fp)
    reused = {} if full else _reusable(wh, fp["footprint_id"], ctx, fingerprint, ids)
    wh.set_params({"score_run_id": run_id})
    # Reused results are referenced, not copied (068, eval.run_results): a run writes
    # rows for its fresh submissions only, whatever the number of submissions before it.
    wh.execute("INSERT INTO eval.run_dm_sources VALUES (?, ?)", [run_id, run_id])
    if reused:
        wh.run_step("eval/068_reused_results")
    fresh = [s for s in ids if s not in reused]
    if fresh:
        _aggregate_fresh(wh, fp, ctx, run_id, fresh, n)
    _record_coverage(wh, run_id, candidates, coverage, n_fp)
    groups = dm_groups(wh, run_id, ids, fresh)
    if groups:
        run_dm_tests(wh, run_id, sorted(ids), groups=groups)
    _record_run(
        wh,
        run_id,
        fp,
        ctx,
        ids,
        n_fp,
        n,
        fingerprint,
        reused,
        started=started,
        t0=t0,
        board=board,
    )
    return run_id


def _common_sample(
    wh: Warehouse, fp: Footprint, ids: list[int], coverage: dict[int, Coverage], n_fp: int
) -> tuple[int, str]:
    """(cells, fingerprint) of the run's common sample; NothingToScore when it is empty,
    with what each submission predicts."""
    n, fingerprint = common_sample(wh, fp["footprint_id"], fp["split"], n_fp)
    if n == 0:
        names = dict(wh.fetchall("SELECT submission_id, name FROM eval.submissions"))
        detail = ", ".join(f"{names[s]}: {coverage[s].predicted_cells:,}" for s in ids)
        raise NothingToScore(
            f"The common sample is empty: footprint {fp['name']}@{fp['version']} has "
            f"{n_fp:,} scoreable cells; cells predicted per submission: {detail}"
        )
    return n, fingerprint


def _aggregate_fresh(
    wh: Warehouse, fp: Footprint, ctx: Context, run_id: int, fresh: list[int], n: int
) -> None:
    """The run's sums and metrics of the submissions it does not reuse: stored cell
    scores by their tables (065 with a density, 066 points only), uploads kept in the
    store by position."""
    wh.set_params({"agg_ids": fresh})
    wh.execute(
        "CREATE OR REPLACE TEMP TABLE agg_subs AS SELECT r.submission_id, r.is_quantile, "
        f"{POINT_ONLY} AS point_only FROM run_subs r "
        "JOIN eval.submissions s USING (submission_id) "
        "WHERE list_contains(getvariable('agg_ids'), r.submission_id)"
    )
    wh.run_step("eval/064_run_aggregates")
    stored = {s: rec for s in fresh if (rec := stored_file(wh, s)) is not None}
    kinds = {
        bool(p)
        for (p,) in wh.fetchall(
            "SELECT DISTINCT point_only FROM agg_subs WHERE NOT list_contains(?, submission_id)",
            [list(stored)],
        )
    }
    if False in kinds:
        wh.run_step("eval/065_cell_aggregates")
    if True in kinds:
        wh.run_step("eval/066_cell_aggregates_point")
    if stored:
        _aggregate_by_position(wh, fp, ctx, stored, n)
    wh.run_step("eval/070_metrics", {"score_run_id": run_id})


def _record_coverage(
    wh: Warehouse, run_id: int, candidates: list[int], coverage: dict[int, Coverage], n_fp: int
) -> None:
    # one statement for every candidate: an execute each made a run's cost grow with the
    # submissions (docs/scoring.md, "Figures behind the code's choices")
    got = [coverage[sid].predicted_cells for sid in candidates]
    wh.execute(
        "INSERT INTO eval.coverage SELECT ?, unnest(?::INTEGER[]), ?, unnest(?::BIGINT[]), "
        "unnest(?::DOUBLE[])",
        [
            run_id,
            list(candidates),
            n_fp,
            got,
            [g / n_fp if n_fp else None for g in got],
        ],
    )


def _record_run(
    wh: Warehouse,
    run_id: int,
    fp: Footprint,
    ctx: Context,
    ids: list[int],
    n_fp: int,
    n: int,
    fingerprint: str,
    reused: dict[int, int],
    *,
    started: Any,
    t0: float,
    board: bool,
) -> None:
    """The run's eval.score_runs row: its footprint, members, build, scoring-SQL
    version, rule set, the submissions' checksums, its times, what it reused."""
    checksums = dict(
        wh.fetchall(
            "SELECT CAST(submission_id AS VARCHAR), checksum FROM eval.submissions "
            f"WHERE submission_id {IN_IDS}",
            [ids],
        )
    )
    build = current_build(wh)
    wh.execute(
        "INSERT INTO eval.score_runs BY NAME SELECT ? AS score_run_id, ? AS footprint_id, "
        "? AS footprint_name, ? AS footprint_version, ? AS submission_ids, "
        "? AS footprint_cells, ? AS n_cells, ? AS build_id, ? AS build, "
        "? AS eval_sql_version, ? AS submission_checksums, ? AS started_at, ? AS finished_at, "
        "? AS elapsed_s, ? AS rules, ? AS sample_fingerprint, ? AS reused, ? AS board",
        [
            run_id,
            fp["footprint_id"],
            fp["name"],
            fp["version"],
            ids,
            n_fp,
            n,
            ctx.build_id,
            to_json(build),
            ctx.eval_sql_version,
            to_json(checksums),
            started,
            utcnow(),
            time.perf_counter() - t0,
            ctx.rules.name,
            fingerprint,
            to_json({str(s): r for s, r in reused.items()}),
            board,
        ],
    )


def _aggregate_by_position(
    wh: Warehouse, fp: Footprint, ctx: Context, stored: dict[int, dict[str, Any]], n: int
) -> None:
    """run_agg rows of the run's uploads kept in the store (067, 069 for a point file):
    their cells on the common sample (of `n` cells), met by position in the footprint
    split's layout."""
    layout = positional.cell_layout(wh, fp["split"])
    common = layout.relation_mask(wh, "common_cells", n)
    for sid, rec in stored.items():
        params = {**single_params(submission_row(wh, sid), ctx), **layout.keys_params()}
        dense = positional.dense_upload(wh, layout, rec, float32_sigma=params["float32_residuals"])
        step = (
            "067_cell_aggregates_positional"
            if rec["sigma"]
            else "069_cell_aggregates_positional_point"
        )
        # span by span: the sums of a group are all in one span (positional.spans)
        for _ in positional.span_terms(wh, layout, dense, params, common, with_row=True):
            wh.run_step(f"eval/{step}", params)


def dm_groups(
    wh: Warehouse, run_id: int, ids: Sequence[int], fresh: Sequence[int]
) -> dict[Group, list[Pair]]:
    """The Diebold-Mariano pairs run `run_id` still lacks, per (loss, horizon) group.

    A run holds the tests the board shows, not every pair (k^2 / 2 of them, which made
    each upload's run grow with the board): every member against each group's leader
    (lowest mean loss, MSE or MAE, pooled or per horizon: the leaderboard's dm_vs_leader
    and the snapshot's dm_tests; every member tied at the lowest counts) and against every
    in-house submission (source other than 'upload': the models the report compares,
    a set that does not grow with the uploads), so all pairs of in-house submissions too.
    Tests already visible in the run (eval.dm_tests: earlier runs on the same sample) are
    not repeated: a fresh submission has none, so its pairs with the hubs are listed
    outright, and a hub that was already one is checked by a count of its tests against
    the reused members; only a hub new to its group (a new leader) is looked up pair by
    pair. Any other pair is tested on demand by the leaderboard (`dm_test_rows`)."""
    if len(ids) < 2:
        return {}
    members = sorted(int(s) for s in ids)
    new = {int(s) for s in fresh}
    inhouse = {
        int(s)
        for (s,) in wh.fetchall(
            "SELECT submission_id FROM eval.submissions "
            f"WHERE submission_id {IN_IDS} "
            "AND source <> 'upload'",
            [members],
        )
    }
    scored, hubs = _group_hubs(wh, run_id, members, inhouse)
    every_hub = sorted(set().union(*hubs.values())) if hubs else []
    counted = (
        _hub_test_counts(wh, run_id, every_hub) if len(new) < len(members) and every_hub else {}
    )
    out: dict[Group, list[Pair]] = {}
    for (loss, h), group_hubs in hubs.items():
        want = _pairs_lacking(wh, run_id, loss, h, group_hubs, scored[(loss, h)], new, counted)
        if want:
            out[(loss, h)] = sorted(want)
    return out


#: The run's tests (the view eval.dm_tests): rows of its sources between two members,
#: filtered by `{where}` over eval.dm_test_rows d; binds the run's id twice.
_RUN_TESTS = (
    "WITH src AS (SELECT from_run FROM eval.run_dm_sources WHERE score_run_id = ?), "
    "mem AS (SELECT submission_id FROM eval.run_results WHERE score_run_id = ?), "
    "t AS (SELECT d.submission_a, d.submission_b, d.loss, d.horizon "
    "FROM src JOIN eval.dm_test_rows d ON d.score_run_id = src.from_run "
    "WHERE {where} AND d.submission_a IN (SELECT submission_id FROM mem) "
    "AND d.submission_b IN (SELECT submission_id FROM mem)) "
)


def _group_hubs(
    wh: Warehouse, run_id: int, members: list[int], inhouse: set[int]
) -> tuple[dict[Group, set[int]], dict[Group, set[int]]]:
    """Per (loss, horizon) group: the members with the loss, and the hubs (the leaders,
    every member tied at the lowest mean loss, and the in-house members)."""
    # This run's references first (eval.run_results, eval.run_dm_sources: a few hundred
    # rows), then the stored rows they point at: the views eval.metrics and eval.dm_tests
    # give the same rows, but the leaders and the hubs' test counts are reduced to one row
    # per group here, in SQL, instead of some 17,000 member rows read back at k = 500.
    scored: dict[Group, set[int]] = {}
    hubs: dict[Group, set[int]] = {}
    for loss, h, group_hubs, group_scored in wh.fetchall(
        "WITH refs AS (SELECT submission_id, from_run FROM eval.run_results "
        "WHERE score_run_id = ?), "
        "m AS (SELECT l.loss, coalesce(m.horizon, 0) AS horizon, m.submission_id, "
        "CASE l.loss WHEN 'squared' THEN m.mse ELSE m.mae END AS v "
        "FROM eval.metric_rows m "
        "JOIN refs r ON m.score_run_id = r.from_run AND m.submission_id = r.submission_id "
        "CROSS JOIN (VALUES ('squared'), ('absolute')) l(loss) "
        "WHERE m.level IN ('global', 'horizon')), "
        "w AS (SELECT loss, horizon, submission_id, "
        "v = min(v) OVER (PARTITION BY loss, horizon) AS lead FROM m WHERE v IS NOT NULL) "
        "SELECT loss, horizon, "
        "list(DISTINCT submission_id) FILTER (lead OR list_contains(?, submission_id)), "
        "CASE WHEN count(DISTINCT submission_id) = ? THEN NULL "
        "ELSE list(DISTINCT submission_id) END "
        "FROM w GROUP BY ALL",
        [run_id, sorted(inhouse), len(members)],
    ):
        group = (str(loss), int(h))
        # every member scored (the usual case) comes back as NULL: the run's members
        scored[group] = set(members) if group_scored is None else {int(s) for s in group_scored}
        if group_hubs:
            hubs[group] = {int(s) for s in group_hubs}
    return scored, hubs


def _hub_test_counts(
    wh: Warehouse, run_id: int, every_hub: list[int]
) -> dict[tuple[int, str, int], int]:
    """(hub, loss, horizon) -> the tests of that hub the run already shows."""
    return {
        (int(x), str(loss), int(h)): int(n)
        for x, loss, h, n in wh.fetchall(
            _RUN_TESTS.format(
                where="(list_contains(?, d.submission_a) OR list_contains(?, d.submission_b))"
            )
            + "SELECT x, loss, horizon, count(*) FROM ("
            "SELECT submission_a AS x, loss, horizon FROM t "
            "WHERE list_contains(?, submission_a) UNION ALL "
            "SELECT submission_b, loss, horizon FROM t "
            "WHERE list_contains(?, submission_b)) GROUP BY ALL",
            [run_id, run_id, every_hub, every_hub, every_hub, every_hub],
        )
    }


def _pairs_lacking(
    wh: Warehouse,
    run_id: int,
    loss: str,
    h: int,
    group_hubs: set[int],
    group_members: set[int],
    new: set[int],
    counted: dict[tuple[int, str, int], int],
) -> set[Pair]:
    """One group's pairs with a hub that the run does not show yet: a fresh member's
    pairs outright, a hub's pairs with the reused members when its count falls short."""
    reused = [s for s in group_members if s not in new]
    reused_set = set(reused)
    want: set[Pair] = set()
    for x in group_hubs:
        others = [s for s in (new if x not in new else group_members) if s != x]
        want.update((min(x, y), max(x, y)) for y in others if y in group_members)
        partners = len(reused) - (x in reused_set)
        if x in new or counted.get((x, loss, h), 0) >= partners:
            continue
        have = {
            int(y)
            for (y,) in wh.fetchall(
                _RUN_TESTS.format(
                    where="d.loss = ? AND d.horizon = ? AND ? IN (d.submission_a, d.submission_b)"
                )
                + "SELECT CASE WHEN submission_a = ? THEN submission_b ELSE submission_a END "
                "FROM t",
                [run_id, run_id, loss, h, x, x],
            )
        }
        want.update((min(x, y), max(x, y)) for y in reused if y != x and y not in have)
    return want


def _reusable(
    wh: Warehouse, footprint_id: int, ctx: Context, fingerprint: str, ids: list[int]
) -> dict[int, int]:
    """{submission: earlier run} for the run's submissions already scored on the same
    common sample in this scoring context (temp tables same_sample_runs and reuse for 068)."""
    wh.execute(
        "CREATE OR REPLACE TEMP TABLE same_sample_runs AS "
        "SELECT score_run_id, submission_ids FROM eval.score_runs "
        "WHERE footprint_id = ? AND build_id IS NOT DISTINCT FROM ? AND eval_sql_version = ? "
        "AND rules = ? AND sample_fingerprint = ?",
        [footprint_id, ctx.build_id, ctx.eval_sql_version, ctx.rules.name, fingerprint],
    )
    wh.execute(
        "CREATE OR REPLACE TEMP TABLE reuse AS "
        "SELECT s.submission_id, max(r.score_run_id) AS from_run "
        "FROM (SELECT unnest(?::INTEGER[]) AS submission_id) s "
        "JOIN (SELECT score_run_id, unnest(submission_ids) AS submission_id "
        "FROM same_sample_runs) r USING (submission_id) "
        "GROUP BY s.submission_id",
        [ids],
    )
    # results stored before their per-(firm, origin quarter) sums were kept (V0180) are
    # computed again, once, so that every board has its rank uncertainty
    wh.execute(
        "DELETE FROM reuse u WHERE NOT EXISTS (SELECT 1 FROM eval.run_results r "
        "JOIN eval.cluster_loss_rows c "
        "ON c.score_run_id = r.from_run AND c.submission_id = r.submission_id "
        "WHERE r.score_run_id = u.from_run AND r.submission_id = u.submission_id)"
    )
    return {int(s): int(r) for s, r in wh.fetchall("SELECT submission_id, from_run FROM reuse")}


def run_summary(wh: Warehouse, score_run_id: int) -> dict[str, Any]:
    """The score run's record with each submission's name and coverage."""
    rows = wh.arrow(
        "SELECT * FROM eval.score_runs WHERE score_run_id = ?", [score_run_id]
    ).to_pylist()
    if not rows:
        raise UserError(f"No score run {score_run_id}")
    run = rows[0]
    run["coverage"] = wh.arrow(
        "SELECT c.submission_id, s.name, c.predicted_cells, c.footprint_cells, c.coverage "
        "FROM eval.coverage c JOIN eval.submissions s USING (submission_id) "
        "WHERE c.score_run_id = ? ORDER BY c.submission_id",
        [score_run_id],
    ).to_pylist()
    return run
