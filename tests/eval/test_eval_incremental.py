"""Incremental scoring: a new submission computes only its own cells, results of the
others are copied from an earlier run on the same common sample, and every number equals
a full re-score from the forecasts."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring

RESULTS = {
    "metrics": (
        "submission_id, level, horizon, item_id, statement",
        (
            "n, r2, mse, mae, nll, crps, z2, cov50, cov80, cov90, cov95, sum_y, sum_y2, "
            "sse, sae, n_density"
        ),
    ),
    "quarter_losses": ("submission_id, horizon, origin_q", "n, sum_sq, sum_abs"),
    "pit": ("submission_id, bin", "n, share"),
    "dm_tests": (
        ("least(submission_a, submission_b), greatest(submission_a, submission_b), loss, horizon"),
        (
            "n_quarters, bandwidth, "
            "CASE WHEN submission_a < submission_b THEN mean_diff ELSE -mean_diff END, "
            "CASE WHEN submission_a < submission_b THEN dm_stat ELSE -dm_stat END, p_value"
        ),
    ),
    "coverage": ("submission_id", "footprint_cells, predicted_cells, coverage"),
}


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "incremental")
    yield w
    w.close()


def _rows(wh, table: str, run: int) -> list[tuple]:
    keys, values = RESULTS[table]
    return wh.fetchall(
        f"SELECT {keys}, {values} FROM eval.{table} WHERE score_run_id = ? ORDER BY {keys}", [run]
    )


def _assert_same_results(wh, run: int, full: int) -> None:
    for table in RESULTS:
        got, want = _rows(wh, table, run), _rows(wh, table, full)
        assert len(got) == len(want) > 0, table
        for g, w in zip(got, want, strict=True):
            assert [x for x in g if not isinstance(x, float)] == [
                x for x in w if not isinstance(x, float)
            ], table
            assert [x for x in g if isinstance(x, float)] == pytest.approx(
                [x for x in w if isinstance(x, float)], rel=1e-12, abs=1e-15, nan_ok=True
            ), table


def _run(wh, run: int) -> dict:
    row = wh.arrow("SELECT * FROM eval.score_runs WHERE score_run_id = ?", [run]).to_pylist()[0]
    row["reused"] = {int(k): v for k, v in json.loads(row["reused"] or "{}").items()}
    return row


def _computed_at(wh) -> dict[int, object]:
    return dict(wh.fetchall("SELECT submission_id, computed_at FROM eval.cell_score_sets"))


def test_each_upload_scores_only_its_own_cells_and_matches_a_full_rescore(wh):
    cells = truth_cells(wh)
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(5)

    def noisy(scale):
        return actual + rng.normal(0, scale, actual.size)

    ids = [
        scoring.ingest_forecasts(
            wh, "gauss", forecasts_from(cells, noisy(0.3), rng.uniform(0.2, 0.6, actual.size))
        ),
        scoring.ingest_forecasts(
            wh,
            "laplace mix",
            pa.concat_tables(
                [
                    forecasts_from(
                        cells, noisy(0.3), rng.uniform(0.2, 0.6, actual.size), component=j
                    )
                    for j in range(2)
                ]
            ),
            family="laplace",
        ),
        scoring.ingest_forecasts(wh, "points", forecasts_from(cells, noisy(0.5))),
    ]
    first = scoring.score(wh, "full", coherence=False, baselines=False)
    assert _run(wh, first)["reused"] == {}
    computed = _computed_at(wh)

    # A fourth submission predicting every cell leaves the sample as it was: the others'
    # results are copied, only its own cells are scored.
    ids.append(scoring.ingest_forecasts(wh, "fourth", forecasts_from(cells, noisy(0.4))))
    second = scoring.score(wh, "full", coherence=False, baselines=False)
    run = _run(wh, second)
    assert run["sample_fingerprint"] == _run(wh, first)["sample_fingerprint"]
    assert run["reused"] == {s: first for s in ids[:3]}
    assert {s: t for s, t in _computed_at(wh).items() if s in computed} == computed
    assert run["rules"] == "paper"  # no build records a rule set here
    rescore = scoring.score(wh, "full", coherence=False, baselines=False, full=True)
    assert _run(wh, rescore)["reused"] == {}
    _assert_same_results(wh, second, rescore)

    # One that misses a few cells shrinks the sample: everyone is aggregated again.
    mu = noisy(0.2)
    mu[[3, 40, 41]] = np.nan
    gappy = scoring.ingest_forecasts(wh, "gappy", forecasts_from(cells, mu))
    third = scoring.score(wh, "full", coherence=False, baselines=False)
    assert _run(wh, third)["n_cells"] == actual.size - 3
    assert _run(wh, third)["reused"] == {}
    _assert_same_results(
        wh, third, scoring.score(wh, "full", coherence=False, baselines=False, full=True)
    )

    # Replacing it by a complete one restores the earlier sample and its results.
    scoring.ingest_forecasts(wh, "gappy", forecasts_from(cells, noisy(0.2)))
    assert not wh.fetchall("SELECT 1 FROM eval.cell_scores WHERE submission_id = ?", [gappy])
    fourth = scoring.score(wh, "full", coherence=False, baselines=False)
    assert _run(wh, fourth)["reused"] == {s: rescore for s in ids}
    _assert_same_results(
        wh, fourth, scoring.score(wh, "full", coherence=False, baselines=False, full=True)
    )


def test_a_partial_submission_is_intersected_cell_by_cell(wh):
    """A submission predicting under half the footprint stores no gaps; explicit runs
    intersect its cells, and the results equal a full re-score."""
    cells = truth_cells(wh)
    few = cells.filter(pa.compute.less_equal(cells["horizon"], 4))
    part = scoring.ingest_forecasts(
        wh, "four horizons", forecasts_from(few, few["actual"].to_numpy() + 0.1)
    )
    other = wh.scalar("SELECT submission_id FROM eval.submissions WHERE name = 'gauss'")
    run = scoring.score(wh, "full", [other, part], coherence=False)
    assert not wh.scalar(
        "SELECT gaps_stored FROM eval.footprint_coverage WHERE submission_id = ?", [part]
    )
    assert _run(wh, run)["n_cells"] == few.num_rows
    _assert_same_results(
        wh, run, scoring.score(wh, "full", [other, part], coherence=False, full=True)
    )


def test_a_sample_without_gaps_is_the_footprint_itself(wh):
    """With no gap among the run's submissions, common_cells is a view of the footprint's
    cells (no copy); it holds the cells, and has the fingerprint, that 058 computes."""
    from proforma.app.scoring.cells import ensure_cell_scores, scoring_context
    from proforma.app.scoring.footprints.store import drop_footprint_temp, get_footprint
    from proforma.app.scoring.sample import (
        common_sample,
        ensure_coverage,
        prepare_footprint_cells,
        prepare_run_subs,
    )

    cells = truth_cells(wh)
    sid = scoring.ingest_forecasts(wh, "covers all", forecasts_from(cells, cells["actual"]))
    fp = get_footprint(wh, "full")
    ctx = scoring_context(wh)
    ensure_cell_scores(wh, [sid], ctx)
    prepare_footprint_cells(wh, fp)
    coverage = ensure_coverage(wh, fp["footprint_id"], [sid], ctx)
    prepare_run_subs(wh, [sid], {sid: coverage[sid].gaps_stored})
    try:
        whole = common_sample(wh, fp["footprint_id"])
        kind = wh.scalar(
            "SELECT table_type FROM information_schema.tables WHERE table_name = 'common_cells'"
        )
        assert kind == "VIEW" and whole[0] == cells.num_rows
        wh.execute("DROP VIEW common_cells")
        # 058's other input, the scored cells of uploads kept in the store (none here)
        wh.execute("CREATE TEMP TABLE run_stored_cells (submission_id INTEGER, cell BIGINT)")
        wh.run_step("eval/058_common_cells", {"footprint_id": fp["footprint_id"]})
        n, digest = wh.one("SELECT count(*), coalesce(bit_xor(hash(cell)), 0) FROM common_cells")
        assert whole == (n, f"{int(n)}:{int(digest):016x}")
    finally:
        wh.execute("DROP TABLE IF EXISTS run_stored_cells")
        drop_footprint_temp(wh)


def test_a_run_references_reused_results_without_copying_them(wh):
    """Issue 34, item 3: a run stores rows only for the submissions it aggregates; the
    others' results (metrics, quarter losses, PIT, Diebold-Mariano tests) are referenced
    (eval.run_results, eval.run_dm_sources), and each pair is tested once per run, also
    after a full re-score broke the chain of same-sample runs."""
    cells = truth_cells(wh)
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(11)
    names = ["ref a", "ref b", "ref c", "ref d"]
    sig = np.full(actual.size, 0.4)
    ids = [
        scoring.ingest_forecasts(
            wh, n, forecasts_from(cells, actual + rng.normal(0, 0.3, actual.size), sig)
        )
        for n in names[:2]
    ]
    first = scoring.score(wh, "full", ids, coherence=False)

    def stored(table: str) -> int:
        return wh.scalar(f"SELECT count(*) FROM eval.{table}")

    before = {t: stored(t) for t in ("metric_rows", "quarter_loss_rows", "pit_rows")}
    ids.append(
        scoring.ingest_forecasts(
            wh, names[2], forecasts_from(cells, actual + rng.normal(0, 0.3, actual.size), sig)
        )
    )
    second = scoring.score(wh, "full", ids, coherence=False)
    assert _run(wh, second)["reused"] == {s: first for s in ids[:2]}
    # Only the new submission's rows were written.
    per_sub = wh.scalar(
        "SELECT count(*) FROM eval.metric_rows WHERE score_run_id = ? AND submission_id = ?",
        [second, ids[2]],
    )
    assert per_sub > 0
    assert stored("metric_rows") == before["metric_rows"] + per_sub
    assert not wh.scalar(
        "SELECT count(*) FROM eval.metric_rows WHERE score_run_id = ? AND submission_id <> ?",
        [second, ids[2]],
    )
    # The views show every submission's results in the new run.
    assert {
        r[0]
        for r in wh.fetchall(
            "SELECT DISTINCT submission_id FROM eval.metrics WHERE score_run_id = ?", [second]
        )
    } == set(ids)

    def pairs(run: int) -> list[tuple]:
        return wh.fetchall(
            "SELECT least(submission_a, submission_b), greatest(submission_a, submission_b), "
            "loss, horizon, count(*) FROM eval.dm_tests WHERE score_run_id = ? GROUP BY ALL "
            "ORDER BY ALL",
            [run],
        )

    got = pairs(second)
    assert {(a, b) for a, b, *_ in got} == {(a, b) for a in ids for b in ids if a < b}
    assert all(r[-1] == 1 for r in got)
    # A full re-score, then an incremental run: every pair once, the same numbers.
    full = scoring.score(wh, "full", ids, coherence=False, full=True)
    ids.append(
        scoring.ingest_forecasts(
            wh, names[3], forecasts_from(cells, actual + rng.normal(0, 0.3, actual.size), sig)
        )
    )
    third = scoring.score(wh, "full", ids, coherence=False)
    assert _run(wh, third)["reused"] == {s: full for s in ids[:3]}
    got = pairs(third)
    assert {(a, b) for a, b, *_ in got} == {(a, b) for a in ids for b in ids if a < b}
    assert all(r[-1] == 1 for r in got)
    _assert_same_results(wh, third, scoring.score(wh, "full", ids, coherence=False, full=True))


def test_scoring_ahead_leaves_the_run_only_the_newcomer(tmp_path_factory):
    """score_ahead stores the cell scores and coverage of the current submissions without
    a run; the run that follows, after one more submission, computes only the newcomer's
    cells, and its results equal a full re-score."""
    wh = module_warehouse(tmp_path_factory, "ahead")
    try:
        cells = truth_cells(wh)
        actual = cells["actual"].to_numpy()
        rng = np.random.default_rng(9)
        early = [
            scoring.ingest_forecasts(
                wh,
                name,
                forecasts_from(cells, actual + rng.normal(0, 0.3, actual.size), sigma),
            )
            for name, sigma in (("gauss", rng.uniform(0.2, 0.6, actual.size)), ("points", None))
        ]
        assert sorted(scoring.score_ahead(wh)) == sorted(early)
        assert not wh.scalar("SELECT count(*) FROM eval.score_runs")
        prepared = _computed_at(wh)
        assert set(prepared) == set(early)
        assert wh.scalar("SELECT count(DISTINCT submission_id) FROM eval.footprint_coverage") == 2

        late = scoring.ingest_forecasts(wh, "late", forecasts_from(cells, actual + 0.1))
        run = scoring.score(wh, "full", coherence=False, baselines=False)
        assert {s: t for s, t in _computed_at(wh).items() if s in prepared} == prepared
        assert set(_computed_at(wh)) == {*early, late}
        _assert_same_results(
            wh, run, scoring.score(wh, "full", coherence=False, baselines=False, full=True)
        )
    finally:
        wh.close()
