"""Quantile submissions: validation, and every score against numpy/scipy on hand-made
grids (zero-width intervals, ties with the actual, actuals beyond the outer levels)."""

from __future__ import annotations

import itertools

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import integrate
from scoring_fixtures import module_warehouse

from proforma.app import scoring
from proforma.contracts.errors import UserError, ValidationError

SMALL = "horizon IN (1, 7) AND item IN ('atq', 'niq')"
GRID = [0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95]
CHRONOS_GRID = [0.01, *[round(0.05 * k, 2) for k in range(1, 20)], 0.99]  # 21 levels


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "quantiles")
    scoring.create_footprint(w, "small", predicate=SMALL)
    yield w
    w.close()


def _cells(wh) -> pa.Table:
    """The small footprint's cells with their keys as uploaded and the actual in dollars."""
    return wh.arrow(
        "SELECT t.firm_id, t.origin_q, t.item_id, t.horizon, t.actual, t.change, "
        "f.gvkey AS firm, i.item AS target, qlabel(t.origin_q) AS origin, "
        "panel.pf_destandardize(t.actual, k.k, o.z, p.mu, p.sigma) AS dollars "
        "FROM panel.truth t JOIN ref.items i USING (item_id) JOIN panel.firms f USING (firm_id) "
        "JOIN panel.origins o USING (firm_id, origin_q) JOIN panel.item_k k USING (item_id) "
        "JOIN panel.origin_params p ON p.item_id = t.item_id AND p.q = t.origin_q "
        "WHERE t.split = 'test' AND t.horizon IN (1, 7) AND i.item IN ('atq', 'niq') "
        "ORDER BY t.firm_id, t.origin_q, t.item_id, t.horizon"
    )


def _batches(cells: pa.Table, grid: list[float], values: np.ndarray) -> pa.Table:
    """Long form: one row per (cell, level); values[i, k] is cell i's quantile at grid[k]."""
    n, k = values.shape
    rep = np.repeat(np.arange(n), k)
    return pa.table(
        {
            "firm_id": cells["firm_id"].take(rep).cast(pa.int32()),
            "origin_q": cells["origin_q"].take(rep).cast(pa.int32()),
            "item_id": cells["item_id"].take(rep).cast(pa.int16()),
            "horizon": cells["horizon"].take(rep).cast(pa.int8()),
            "quantile_level": pa.array(np.tile(grid, n), pa.float64()),
            "mu": pa.array(values.reshape(-1), pa.float64()),
        }
    )


def _hand_made(actual: np.ndarray, grid: list[float], seed: int) -> np.ndarray:
    """Sorted quantiles around the actual, with zero-width intervals, exact ties with the
    actual and actuals below the first and above the last quantile."""
    rng = np.random.default_rng(seed)
    n, k = actual.size, len(grid)
    steps = rng.exponential(0.3, (n, k))
    steps[rng.random((n, k)) < 0.25] = 0.0  # zero-width intervals
    q = np.cumsum(steps, axis=1)
    q = q - q[:, [k // 2]] + actual[:, None] + rng.normal(0, 0.4, (n, 1))
    q[0::7] = actual[0::7, None] + np.linspace(0.1, 1.0, k)  # actual below q_1
    q[1::7] = actual[1::7, None] - np.linspace(1.0, 0.1, k)  # actual above q_K
    q[2::7, 2] = actual[2::7]  # the actual on a level
    q[3::7, :] = actual[3::7, None]  # every quantile at the actual: a point mass on it
    q[4::7, 1:4] = actual[4::7, None]  # a tie spanning levels, at the actual
    return np.sort(q, axis=1)


def _quantile_function(levels, values):
    """Q(tau): linear between the levels, flat beyond the outer ones (np.interp clamps)."""
    return lambda tau: np.interp(tau, levels, values)


def _cdf(levels, values):
    """F(x) of the same distribution: point masses tau_1 at q_1 and 1 - tau_K at q_K."""
    levels, values = np.asarray(levels), np.asarray(values)

    def f(x):
        if x < values[0]:
            return 0.0
        if x >= values[-1]:
            return 1.0
        k = np.searchsorted(values, x, side="right") - 1  # last level with q_k <= x
        return levels[k] + (levels[k + 1] - levels[k]) * (x - values[k]) / (
            values[k + 1] - values[k]
        )

    return f


def _crps_by_quantile_score(levels, values, y):
    q = _quantile_function(levels, values)
    # The integrand has kinks at the levels and where Q crosses the actual.
    crossings = [
        a + (b - a) * (y - lo) / (hi - lo)
        for a, b, lo, hi in zip(levels[:-1], levels[1:], values[:-1], values[1:], strict=True)
        if lo < y < hi
    ]
    kinks = sorted({0.0, 1.0, *levels, *crossings})
    total = 0.0
    for a, b in itertools.pairwise(kinks):
        total += integrate.quad(
            lambda t: 2 * ((y < q(t)) - t) * (q(t) - y), a, b, points=None, limit=200, epsabs=1e-13
        )[0]
    return total


def _crps_by_cdf(levels, values, y):
    f = _cdf(levels, values)
    points = sorted({*values, y})
    lo, hi = points[0] - 1.0, points[-1] + 1.0
    edges = [lo, *points, hi]
    return sum(
        integrate.quad(lambda x: (f(x) - (x >= y)) ** 2, a, b, limit=200, epsabs=1e-13)[0]
        for a, b in itertools.pairwise(edges)
        if b > a
    )


def test_quantile_scores_match_numpy_and_scipy(wh):
    cells = _cells(wh)
    actual = cells["actual"].to_numpy().astype(float)
    q = _hand_made(actual, GRID, seed=7)
    sid = scoring.ingest_forecasts(
        wh, "hand-made grid", _batches(cells, GRID, q), family="quantile"
    )
    sub = wh.fetchone(
        "SELECT family, n_components, quantile_levels, has_sigma, cells "
        "FROM eval.submissions WHERE submission_id = ?",
        [sid],
    )
    assert sub == ("quantile", len(GRID), GRID, False, actual.size)
    run = scoring.score(wh, "small", [sid], coherence=False)
    g = wh.arrow(
        "SELECT * FROM eval.metrics WHERE score_run_id = ? AND level = 'global'", [run]
    ).to_pylist()[0]

    means = np.array(
        [
            integrate.quad(
                _quantile_function(GRID, row), 0, 1, points=GRID, limit=200, epsabs=1e-13
            )[0]
            for row in q
        ]
    )
    median = q[:, GRID.index(0.5)]
    crps = np.array(
        [_crps_by_quantile_score(GRID, row, y) for row, y in zip(q, actual, strict=True)]
    )
    crps_x = np.array([_crps_by_cdf(GRID, row, y) for row, y in zip(q, actual, strict=True)])
    assert crps == pytest.approx(crps_x, abs=1e-9)  # the two references agree
    y = cells["change"].to_numpy().astype(float)
    r = means - actual
    assert g["n"] == g["n_density"] == actual.size
    assert g["mse"] == pytest.approx(np.mean(r**2), rel=1e-9)
    assert g["r2"] == pytest.approx(
        1 - np.sum(r**2) / (np.sum(y**2) - np.sum(y) ** 2 / y.size + 1e-12), rel=1e-9
    )
    assert g["mae"] == pytest.approx(np.mean(np.abs(median - actual)), rel=1e-12)
    assert g["crps"] == pytest.approx(crps.mean(), rel=1e-9)
    assert g["nll"] is None and g["z2"] is None
    for p, got in [(0.5, g["cov50"]), (0.8, g["cov80"]), (0.9, g["cov90"])]:
        lo, hi = q[:, GRID.index(round((1 - p) / 2, 3))], q[:, GRID.index(round((1 + p) / 2, 3))]
        assert got == pytest.approx(np.mean((lo <= actual) & (actual <= hi)), abs=1e-12)
    assert g["cov95"] is None  # the grid has no 0.025 / 0.975 pair
    u = np.array([_cdf(GRID, row)(yy) for row, yy in zip(q, actual, strict=True)])
    pit = dict(wh.fetchall("SELECT bin, n FROM eval.pit WHERE score_run_id = ?", [run]))
    want = np.bincount(np.minimum((u * 20).astype(int), 19), minlength=20)
    assert [pit.get(b, 0) for b in range(20)] == want.tolist()

    # The leaderboards: squared track on the mean, absolute on the median, density without NLL.
    density = scoring.leaderboard(wh, "small", "density").to_pylist()
    assert density[0]["family"] == "quantile" and density[0]["nll"] is None
    assert density[0]["crps"] == pytest.approx(crps.mean(), rel=1e-9)
    assert scoring.leaderboard(wh, "small", "absolute").to_pylist()[0]["mae"] == g["mae"]


def test_chronos_grid_without_median_has_no_absolute_track(wh):
    """The Chronos-2 grid has 0.5; a grid without it scores no MAE and says why."""
    cells = _cells(wh)
    actual = cells["actual"].to_numpy().astype(float)
    grid = [g for g in CHRONOS_GRID if g != 0.5]
    q = _hand_made(actual, grid, seed=8)
    sid = scoring.ingest_forecasts(wh, "no median", _batches(cells, grid, q), family="quantile")
    warnings = wh.scalar("SELECT warnings FROM eval.submissions WHERE submission_id = ?", [sid])
    assert "no quantile level 0.5" in warnings
    # a second submission to score beside it, whichever test of this module ran first
    other = scoring.ingest_forecasts(
        wh,
        "hand-made grid, beside no median",
        _batches(cells, GRID, _hand_made(actual, GRID, seed=7)),
        family="quantile",
    )
    run = scoring.score(wh, "small", [other, sid], coherence=False)
    g = wh.arrow(
        "SELECT * FROM eval.metrics WHERE score_run_id = ? AND submission_id = ? "
        "AND level = 'global'",
        [run, sid],
    ).to_pylist()[0]
    assert g["mae"] is None and g["mse"] is not None and g["crps"] is not None
    lo, hi = q[:, grid.index(0.05)], q[:, grid.index(0.95)]
    assert g["cov90"] == pytest.approx(np.mean((lo <= actual) & (actual <= hi)), abs=1e-12)
    assert g["cov95"] is None
    losses = {
        r[0] for r in wh.fetchall("SELECT loss FROM eval.dm_tests WHERE score_run_id = ?", [run])
    }
    assert losses == {"squared"}
    absolute = scoring.leaderboard(wh, "small", "absolute").to_pylist()
    assert absolute[-1]["submission_id"] == sid and absolute[-1]["mae"] is None


def test_dollar_quantiles_are_standardized_and_stay_monotone(wh):
    cells = _cells(wh)
    v = cells["dollars"].to_numpy().astype(float)
    grid = [0.1, 0.5, 0.9]
    q = v[:, None] + np.abs(v[:, None]) * np.array([-0.2, 0.0, 0.3])
    sid = scoring.ingest_forecasts(
        wh, "dollar grid", _batches(cells, grid, q), family="quantile", space="dollars"
    )
    got = wh.fetchall(
        "SELECT count(*), count(*) FILTER (WHERE isfinite(mu)) FROM eval.forecasts "
        "WHERE submission_id = ?",
        [sid],
    )[0]
    assert got == (3 * cells.num_rows, 3 * cells.num_rows)
    run = scoring.score(wh, "small", [sid], coherence=False)
    mae = wh.scalar(
        "SELECT mae FROM eval.metrics WHERE score_run_id = ? AND level = 'global'", [run]
    )
    assert mae == pytest.approx(0.0, abs=1e-5)  # the median is the actual, in dollars


def _count(wh) -> tuple[int, int]:
    return wh.fetchone(
        "SELECT (SELECT count(*) FROM eval.submissions), (SELECT count(*) FROM eval.forecasts)"
    )


@pytest.mark.parametrize(
    "case,message",
    [
        ("level", "quantile_level missing or outside (0, 1)"),
        ("incomplete", "cell without every level"),
        ("decreasing", "quantile values decrease as the level rises"),
    ],
)
def test_bad_quantile_forecasts_are_rejected_naming_cells(wh, case, message):
    cells = _cells(wh).slice(0, 20)
    actual = cells["actual"].to_numpy().astype(float)
    q = _hand_made(actual, GRID, seed=9)
    table = _batches(cells, GRID, q)
    if case == "level":
        levels = table["quantile_level"].to_numpy().copy()
        levels[[8, 9]] = [1.0, np.nan]
        table = table.set_column(4, "quantile_level", pa.array(levels))
    elif case == "incomplete":
        table = table.filter(pa.array(np.arange(table.num_rows) != 10))
    else:
        values = table["mu"].to_numpy().copy()
        values[15] = values[14] - 1.0  # cell 2: level 0.1 below level 0.05
        table = table.set_column(5, "mu", pa.array(values))
    before = _count(wh)
    with pytest.raises(ValidationError) as err:
        scoring.ingest_forecasts(wh, f"bad {case}", table, family="quantile")
    problem = next(p for p in err.value.problems if p["problem"].startswith(message))
    cell = 1 if case != "decreasing" else 2
    firm = wh.scalar(
        "SELECT gvkey FROM panel.firms WHERE firm_id = ?", [cells["firm_id"][cell].as_py()]
    )
    assert problem["examples"][0].startswith(f"firm={firm} ")
    assert f"horizon={cells['horizon'][cell].as_py()}" in problem["examples"][0]
    assert _count(wh) == before


def test_quantile_forecasts_need_quantile_columns(wh):
    cells = _cells(wh).slice(0, 4)
    table = _batches(cells, GRID, _hand_made(cells["actual"].to_numpy().astype(float), GRID, 1))
    before = _count(wh)
    with pytest.raises(ValidationError, match="has no sigma column"):
        scoring.ingest_forecasts(
            wh,
            "with sigma",
            table.append_column("sigma", pa.array(np.ones(table.num_rows))),
            family="quantile",
        )
    with pytest.raises(ValidationError, match="missing column.*quantile_level"):
        scoring.ingest_forecasts(wh, "no levels", table.drop(["quantile_level"]), family="quantile")
    assert _count(wh) == before


def _upload_table(cells: pa.Table, grid: list[float], values: np.ndarray) -> pa.Table:
    rep = pa.array(np.repeat(np.arange(cells.num_rows), len(grid)))
    return pa.table(
        {
            "firm": cells["firm"].take(rep),
            "target": cells["target"].take(rep),
            "origin": cells["origin"].take(rep),
            "horizon": cells["horizon"].take(rep),
            "quantile_level": pa.array(np.tile(grid, cells.num_rows)),
            "prediction": pa.array(values.reshape(-1)),
        }
    )


def test_quantile_upload_file(wh, tmp_path):
    cells = _cells(wh)
    actual = cells["actual"].to_numpy().astype(float)
    q = _hand_made(actual, GRID, seed=7)
    path = tmp_path / "grid.parquet"
    pq.write_table(_upload_table(cells, GRID, q), path)
    sid = scoring.ingest_parquet(wh, path, "uploaded grid")
    assert wh.fetchone(
        "SELECT family, quantile_levels FROM eval.submissions WHERE submission_id = ?", [sid]
    ) == ("quantile", GRID)
    # the same grid through the forecast path, whichever test of this module ran first
    first = scoring.ingest_forecasts(
        wh, "hand-made grid, beside the file", _batches(cells, GRID, q), family="quantile"
    )
    run = scoring.score(wh, "small", [sid, first], coherence=False)
    a, b = (
        wh.fetchone(
            "SELECT crps, mae, mse FROM eval.metrics WHERE score_run_id = ? "
            "AND submission_id = ? AND level = 'global'",
            [run, s],
        )
        for s in (sid, first)
    )
    assert a == pytest.approx(b, rel=1e-12)

    # A level outside (0, 1) in a file: the rows are named, nothing is written.
    bad = _upload_table(cells.slice(0, 3), GRID, q[:3])
    levels = bad["quantile_level"].to_numpy().copy()
    levels[4] = 1.5
    pq.write_table(bad.set_column(4, "quantile_level", pa.array(levels)), path)
    before = _count(wh)
    with pytest.raises(ValidationError) as err:
        scoring.ingest_parquet(wh, path, "bad level file")
    problem = next(p for p in err.value.problems if p["problem"].startswith("quantile_level"))
    assert problem["count"] == 1 and "row 4:" in problem["examples"][0]
    assert "quantile_level=1.5" in problem["examples"][0]
    with pytest.raises(UserError, match="family quantile"):
        scoring.ingest_parquet(wh, path, "grid as laplace", family="laplace")
    assert _count(wh) == before
