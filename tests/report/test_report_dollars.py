"""Expected dollars by the closed form (models/dollars.py), checked against Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from proforma.models.dollars import expected_dollars, plug_in_dollars

# (location, sd, k, z, mu_t, sigma_t): an ordinary item, a wide one, a negative one
CASES = [
    (0.3, 0.5, 2.0, 1500.0, 0.8, 0.9),
    (-1.2, 1.1, 0.05, 80.0, -0.4, 1.3),
    (2.0, 0.2, 15.0, 3e4, 1.5, 0.6),
]


def monte_carlo(draws: np.ndarray, k, z, mu_t, sigma_t) -> tuple[float, float]:
    v = plug_in_dollars(draws, k, z, mu_t, sigma_t)
    return float(v.mean()), float(v.std() / np.sqrt(v.size))


@pytest.mark.parametrize("case", CASES)
def test_gaussian_closed_form_matches_monte_carlo(case):
    m, s, k, z, mu_t, sigma_t = case
    rng = np.random.default_rng(11)
    mc, se = monte_carlo(rng.normal(m, s, 2_000_000), k, z, mu_t, sigma_t)
    exact = float(expected_dollars(m, s, k, z, mu_t, sigma_t))
    assert abs(exact - mc) < 5 * se
    # and it is not the plug-in value: the mean does not commute with sinh
    assert abs(exact - float(plug_in_dollars(m, k, z, mu_t, sigma_t))) > 5 * se


@pytest.mark.parametrize("case", [CASES[0], CASES[2]])
def test_laplace_closed_form_matches_monte_carlo(case):
    m, s, k, z, mu_t, sigma_t = case
    rng = np.random.default_rng(12)
    mc, se = monte_carlo(rng.laplace(m, s / np.sqrt(2), 4_000_000), k, z, mu_t, sigma_t)
    exact = float(expected_dollars(m, s, k, z, mu_t, sigma_t, family="laplace"))
    assert abs(exact - mc) < 5 * se


def test_mixture_is_the_mean_of_its_components_closed_forms():
    mus, sds = np.array([[0.2], [0.9], [-0.5]]), np.array([[0.4], [0.7], [0.3]])
    k, z, mu_t, sigma_t = 1.5, 400.0, 0.2, 1.1
    rng = np.random.default_rng(13)
    comp = rng.integers(0, 3, 3_000_000)
    draws = rng.normal(mus[comp, 0], sds[comp, 0])
    mc, se = monte_carlo(draws, k, z, mu_t, sigma_t)
    exact = expected_dollars(mus, sds, k, z, mu_t, sigma_t, component_axis=0)
    assert exact.shape == (1,) and abs(float(exact[0]) - mc) < 5 * se


def test_points_without_sigma_and_heavy_tails():
    assert expected_dollars(0.5, None, 2.0, 10.0, 0.1, 0.9) == pytest.approx(
        plug_in_dollars(0.5, 2.0, 10.0, 0.1, 0.9)
    )
    assert expected_dollars(0.5, np.nan, 2.0, 10.0, 0.1, 0.9) == pytest.approx(
        plug_in_dollars(0.5, 2.0, 10.0, 0.1, 0.9)
    )
    # Laplace with a^2 s^2 / 2 >= 1 has no finite mean in dollars; Student-t never does
    assert np.isinf(expected_dollars(0.5, 2.0, 1.0, 1.0, 0.0, 1.0, family="laplace"))
    assert np.isnan(expected_dollars(0.5, 0.1, 1.0, 1.0, 0.0, 1.0, family="student_t"))
