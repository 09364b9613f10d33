"""Every metric against an independent numpy/scipy computation, plus the invariants."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from scipy import integrate, special, stats
from scoring_fixtures import cell_scores, forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring

SMALL = "horizon IN (1, 7) AND item IN ('atq', 'niq')"


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "metrics")
    yield w
    w.close()


@pytest.fixture(scope="module")
def cells(wh):
    return truth_cells(wh)


def _r2(y, r):
    den = np.sum(y**2) - np.sum(y) ** 2 / y.size + 1e-12
    return 1 - np.sum(r**2) / den


def _metrics(wh, run, sid, level="global"):
    return wh.arrow(
        "SELECT m.*, i.item FROM eval.metrics m LEFT JOIN ref.items i USING (item_id) "
        "WHERE score_run_id = ? AND submission_id = ? AND level = ? "
        "ORDER BY horizon, item_id, statement",
        [run, sid, level],
    ).to_pylist()


def test_point_metrics_and_invariants_match_numpy(wh, cells):
    rng = np.random.default_rng(1)
    actual = cells["actual"].to_numpy()
    baseline = cells["baseline"].to_numpy()
    y = cells["change"].to_numpy()
    noisy = actual + rng.normal(0, 0.3, actual.size)
    s_noisy = scoring.ingest_forecasts(wh, "noisy", forecasts_from(cells, noisy))
    s_truth = scoring.ingest_forecasts(wh, "truth", forecasts_from(cells, actual))
    s_mean = scoring.ingest_forecasts(wh, "mean change", forecasts_from(cells, baseline + y.mean()))
    run = scoring.score(wh, "full", [s_noisy, s_truth, s_mean], coherence=False)

    g = _metrics(wh, run, s_noisy)[0]
    r = noisy - actual
    assert g["n"] == actual.size
    assert g["r2"] == pytest.approx(_r2(y, r), abs=1e-12)
    assert g["mse"] == pytest.approx(np.mean(r**2), rel=1e-12)
    assert g["mae"] == pytest.approx(np.mean(np.abs(r)), rel=1e-12)
    assert g["nll"] is None and g["crps"] is None

    # Truth itself scores R2 = 1; the sample-mean change forecast about 0.
    assert _metrics(wh, run, s_truth)[0]["r2"] == pytest.approx(1.0, abs=1e-12)
    assert _metrics(wh, run, s_mean)[0]["r2"] == pytest.approx(0.0, abs=1e-9)

    # Every model's n equals the footprint's (common) n, at every level.
    info = scoring.run_summary(wh, run)
    assert info["n_cells"] == actual.size
    for level in ("global", "horizon", "item", "statement", "item_horizon"):
        ns = {
            sid: [m["n"] for m in _metrics(wh, run, sid, level)]
            for sid in (s_noisy, s_truth, s_mean)
        }
        assert ns[s_noisy] == ns[s_truth] == ns[s_mean]
        assert sum(ns[s_noisy]) == actual.size
    assert all(c["coverage"] == 1.0 for c in info["coverage"])

    # Group levels: pooled within the group, not averages of per-block R2.
    h = cells["horizon"].to_numpy()
    item = cells["item_id"].to_numpy()
    for m in _metrics(wh, run, s_noisy, "horizon"):
        sel = h == m["horizon"]
        assert m["r2"] == pytest.approx(_r2(y[sel], r[sel]), abs=1e-10)
        assert m["mae"] == pytest.approx(np.mean(np.abs(r[sel])), rel=1e-10)
    for m in _metrics(wh, run, s_noisy, "item_horizon"):
        sel = (h == m["horizon"]) & (item == m["item_id"])
        assert m["n"] == sel.sum()
        assert m["r2"] == pytest.approx(_r2(y[sel], r[sel]), abs=1e-9)
    statements = dict(wh.fetchall("SELECT item_id, statement FROM ref.items"))
    st = np.array([statements[i] for i in item])
    for m in _metrics(wh, run, s_noisy, "statement"):
        sel = st == m["statement"]
        assert m["r2"] == pytest.approx(_r2(y[sel], r[sel]), abs=1e-10)
        assert m["mse"] == pytest.approx(np.mean(r[sel] ** 2), rel=1e-10)


def _crps_numeric(cdf, y, lo=-30.0, hi=30.0):
    """CRPS = integral of (F(x) - 1{x >= y})^2, by adaptive quadrature around y."""
    left = integrate.quad(lambda x: cdf(x) ** 2, lo, y, limit=200, epsabs=1e-11)[0]
    right = integrate.quad(lambda x: (1 - cdf(x)) ** 2, y, hi, limit=200, epsabs=1e-11)[0]
    return left + right


def _small_cells(wh):
    return wh.arrow(
        "SELECT t.firm_id, t.origin_q, t.item_id, t.horizon, t.actual, t.baseline, t.change "
        "FROM panel.truth t JOIN ref.items i USING (item_id) WHERE t.split = 'test' "
        "AND t.horizon IN (1, 7) AND i.item IN ('atq', 'niq') "
        "ORDER BY t.firm_id, t.origin_q, t.item_id, t.horizon"
    )


def _cover(u):
    return [np.mean((u >= (1 - p) / 2) & (u <= (1 + p) / 2)) for p in (0.5, 0.8, 0.9, 0.95)]


@pytest.mark.parametrize(
    "family,df",
    [("gaussian", None), ("laplace", None), ("student_t", 4.0), ("student_t", 5.0)],
)
def test_single_density_metrics_match_scipy(wh, family, df):
    if "small" not in {r[0] for r in wh.fetchall("SELECT name FROM eval.footprints")}:
        scoring.create_footprint(wh, "small", predicate=SMALL)
    cells = _small_cells(wh)
    rng = np.random.default_rng(2)
    actual = cells["actual"].to_numpy()
    mu = actual + rng.normal(0, 0.4, actual.size)
    sigma = rng.uniform(0.2, 0.8, actual.size)
    sigma[:3] = 1e-6  # below the 1e-4 floor
    sid = scoring.ingest_forecasts(
        wh, f"single {family}", forecasts_from(cells, mu, sigma), family=family, df=df
    )
    run = scoring.score(wh, "small", [sid], coherence=False)
    g = _metrics(wh, run, sid)[0]
    s = np.maximum(sigma, 1e-4)
    if family == "gaussian":
        dist = stats.norm(mu, s)
    elif family == "laplace":
        dist = stats.laplace(mu, s / np.sqrt(2))
    else:
        dist = stats.t(df, mu, s)
    nll = -dist.logpdf(actual)
    if family == "laplace":  # scipy's log density underflows at the sigma floor
        b = s / np.sqrt(2)
        nll = np.log(2 * b) + np.abs(actual - mu) / b
    u = dist.cdf(actual)
    crps = np.array(
        [
            _crps_numeric(lambda x, i=i: _cdf1(family, df, mu[i], s[i], x), actual[i])
            for i in range(actual.size)
        ]
    )
    assert g["n"] == actual.size
    assert g["nll"] == pytest.approx(nll.mean(), rel=1e-9)
    assert g["crps"] == pytest.approx(crps.mean(), rel=1e-6)
    assert g["z2"] == pytest.approx(np.mean(((mu - actual) / s) ** 2), rel=1e-9)
    for got, want in zip([g["cov50"], g["cov80"], g["cov90"], g["cov95"]], _cover(u), strict=True):
        assert got == pytest.approx(want, abs=1e-12)
    pit = dict(
        wh.fetchall(
            "SELECT bin, share FROM eval.pit WHERE score_run_id = ? AND submission_id = ?",
            [run, sid],
        )
    )
    hist = np.bincount(np.minimum((u * 20).astype(int), 19), minlength=20) / u.size
    assert [pit.get(b, 0.0) for b in range(20)] == pytest.approx(hist.tolist(), abs=1e-12)


def _cdf1(family, df, m, s, x):
    if family == "gaussian":
        return special.ndtr((x - m) / s)
    if family == "laplace":
        b = s / np.sqrt(2)
        return 0.5 * np.exp((x - m) / b) if x < m else 1 - 0.5 * np.exp(-(x - m) / b)
    return special.stdtr(df, (x - m) / s)


@pytest.mark.parametrize("family", ["gaussian", "laplace"])
@pytest.mark.parametrize("k", [2, 3])  # 054's pair terms and its general ones
def test_mixture_metrics_match_exact_and_monte_carlo(wh, family, k):
    if "small" not in {r[0] for r in wh.fetchall("SELECT name FROM eval.footprints")}:
        scoring.create_footprint(wh, "small", predicate=SMALL)
    cells = _small_cells(wh)
    rng = np.random.default_rng(3)
    actual = cells["actual"].to_numpy()
    mus = actual[None, :] + rng.normal(0, 0.4, (k, actual.size))
    sds = rng.uniform(0.2, 0.7, (k, actual.size))
    sds[1, :5] = sds[0, :5] * (1 + 1e-7)  # nearly equal scales (the Laplace limit branch)
    batches = [forecasts_from(cells, mus[j], sds[j], component=j) for j in range(k)]
    table = pa.concat_tables(batches)
    sid = scoring.ingest_forecasts(wh, f"mixture {family} of {k}", table, family=family)
    assert (
        wh.scalar("SELECT n_components FROM eval.submissions WHERE submission_id = ?", [sid]) == k
    )
    run = scoring.score(wh, "small", [sid], coherence=False)
    g = _metrics(wh, run, sid)[0]

    if family == "gaussian":
        logpdf = stats.norm.logpdf(actual[None, :], mus, sds)
        cdfs = stats.norm.cdf(actual[None, :], mus, sds)
    else:
        logpdf = stats.laplace.logpdf(actual[None, :], mus, sds / np.sqrt(2))
        cdfs = stats.laplace.cdf(actual[None, :], mus, sds / np.sqrt(2))
    nll = -(special.logsumexp(logpdf, axis=0) - np.log(k))
    u = cdfs.mean(axis=0)
    point = mus.mean(axis=0)
    s_mm = np.sqrt((sds**2).mean(axis=0) + mus.var(axis=0))
    assert g["nll"] == pytest.approx(nll.mean(), rel=1e-9)
    assert g["mse"] == pytest.approx(np.mean((point - actual) ** 2), rel=1e-9)
    assert g["z2"] == pytest.approx(np.mean(((point - actual) / s_mm) ** 2), rel=1e-9)
    for got, want in zip([g["cov50"], g["cov80"], g["cov90"], g["cov95"]], _cover(u), strict=True):
        assert got == pytest.approx(want, abs=1e-12)

    # CRPS: exact per cell by quadrature of the mixture CDF ...
    def mix_cdf(i, x):
        return np.mean([_cdf1(family, None, mus[j, i], sds[j, i], x) for j in range(k)])

    sample = range(0, actual.size, max(1, actual.size // 40))
    scores = cell_scores(wh, "small", [sid])
    # cell_scores orders by origin, item, horizon, y; match on the keys instead.
    key = {
        (o, it, h, round(yy, 12)): c
        for o, it, h, yy, c in zip(
            scores["origin_q"].to_pylist(),
            scores["item_id"].to_pylist(),
            scores["horizon"].to_pylist(),
            scores["y"].to_pylist(),
            scores["crps"].to_pylist(),
            strict=True,
        )
    }
    y = cells["change"].to_numpy()
    for i in sample:
        got = key[
            (
                cells["origin_q"][i].as_py(),
                cells["item_id"][i].as_py(),
                cells["horizon"][i].as_py(),
                round(float(y[i]), 12),
            )
        ]
        assert got == pytest.approx(
            _crps_numeric(lambda x, i=i: mix_cdf(i, x), actual[i]), rel=1e-6, abs=1e-9
        )
    # ... and its mean against Monte Carlo: E|X - y| - E|X - X'| / 2.
    n = 4000
    comp = rng.integers(0, k, (n, actual.size))
    comp2 = rng.integers(0, k, (n, actual.size))
    cols = np.arange(actual.size)[None, :]

    def draw(c):
        m, s = mus[c, cols], sds[c, cols]
        if family == "gaussian":
            return m + s * rng.standard_normal(c.shape)
        return m + rng.laplace(0, 1, c.shape) * s / np.sqrt(2)

    x1, x2 = draw(comp), draw(comp2)
    mc = np.mean(np.abs(x1 - actual[None, :])) - 0.5 * np.mean(np.abs(x1 - x2))
    assert g["crps"] == pytest.approx(mc, rel=0.01)


def test_partial_submission_shrinks_the_common_sample(wh, cells):
    actual = cells["actual"].to_numpy()
    half = cells.filter(pa.compute.less_equal(cells["horizon"], 10))
    a = scoring.ingest_forecasts(wh, "all cells", forecasts_from(cells, actual + 0.1))
    mu = half["actual"].to_numpy() + 0.2
    mu[:7] = np.nan  # non-finite predictions leave the sample
    b = scoring.ingest_forecasts(wh, "first ten horizons", forecasts_from(half, mu))
    run = scoring.score(wh, "full", [a, b], coherence=False)
    info = scoring.run_summary(wh, run)
    assert info["n_cells"] == half.num_rows - 7
    cov = {c["submission_id"]: c for c in info["coverage"]}
    assert cov[a]["coverage"] == 1.0
    assert cov[b]["predicted_cells"] == half.num_rows - 7
    assert cov[b]["coverage"] == pytest.approx((half.num_rows - 7) / cells.num_rows)
    assert _metrics(wh, run, a)[0]["n"] == _metrics(wh, run, b)[0]["n"] == info["n_cells"]

    # One submission alone (the 051 shortcut) and frozen through 050 agree.
    alone = scoring.run_summary(wh, scoring.score(wh, "full", [b], coherence=False))
    assert alone["n_cells"] == half.num_rows - 7
    assert alone["coverage"][0]["predicted_cells"] == half.num_rows - 7
    scoring.create_footprint(wh, "b cells".replace(" ", "_"), submissions=[b])
    assert scoring.get_footprint(wh, "b_cells")["n_cells"] == half.num_rows - 7


def test_default_run_leaves_out_submissions_that_cover_too_little(tmp_path_factory):
    """With no explicit list, a restricted submission does not shrink the footprint's
    common sample: it gets a coverage row and is scored on footprints it covers."""
    wh = module_warehouse(tmp_path_factory, "coverage")
    cells = truth_cells(wh)
    actual = cells["actual"].to_numpy()
    half = cells.filter(pa.compute.less_equal(cells["horizon"], 10))
    a = scoring.ingest_forecasts(wh, "everything", forecasts_from(cells, actual + 0.1))
    b = scoring.ingest_forecasts(wh, "half", forecasts_from(half, half["actual"].to_numpy()))
    run = scoring.score(wh, "full", coherence=False, baselines=False)
    info = scoring.run_summary(wh, run)
    assert info["n_cells"] == cells.num_rows
    assert list(info["submission_ids"]) == [a]
    cov = {c["submission_id"]: c for c in info["coverage"]}
    assert cov[b]["coverage"] == pytest.approx(half.num_rows / cells.num_rows)
    assert not _metrics(wh, run, b)
    assert [r["submission_id"] for r in scoring.leaderboard(wh, "full").to_pylist()] == [a]

    # Both enter a footprint made of the cells the partial submission predicts.
    scoring.create_footprint(wh, "half_cells", submissions=[b])
    both = scoring.run_summary(
        wh, scoring.score(wh, "half_cells", coherence=False, baselines=False)
    )
    assert sorted(both["submission_ids"]) == sorted([a, b])
    assert both["n_cells"] == half.num_rows

    # A lower bar lets the partial submission in again, shrinking the sample.
    low = scoring.run_summary(
        wh, scoring.score(wh, "full", coherence=False, baselines=False, min_coverage=0.3)
    )
    assert sorted(low["submission_ids"]) == sorted([a, b])
    assert low["n_cells"] == half.num_rows
    wh.close()


def test_a_run_with_several_mixtures_scores_each_as_alone(wh):
    """Mixtures are aggregated one submission at a time (065 chunks): a joint run gives
    every submission the metrics it gets alone on the same cells, PIT included."""
    if "small" not in {r[0] for r in wh.fetchall("SELECT name FROM eval.footprints")}:
        scoring.create_footprint(wh, "small", predicate=SMALL)
    cells = _small_cells(wh)
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(11)
    ids = []
    for name, k in [("joint mix a", 2), ("joint mix b", 3), ("joint single", 1)]:
        parts = [
            forecasts_from(
                cells,
                actual + rng.normal(0, 0.3, actual.size),
                rng.uniform(0.2, 0.6, actual.size),
                component=j,
            )
            for j in range(k)
        ]
        ids.append(scoring.ingest_forecasts(wh, name, pa.concat_tables(parts)))
    joint = scoring.score(wh, "small", ids, coherence=False)
    for sid in ids:
        alone = scoring.score(wh, "small", [sid], coherence=False)
        got, want = _metrics(wh, joint, sid, "horizon"), _metrics(wh, alone, sid, "horizon")
        keys = ("n", "r2", "mse", "mae", "nll", "crps", "z2", "cov50", "cov95")
        assert [g[k] for g in got for k in keys] == pytest.approx(
            [w[k] for w in want for k in keys], rel=1e-12
        )
        pit = (
            "SELECT bin, n FROM eval.pit WHERE score_run_id = ? AND submission_id = ? ORDER BY bin"
        )
        assert wh.fetchall(pit, [joint, sid]) == wh.fetchall(pit, [alone, sid])
