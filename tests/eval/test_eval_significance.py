"""Diebold-Mariano: the SQL quarter means + NW/HLN step against a direct numpy version."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring
from proforma.app.scoring.significance import diebold_mariano, newey_west_variance


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "dm")
    yield w
    w.close()


def _direct_dm(d: np.ndarray, h: int) -> tuple[float, float]:
    """Textbook DM: autocovariances by explicit sums, Bartlett weights, HLN, t(T-1)."""
    t = d.size
    dbar = d.mean()
    gam = [sum((d[i] - dbar) * (d[i - j] - dbar) for i in range(j, t)) / t for j in range(h)]
    lrv = gam[0] + 2 * sum((1 - j / h) * gam[j] for j in range(1, h))
    dm = dbar / np.sqrt(lrv / t) * np.sqrt((t + 1 - 2 * h + h * (h - 1) / t) / t)
    return dm, 2 * stats.t.sf(abs(dm), t - 1)


def test_newey_west_with_no_lags_is_the_variance():
    d = np.random.default_rng(0).normal(size=50)
    assert newey_west_variance(d, 0) == pytest.approx(d.var(), rel=1e-12)
    assert np.isnan(diebold_mariano(np.ones(10), 1)[1])  # no variance: no statistic


def test_dm_tests_match_numpy_pooled_and_per_horizon(wh):
    cells = truth_cells(wh)
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(5)
    pa_ = actual + rng.normal(0, 0.3, actual.size)
    pb = actual + rng.normal(0.02, 0.33, actual.size)
    a = scoring.ingest_forecasts(wh, "A", forecasts_from(cells, pa_))
    b = scoring.ingest_forecasts(wh, "B", forecasts_from(cells, pb))
    run = scoring.score(wh, "full", [a, b], coherence=False)
    q = cells["origin_q"].to_numpy()
    h = cells["horizon"].to_numpy()
    quarters = np.unique(q)
    assert quarters.size == 20
    for loss, f in (("squared", np.square), ("absolute", np.abs)):
        la, lb = f(pa_ - actual), f(pb - actual)
        for hh in (0, 1, 3, 8):
            sel = np.ones_like(h, bool) if hh == 0 else h == hh
            d = np.array([la[sel & (q == x)].mean() - lb[sel & (q == x)].mean() for x in quarters])
            bw = 20 if hh == 0 else hh
            row = wh.fetchone(
                "SELECT n_quarters, bandwidth, mean_diff, dm_stat, p_value FROM eval.dm_tests "
                "WHERE score_run_id = ? AND submission_a = ? AND submission_b = ? AND loss = ? "
                "AND horizon = ?",
                [run, a, b, loss, hh],
            )
            assert row[0] == 20 and row[1] == bw - 1
            assert row[2] == pytest.approx(d.mean(), rel=1e-9)
            if hh == 0:
                # T = 20 quarters with h = 20: the HLN factor is 0, no statistic.
                assert row[3] is None
                continue
            dm, p = _direct_dm(d, bw)
            assert row[3] == pytest.approx(dm, rel=1e-9)
            assert row[4] == pytest.approx(p, rel=1e-7)


def test_pooled_dm_with_enough_quarters():
    d = np.random.default_rng(1).normal(0.1, 1, 60)
    _mean, stat, p = diebold_mariano(d, 20)
    dm, pp = _direct_dm(d, 20)
    assert stat == pytest.approx(dm, rel=1e-12) and p == pytest.approx(pp, rel=1e-10)
