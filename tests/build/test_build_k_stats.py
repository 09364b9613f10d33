"""k grid search (ties, edges, the binned screen vs brute force) and the per-quarter raw
statistics with their trailing origin parameters at the panel start."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import kurtosis

from proforma.app.flows.build import BuildParams
from proforma.app.store.sqlfiles import sql_file
from tests.build.conftest import run_steps

GRID = 10 ** np.linspace(-2, 3, 250)


def brute_force_k(pool: np.ndarray, target: float = 3.0) -> float:
    """The spec's k, by brute force over the whole grid (ties -> smallest k)."""
    obj = np.array([abs(kurtosis(np.arcsinh(k * pool), bias=False) - target) for k in GRID])
    if not np.isfinite(obj).any():
        return float(GRID[0])
    best = np.nanmin(obj)
    return float(GRID[np.nonzero(obj <= best + 1e-9 * (1 + best))[0][0]])


def load_scale_pool(wh, z: np.ndarray, first_q: int = 7900) -> None:
    """A stage.fq/panel.values holding only deflators: the scale item's k pool is z."""
    wh.execute("CREATE SCHEMA IF NOT EXISTS stage")
    wh.execute(
        "CREATE OR REPLACE TABLE stage.fq (firm_id INTEGER, q INTEGER, z DOUBLE, "
        "pos INTEGER, vals DOUBLE[])"
    )
    rows: list[tuple[int, int, float, int, list[float]]] = [
        (i + 1, first_q + i % 40, float(v), 1, []) for i, v in enumerate(z)
    ]
    wh.con.executemany("INSERT INTO stage.fq VALUES (?, ?, ?, ?, ?)", rows)
    wh.execute(
        "CREATE OR REPLACE TABLE panel.values AS "
        "SELECT firm_id, q, 0::SMALLINT AS item_id, z AS v FROM stage.fq"
    )


def run_k(wh, **overrides) -> dict[int, tuple]:
    wh.execute(
        "CREATE OR REPLACE TABLE stage.reg_stats_pinned "
        "(q INTEGER, item_id SMALLINT, mu DOUBLE, sigma DOUBLE, k DOUBLE)"
    )
    wh.set_params(BuildParams(**overrides).variables(False))
    wh.run_step(sql_file("build/080_k_grid_search"))
    return {
        r[0]: r[1:] for r in wh.fetchall("SELECT item_id, k, n_pool, n_exact FROM panel.item_k")
    }


def test_k_matches_brute_force_on_heavy_tails(wh):
    rng = np.random.default_rng(3)
    z = np.exp(rng.standard_t(3, size=400) * 1.5) * 10
    load_scale_pool(wh, z)
    k = run_k(wh)
    assert k[0][0] == pytest.approx(brute_force_k(z), rel=1e-12)
    assert k[0][1] == 400
    # An item without any pool: `published` k = 1 (the package skips it: no statistics);
    # `paper` the median k of the items of its statement that have one (none here: 1).
    assert k[1][0] == pytest.approx(1.0) and k[1][1] == 0
    assert run_k(wh, rules="paper")[1][0] == pytest.approx(1.0)


def test_k_without_training_data(wh):
    """An item reported only after the training window: `paper` (no look-ahead, no
    degenerate k) gives it the median k of the items of its statement estimated on
    training data; `published` searches its whole pool, as the package does."""
    ids = dict(wh.fetchall("SELECT item, item_id FROM ref.items"))
    wh.execute("CREATE OR REPLACE TABLE stage.lag_pool (item_id SMALLINT, q INTEGER, r DOUBLE)")
    rng = np.random.default_rng(11)
    pools = {
        "revtq": np.exp(rng.standard_normal(300)),
        "cogsq": np.exp(2 * rng.standard_normal(300)),
        "niq": rng.standard_t(4, 300),
    }
    for item, r in pools.items():
        wh.con.executemany(
            "INSERT INTO stage.lag_pool VALUES (?, ?, ?)",
            [(ids[item], 7900 + i % 40, float(v)) for i, v in enumerate(r)],
        )
    late = ids["stkcoq"]  # an income-statement item seen only from 2010 on
    late_pool = np.exp(rng.standard_normal(50))
    wh.con.executemany(
        "INSERT INTO stage.lag_pool VALUES (?, ?, ?)", [(late, 8040, float(v)) for v in late_pool]
    )
    load_scale_pool(wh, np.exp(rng.standard_normal(100)), first_q=7900)
    wh.execute("CREATE OR REPLACE TABLE stage.lag_pool AS SELECT * FROM stage.lag_pool")
    got = _k_from_pool(wh, rules="paper")
    want = float(np.median([brute_force_k(r) for r in pools.values()]))
    assert got[ids["stkcoq"]] == pytest.approx(want, rel=1e-9)
    assert got[ids["revtq"]] == pytest.approx(brute_force_k(pools["revtq"]), rel=1e-12)
    got = _k_from_pool(wh)
    assert got[ids["stkcoq"]] == pytest.approx(brute_force_k(late_pool), rel=1e-12)
    assert got[ids["stkcoq"]] != pytest.approx(want, rel=1e-3)
    rules = dict(wh.fetchall("SELECT item_id, k_rule FROM panel.item_k"))
    assert rules[ids["stkcoq"]] == "whole_panel" and rules[ids["revtq"]] == "window"
    assert rules[ids["drcq"]] == "unreported"  # no value at all (not warned about)


def _k_from_pool(wh, **overrides) -> dict[int, float]:
    """Run only the k search of 080 on an existing stage.lag_pool (skipping its rebuild)."""
    text = sql_file("build/080_k_grid_search").text
    text = text[text.index("CREATE OR REPLACE TEMP TABLE k_window_end AS") :]
    wh.execute(
        "CREATE OR REPLACE TABLE stage.reg_stats_pinned "
        "(q INTEGER, item_id SMALLINT, mu DOUBLE, sigma DOUBLE, k DOUBLE)"
    )
    wh.set_params(BuildParams(**overrides).variables(False))
    wh.execute(text)
    return dict(wh.fetchall("SELECT item_id, k FROM panel.item_k"))


def test_k_ties_pick_the_smallest_k(wh):
    # A two-point pool: asinh(k z) is two-point for every k, so its kurtosis does not depend
    # on k and every grid point ties.
    load_scale_pool(wh, np.array([1.0] * 30 + [50.0] * 10))
    assert run_k(wh)[0][0] == pytest.approx(0.01)


def test_k_grid_edges(wh):
    # Near-Gaussian small ratios: asinh only lowers the kurtosis, so the best k is the
    # smallest (lower edge); a pool of huge-kurtosis tiny values needs the most
    # compression (upper edge). Both agree with brute force.
    rng = np.random.default_rng(5)
    low = 5 + 0.001 * rng.standard_normal(300)
    load_scale_pool(wh, low)
    got = run_k(wh)[0][0]
    assert got == pytest.approx(brute_force_k(low)) and got == pytest.approx(GRID[0])
    high = 1e-6 * np.exp(4 * rng.standard_normal(300))
    load_scale_pool(wh, high)
    got = run_k(wh)[0][0]
    assert got == pytest.approx(brute_force_k(high)) and got == pytest.approx(GRID[-1])


def test_training_window_only(wh):
    rng = np.random.default_rng(9)
    z = np.exp(rng.standard_normal(200) * 2)
    load_scale_pool(wh, z, first_q=7990)  # quarters 7990..8029
    qs = 7990 + np.arange(200) % 40
    # paper: through 2001Q4 (8007); published: 2001Q4 itself is left out (the released
    # package compares quarter-end instants with midnight of 2001-12-31)
    assert run_k(wh, rules="paper")[0][0] == pytest.approx(brute_force_k(z[qs <= 8007]))
    assert run_k(wh, rules="published")[0][0] == pytest.approx(brute_force_k(z[qs <= 8006]))
    assert brute_force_k(z[qs <= 8006]) != brute_force_k(z[qs <= 8007])


def _two_firms(fundq) -> None:
    from tests.build.conftest import qdate

    # Two firms, 6 quarters from 2000Q1 (panel start); revtq reported by firm A only.
    rows = []
    for c in range(6):
        yr, qt = 2000 + c // 4, c % 4 + 1
        rows.append(
            {
                "gvkey": "000001",
                "datadate": qdate(yr, qt),
                "fyearq": yr,
                "fqtr": qt,
                "fyr": 12,
                "ltq": 10.0 * (c + 1),
                "seqq": 0.0,
                "revtq": float(c + 1),
            }
        )
        rows.append(
            {
                "gvkey": "000002",
                "datadate": qdate(yr, qt),
                "fyearq": yr,
                "fqtr": qt,
                "fyr": 12,
                "ltq": 30.0,
                "seqq": 10.0,
            }
        )
    fundq(rows)


def test_raw_stats_and_trailing_origin_params_paper(wh, fundq):
    _two_firms(fundq)
    run_steps(wh, "100", rules="paper")
    k = dict(wh.fetchall("SELECT item_id, k FROM panel.item_k"))
    rev = wh.scalar("SELECT item_id FROM ref.items WHERE item = 'revtq'")
    z_a = [10.0 * (c + 1) + 1e-3 for c in range(6)]
    z_b = 40.001
    raw = {
        r[0]: r[1:]
        for r in wh.fetchall(
            "SELECT q, mu_raw, sigma_raw FROM stage.raw_stats WHERE item_id = 0 ORDER BY q"
        )
    }
    q0 = 8000
    for c in range(6):
        a = np.arcsinh(k[0] * np.array([z_a[c], z_b]))
        assert raw[q0 + c][0] == pytest.approx(a.mean(), rel=1e-12)
        sd = a.std(ddof=1)  # 2000Q4: both firms have z = 40.001 -> zero std -> 1
        assert raw[q0 + c][1] == pytest.approx(sd if sd > 0 else 1.0, rel=1e-9)
    params = {
        r[0]: r[1:]
        for r in wh.fetchall(
            "SELECT q, mu, sigma FROM panel.origin_params WHERE item_id = 0 ORDER BY q"
        )
    }
    # Trailing means over t-3..t, fewer at the panel start; sigma is the whole divisor
    # (the mean plus the 1e-8 numerical floor).
    for c in range(6):
        window = [raw[q0 + j] for j in range(max(0, c - 3), c + 1)]
        assert params[q0 + c][0] == pytest.approx(np.mean([w[0] for w in window]), rel=1e-12)
        assert params[q0 + c][1] == pytest.approx(np.mean([w[1] for w in window]) + 1e-8, rel=1e-12)
    # revtq: mu_raw = asinh(k v / z) of the one reporting firm; sigma: the lag pool needs
    # 4 earlier reported positions, so quarters 0..3 have no pool -> no sigma (the rule
    # stats_quarters 'calendar': available observations only, no placeholder); at
    # position 5 (q0 + 4) the pool is {v_5 / z_1} (no position -3), one value -> std
    # missing -> 1.
    rs = {
        r[0]: r[1:]
        for r in wh.fetchall(
            "SELECT q, mu_raw, sigma_raw FROM stage.raw_stats WHERE item_id = ? ORDER BY q", [rev]
        )
    }
    for c in range(6):
        assert rs[q0 + c][0] == pytest.approx(math.asinh(k[rev] * (c + 1) / z_a[c]), rel=1e-12)
        assert rs[q0 + c][1] == (1.0 if c >= 4 else None)
    # The origin's parameters average what is available over t-3..t: revtq has none before
    # its first sigma (q0 + 4), then the mean of the available mu over the window.
    got = {
        q: (mu, sigma)
        for q, mu, sigma in wh.fetchall(
            "SELECT q, mu, sigma FROM panel.origin_params WHERE item_id = ?", [rev]
        )
    }
    assert sorted(got) == [q0 + 4, q0 + 5]
    for c in (4, 5):
        mus = [rs[q0 + j][0] for j in range(c - 3, c + 1)]
        assert got[q0 + c] == pytest.approx((np.mean(mus), 1.0 + 1e-8), rel=1e-12)
    # A quarter where an item has nothing has no statistic (NULL), no 0 or 1 placeholder.
    assert wh.scalar("SELECT count(*) FROM stage.raw_stats") == 79 * 6
    assert wh.scalar("SELECT count(*) FROM stage.raw_stats WHERE mu_raw = 0") == 0


def test_raw_stats_and_trailing_origin_params_published(wh, fundq):
    """published: statistics only for quarters where both pools exist, sigma_raw with the
    package's +1e-8, and the trailing mean over the last four such quarters, + 1e-8."""
    _two_firms(fundq)
    run_steps(wh, "100", rules="published")
    k = dict(wh.fetchall("SELECT item_id, k FROM panel.item_k"))
    rev = wh.scalar("SELECT item_id FROM ref.items WHERE item = 'revtq'")
    z_a = [10.0 * (c + 1) + 1e-3 for c in range(6)]
    q0 = 8000
    raw = {}
    for c in range(6):
        a = np.arcsinh(k[0] * np.array([z_a[c], 40.001]))
        sd = a.std(ddof=1)
        raw[q0 + c] = (a.mean(), (sd if sd > 0 else 1.0) + 1e-8)
    got = {
        r[0]: r[1:]
        for r in wh.fetchall(
            "SELECT q, mu_raw, sigma_raw FROM stage.raw_stats WHERE item_id = 0 ORDER BY q"
        )
    }
    assert sorted(got) == sorted(raw)
    for q, (mu, sd) in raw.items():
        assert got[q][0] == pytest.approx(mu, rel=1e-12) and got[q][1] == pytest.approx(
            sd, rel=1e-12
        )
    # revtq: the lag pool first exists at position 5 (q0 + 4): statistics only from there
    # (a one-value pool: std missing -> 1); the origin parameters follow those rows alone.
    rs = {
        r[0]: r[1:]
        for r in wh.fetchall(
            "SELECT q, mu_raw, sigma_raw FROM stage.raw_stats WHERE item_id = ? ORDER BY q", [rev]
        )
    }
    assert sorted(rs) == [q0 + 4, q0 + 5]
    assert rs[q0 + 4][1] == pytest.approx(1.0 + 1e-8, rel=1e-15)
    params = {
        r[0]: r[1:]
        for r in wh.fetchall(
            "SELECT q, mu, sigma FROM panel.origin_params WHERE item_id = ? ORDER BY q", [rev]
        )
    }
    assert sorted(params) == [q0 + 4, q0 + 5]
    mu5 = np.mean([math.asinh(k[rev] * 5 / z_a[4]), math.asinh(k[rev] * 6 / z_a[5])])
    assert params[q0 + 5][0] == pytest.approx(mu5, rel=1e-12)
    assert params[q0 + 5][1] == pytest.approx(1.0 + 2e-8, rel=1e-15)
    scale = {
        r[0]: r[1:]
        for r in wh.fetchall(
            "SELECT q, mu, sigma FROM panel.origin_params WHERE item_id = 0 ORDER BY q"
        )
    }
    for c in range(6):
        window = [raw[q0 + j] for j in range(max(0, c - 3), c + 1)]
        assert scale[q0 + c][1] == pytest.approx(np.mean([w[1] for w in window]) + 1e-8, rel=1e-12)
