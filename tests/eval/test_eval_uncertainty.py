"""Issue 49, item 2: a board's rank uncertainty. The two-way bootstrap against a direct
implementation (cells expanded from the drawn firms and quarters), its width against an
iid bootstrap where cells are dependent, the model confidence set against arch's MCS on
the same replicates, and a board run's stored clusters, intervals and sets."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring
from proforma.app.scoring.bootstrap import (
    model_confidence_set,
    percentile_interval,
    probability_best,
    replicate_sums,
    two_way_draws,
)


def _panel(rng, n_firms=7, n_quarters=10, per=3, firm_sd=1.0, quarter_sd=1.0):
    """Cells (firm, quarter, loss) whose losses share a firm and a quarter effect."""
    firm = np.repeat(np.arange(n_firms), n_quarters * per)
    quarter = np.tile(np.repeat(np.arange(n_quarters), per), n_firms)
    loss = (
        1.0
        + rng.normal(0, firm_sd, n_firms)[firm] ** 2
        + rng.normal(0, quarter_sd, n_quarters)[quarter] ** 2
        + rng.normal(0, 0.3, firm.size) ** 2
    )
    return firm, quarter, loss


def _cluster(firm, quarter, values, n_firms, n_quarters):
    out = np.zeros((n_firms, n_quarters, values.shape[1]))
    np.add.at(out, (firm, quarter), values)
    return out


def test_replicates_equal_a_direct_expansion_of_the_draws():
    rng = np.random.default_rng(1)
    firm, quarter, loss = _panel(rng)
    F, T = 7, 10
    sums = _cluster(firm, quarter, np.column_stack([np.ones_like(loss), loss]), F, T)
    draws = two_way_draws(F, T, replications=40, block_size=3, seed=5)
    got = replicate_sums(sums, draws)
    mse = got[:, 1] / got[:, 0]
    for b in range(40):
        # the cells of every drawn (firm, quarter) pair, as many times as drawn
        cells = [
            loss[(firm == f) & (quarter == t)] for f in draws.firms[b] for t in draws.quarters[b]
        ]
        direct = np.concatenate(cells)
        assert got[b, 0] == direct.size
        assert mse[b] == pytest.approx(direct.mean(), rel=1e-12)
    # blocks of consecutive quarters (circular), cut to T
    q = draws.quarters[0]
    assert q.size == T and all((q[i + 1] - q[i]) % T == 1 for i in (0, 1, 3, 4, 6, 7))
    # deterministic for a seed, different for another
    again = two_way_draws(F, T, replications=40, block_size=3, seed=5)
    assert np.array_equal(again.firms, draws.firms) and np.array_equal(
        again.quarters, draws.quarters
    )
    assert not np.array_equal(two_way_draws(F, T, 40, 3, seed=6).firms, draws.firms)
    lo, hi = percentile_interval(mse[:, None], 0.9)
    assert lo[0] == pytest.approx(np.quantile(mse, 0.05)) and hi[0] == pytest.approx(
        np.quantile(mse, 0.95)
    )


def test_two_way_interval_is_wider_than_iid_where_cells_are_dependent():
    rng = np.random.default_rng(2)
    F, T, per = 30, 20, 20
    firm, quarter, loss = _panel(rng, F, T, per)
    sums = _cluster(firm, quarter, np.column_stack([np.ones_like(loss), loss]), F, T)
    reps = replicate_sums(sums, two_way_draws(F, T, 400, 4, seed=3))
    two_way = np.subtract(*percentile_interval((reps[:, 1] / reps[:, 0])[:, None], 0.95)[::-1])
    iid_draws = np.random.default_rng(4).integers(0, loss.size, (400, loss.size))
    iid = np.subtract(*percentile_interval(loss[iid_draws].mean(1)[:, None], 0.95)[::-1])
    assert two_way[0] > 3 * iid[0]
    # and about as wide as iid where the cells are independent
    firm, quarter, loss = _panel(rng, F, T, per, firm_sd=0.0, quarter_sd=0.0)
    sums = _cluster(firm, quarter, np.column_stack([np.ones_like(loss), loss]), F, T)
    reps = replicate_sums(sums, two_way_draws(F, T, 400, 4, seed=3))
    two_way = np.subtract(*percentile_interval((reps[:, 1] / reps[:, 0])[:, None], 0.95)[::-1])
    iid = np.subtract(*percentile_interval(loss[iid_draws].mean(1)[:, None], 0.95)[::-1])
    assert 0.5 < two_way[0] / iid[0] < 2.0


def test_probability_best_counts_first_places():
    values = np.array([[0.1, 0.3, np.nan], [0.4, 0.2, 0.0], [0.5, 0.5, 0.1]])
    assert probability_best(values, higher_is_better=True).tolist() == pytest.approx(
        [2 / 3, 1 / 3, 0.0]
    )
    assert probability_best(values, higher_is_better=False).tolist() == pytest.approx(
        [1 / 3, 0.0, 2 / 3]
    )


@pytest.mark.parametrize("statistic", ["R", "max"])
def test_confidence_set_equals_arch_on_its_replicates(statistic):
    arch_mcs = pytest.importorskip("arch.bootstrap").MCS
    rng = np.random.default_rng(7)
    T, k = 60, 6
    common = rng.normal(size=(T, 1))
    losses = 1.0 + np.arange(k) * 0.08 + common + rng.normal(0, 0.5, (T, k))
    mcs = arch_mcs(losses, size=0.1, reps=300, block_size=4, method=statistic, seed=11)
    mcs.compute()
    boot = np.stack([losses[i].mean(0) for i in mcs._bootstrap_indices])
    got = model_confidence_set(losses.mean(0), boot, 0.1, statistic)
    want = mcs.pvalues["Pvalue"].sort_index().to_numpy()
    assert got.pvalues == pytest.approx(want, abs=1e-12)
    assert sorted(np.flatnonzero(got.included).tolist()) == sorted(mcs.included)
    assert 0 in mcs.included and not got.included.all()


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "uncertainty")
    yield w
    w.close()


def test_a_board_run_stores_clusters_intervals_and_sets(wh, tmp_path):
    cells = truth_cells(wh)
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(9)
    sig = np.full(actual.size, 0.5)
    house = scoring.ingest_forecasts(
        wh, "house", forecasts_from(cells, actual + rng.normal(0, 0.4, actual.size), sig)
    )
    worse = scoring.ingest_forecasts(
        wh, "worse", forecasts_from(cells, actual + rng.normal(0, 2.0, actual.size), sig)
    )
    # an upload kept in the store: its clusters come from the positional path
    path = tmp_path / "up.parquet"
    pq.write_table(
        wh.arrow(
            "SELECT f.gvkey AS firm, i.item AS target, qend(t.origin_q) AS origin, "
            "CAST(t.horizon AS INTEGER) AS horizon, t.actual + 0.3 AS prediction "
            "FROM panel.truth t JOIN panel.firms f USING (firm_id) "
            "JOIN ref.items i USING (item_id) WHERE t.split = 'test'"
        ),
        path,
    )
    up = scoring.ingest_parquet(wh, path, "up")
    run = scoring.score(wh, "full", coherence=False, baselines=False)
    # the clusters add up to each member's global sums, for both paths
    for sid in (house, worse, up):
        got = wh.fetchone(
            "SELECT sum(n), sum(sse), sum(sae) FROM eval.cluster_losses "
            "WHERE score_run_id = ? AND submission_id = ?",
            [run, sid],
        )
        want = wh.fetchone(
            "SELECT n, sse, sae FROM eval.metrics WHERE score_run_id = ? AND submission_id = ? "
            "AND level = 'global'",
            [run, sid],
        )
        assert (
            got[0] == want[0]
            and got[1] == pytest.approx(want[1])
            and got[2] == pytest.approx(want[2])
        )
    # a firm's clusters equal a hand-made filter of the member's cells
    firm, q = wh.fetchone(
        "SELECT firm_id, origin_q FROM eval.cluster_losses WHERE score_run_id = ? LIMIT 1", [run]
    )
    mask = (cells["firm_id"].to_numpy() == firm) & (cells["origin_q"].to_numpy() == q)
    mask &= np.isfinite(cells["baseline"].to_numpy(zero_copy_only=False))
    stored = wh.fetchone(
        "SELECT n, sae FROM eval.cluster_losses WHERE score_run_id = ? AND submission_id = ? "
        "AND firm_id = ? AND origin_q = ?",
        [run, up, firm, q],
    )
    assert stored[0] == mask.sum() and stored[1] == pytest.approx(0.3 * mask.sum(), rel=1e-6)

    record = wh.arrow("SELECT * FROM eval.uncertainty_runs WHERE score_run_id = ?", [run])
    rec = record.to_pylist()[0]
    assert (rec["seed"], rec["replications"], rec["block_size"]) == (20260049, 1000, 4)
    assert rec["n_firms"] == 12 and rec["n_quarters"] == 20
    for sid, metric, est, lo, hi, exact in wh.fetchall(
        "SELECT i.submission_id, i.metric, i.estimate, i.lo, i.hi, "
        "CASE i.metric WHEN 'r2' THEN m.r2 WHEN 'mse' THEN m.mse WHEN 'mae' THEN m.mae "
        "ELSE m.crps END "
        "FROM eval.metric_intervals i JOIN eval.metrics m USING (score_run_id, submission_id) "
        "WHERE i.score_run_id = ? AND m.level = 'global'",
        [run],
    ):
        assert est == pytest.approx(exact), (sid, metric)
        assert lo - 1e-9 <= est <= hi + 1e-9, (sid, metric)  # (a constant error: lo = hi)
    sets = wh.fetchall(
        "SELECT track, scope, sum(p_best), list(submission_id) FILTER (in_mcs), "
        "list(submission_id) FROM eval.rank_sets "
        "WHERE score_run_id = ? GROUP BY track, scope ORDER BY track, scope",
        [run],
    )
    assert [s[:2] for s in sets] == [
        (t, scope) for t in ("absolute", "density", "squared") for scope in ("all", "public")
    ]
    for track, scope, total, in_set, members in sets:
        assert total == pytest.approx(1.0)
        assert worse not in in_set, track
        # the public sets are taken without the upload (its losses would be a channel);
        # it is a point forecast, so on the density track in neither
        assert (up in members) == (scope == "all" and track != "density"), (track, scope)
    # deterministic for the recorded seed
    before = wh.fetchall(
        "SELECT * EXCLUDE (score_run_id) FROM eval.rank_sets WHERE score_run_id = ? ORDER BY ALL",
        [run],
    )
    from proforma.app.scoring.uncertainty import compute_board_uncertainty

    assert compute_board_uncertainty(wh, run)
    assert before == wh.fetchall(
        "SELECT * EXCLUDE (score_run_id) FROM eval.rank_sets WHERE score_run_id = ? ORDER BY ALL",
        [run],
    )


def test_results_stored_without_clusters_are_computed_again(wh):
    """A result from before the clusters were kept (V0180) is not reused as it is: the
    next run aggregates it again, so its board has its uncertainty."""
    cells = truth_cells(wh)
    mu = cells["actual"].to_numpy() + 0.2
    sid = scoring.ingest_forecasts(wh, "old result", forecasts_from(cells, mu))
    first = scoring.score(wh, "full", coherence=False, baselines=False)
    source = wh.scalar(
        "SELECT from_run FROM eval.run_results WHERE score_run_id = ? AND submission_id = ?",
        [first, sid],
    )
    wh.execute(
        "DELETE FROM eval.cluster_loss_rows WHERE score_run_id = ? AND submission_id = ?",
        [source, sid],
    )
    second = scoring.score(wh, "full", coherence=False, baselines=False)
    assert (
        wh.scalar(
            "SELECT from_run FROM eval.run_results WHERE score_run_id = ? AND submission_id = ?",
            [second, sid],
        )
        == second
    )
    assert wh.scalar("SELECT count(*) FROM eval.uncertainty_runs WHERE score_run_id = ?", [second])
    # the others' results are still referenced, not recomputed
    assert wh.scalar(
        "SELECT count(*) FROM eval.run_results WHERE score_run_id = ? AND from_run < ?",
        [second, second],
    )
