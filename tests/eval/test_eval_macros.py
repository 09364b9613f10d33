"""The SQL macros of V0030 against scipy / numpy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats


def test_norm_cdf_is_double_precision(wh):
    x = np.concatenate([np.linspace(-40, 40, 4001), np.random.default_rng(0).normal(0, 3, 2000)])
    got = np.array(
        [
            r[0]
            for r in wh.fetchall(
                "SELECT eval.norm_cdf(x) FROM (SELECT unnest(?) AS x, generate_subscripts(?, 1) AS i) "
                "ORDER BY i",
                [x.tolist(), x.tolist()],
            )
        ]
    )
    assert np.max(np.abs(got - stats.norm.cdf(x))) < 1e-14
    tail = (x < -3) & (x > -37)  # relative accuracy in the tail (0 below -37)
    rel = np.abs(got[tail] - stats.norm.cdf(x[tail])) / stats.norm.cdf(x[tail])
    assert np.max(rel) < 1e-7  # 1e-14 near the body, ~1e-8 only beyond -30


@pytest.mark.parametrize(
    "d,b1,b2", [(0.0, 1.0, 1.0), (0.7, 0.5, 1.3), (-2.0, 0.3, 0.3000001), (1.5, 2.0, 0.1)]
)
def test_laplace_pair_matches_monte_carlo(wh, d, b1, b2):
    got = wh.scalar("SELECT eval.laplace_pair(?, ?, ?)", [d, b1, b2])
    rng = np.random.default_rng(1)
    n = 2_000_000
    mc = np.mean(np.abs(d + rng.laplace(0, b1, n) - rng.laplace(0, b2, n)))
    assert got == pytest.approx(mc, rel=3e-3)


def test_gauss_abs_and_origin_text(wh):
    m, s = 0.4, 0.7
    z = np.random.default_rng(2).standard_normal(2_000_000)
    assert wh.scalar("SELECT eval.gauss_abs(?, ?)", [m, s]) == pytest.approx(
        np.mean(np.abs(m + s * z)), rel=2e-3
    )
    got = [
        r[0]
        for r in wh.fetchall(
            "SELECT eval.origin_from_text(s) FROM (SELECT unnest(['2010Q1', '2010-q4', '2010 Q2', "
            "'2010-05-17', '2010-12-31 23:59:59', 'junk']) AS s, generate_subscripts(['a','b','c',"
            "'d','e','f'], 1) AS i) ORDER BY i"
        )
    ]
    assert got == [8040, 8043, 8041, 8041, 8043, None]
