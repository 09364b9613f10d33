"""The standardization map between reported values (dollars) and the model space, with
the ORIGIN's deflator z and parameters (k, mu_t, sigma_t; sigma_t the whole divisor):

    x = clip((asinh(k v / z) - mu_t) / sigma_t, -6, 6),    v = z sinh(x sigma_t + mu_t) / k.

Its one definition is SQL's, the macros panel.pf_standardize and panel.pf_destandardize
of sql/build/110_standardize.sql, which every build, view, baseline, oracle and coherence
step applies; these are the same formulas for the models' numpy arrays, checked against
those macros (tests/build/test_build_standardization.py).
"""

from __future__ import annotations

import numpy as np

#: The bound of a standardized value (sql/build/110's panel.pf_clip).
CLIP = 6.0


def standardize(
    v: np.ndarray | float,
    k: np.ndarray | float,
    z: np.ndarray | float,
    mu_t: np.ndarray | float,
    sigma_t: np.ndarray | float,
) -> np.ndarray:
    """clip((asinh(k v / z) - mu_t) / sigma_t, -6, 6): panel.pf_standardize."""
    raw = (np.arcsinh(np.asarray(k) * np.asarray(v) / np.asarray(z)) - mu_t) / np.asarray(sigma_t)
    return np.clip(raw, -CLIP, CLIP)


def destandardize(
    x: np.ndarray | float,
    k: np.ndarray | float,
    z: np.ndarray | float,
    mu_t: np.ndarray | float,
    sigma_t: np.ndarray | float,
) -> np.ndarray:
    """z sinh(x sigma_t + mu_t) / k: panel.pf_destandardize, the inverse of the map before
    its clip."""
    return np.asarray(z) * np.sinh(np.asarray(x) * sigma_t + mu_t) / np.asarray(k)
