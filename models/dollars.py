"""Forecasts in reported units (dollars) from the standardized space, with the ORIGIN's
deflator z and parameters (k, mu_t, sigma_t): v = z sinh(x sigma_t + mu_t) / k
(docs/contracts.md; the SQL macro panel.pf_destandardize).

Plugging a predictive mean into that map (`plug_in_dollars`) gives the dollars of the
mean, not the mean in dollars, since sinh is not linear. For a Gaussian X ~ N(m, s^2) the
expectation has a closed form (the paper's "Evaluation Using R2 for Changes"; docs/report.md):

    E[sinh(a X + b)] = exp(a^2 s^2 / 2) sinh(a m + b),   a = sigma_t, b = mu_t,

and for a Laplace X with scale s / sqrt 2 (sd s), when a^2 s^2 / 2 < 1,

    E[sinh(a X + b)] = sinh(a m + b) / (1 - a^2 s^2 / 2)     (infinite otherwise).

In general E[sinh(a X + b)] = E[exp(a (X - m))] sinh(a m + b) for a symmetric X, and
each family of the registry gives that factor (contracts/families.py, `sinh_factor`).
An equal-weight mixture's expectation is the mean of its components' (expectation is
linear). Student-t predictive distributions have no finite mean in dollars (E[e^{aX}]
diverges); `expected_dollars` returns NaN for them (a family without a factor). The clip at +-6 of the standardized
space is not applied: it bounds the truth, not the predictive distribution.
"""

from __future__ import annotations

import numpy as np

from proforma.contracts import families
from proforma.models.standardization import destandardize


def plug_in_dollars(
    x: np.ndarray | float,
    k: np.ndarray | float,
    z: np.ndarray | float,
    mu_t: np.ndarray | float,
    sigma_t: np.ndarray | float,
) -> np.ndarray:
    """z sinh(x sigma_t + mu_t) / k: the dollars of a standardized value (or of a mean)."""
    return destandardize(x, k, z, mu_t, sigma_t)


def expected_dollars(
    mu: np.ndarray | float,
    sigma: np.ndarray | float | None,
    k: np.ndarray | float,
    z: np.ndarray | float,
    mu_t: np.ndarray | float,
    sigma_t: np.ndarray | float,
    *,
    family: str = families.DEFAULT_FAMILY,
    component_axis: int | None = None,
) -> np.ndarray:
    """E[z sinh(sigma_t X + mu_t) / k] for X with location `mu` and sd `sigma` (closed form).

    `component_axis`: the axis of `mu`/`sigma` that holds equal-weight mixture components
    (their expectations are averaged); None for a single distribution. Without a sigma
    (None or NaN) the forecast is a point and its dollars are the plug-in value.
    """
    spec = families.FAMILIES.get(family)
    if spec is None:
        raise ValueError(f"unknown family {family!r}")
    mu = np.asarray(mu, dtype=float)
    a = np.asarray(sigma_t, dtype=float)
    b = np.asarray(mu_t, dtype=float)
    core = np.sinh(a * mu + b)
    if sigma is not None:
        s = np.asarray(sigma, dtype=float)
        spread = (a * s) ** 2 / 2.0
        # the family's E[exp(a (X - mu))] (contracts/families.py: sinh_factor)
        if spec.sinh_factor is not None:
            factor = spec.sinh_factor(spread)
        else:
            factor = np.full_like(spread, np.nan)
        # a point forecast (no sigma on that cell) keeps its plug-in value
        factor = np.where(np.isnan(s), 1.0, factor)
        with np.errstate(invalid="ignore", over="ignore"):
            core = core * factor
    if component_axis is not None:
        core = core.mean(axis=component_axis)
    return np.asarray(z) * core / np.asarray(k)
