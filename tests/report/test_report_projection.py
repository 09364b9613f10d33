"""The projection onto the identities (app/flows/projection.py) on hand-made statements."""

from __future__ import annotations

import numpy as np
import pytest

from proforma.app.flows.projection import (
    IdentitySet,
    enforceable,
    project,
    reconcile_statements,
    relative_residuals,
)

# items 1..6: A: 1 + 2 - 3 = 0; B: 3 - 4 - 5 = 0; C: 1 + 2 - 4 - 5 = 0 (= A + B, dependent);
# D: 6 - 7 = 0 (item 7 is never forecast below, so D is never enforceable)
TERMS = [
    ("A", 1, 1),
    ("A", 2, 1),
    ("A", 3, -1),
    ("B", 3, 1),
    ("B", 4, -1),
    ("B", 5, -1),
    ("C", 1, 1),
    ("C", 2, 1),
    ("C", 4, -1),
    ("C", 5, -1),
    ("D", 6, 1),
    ("D", 7, -1),
]
IDS = IdentitySet.from_terms(*zip(*TERMS))


def statements(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Values spanning many orders of magnitude and delta-method-like weights."""
    rng = np.random.default_rng(seed)
    scale = np.exp(rng.normal(8, 3, size=(n, 1)))
    values = scale * np.exp(rng.normal(0, 3, size=(n, 7))) * rng.choice([-1, 1], size=(n, 7))
    values[:, 6] = np.nan  # item 7 never forecast
    sd = np.abs(values) * np.exp(rng.normal(-1, 1, size=values.shape)) + 1e-3 * scale
    return values, sd**2


@pytest.mark.parametrize("weights", ["variance", "equal"])
def test_identities_hold_to_1e9_relative_and_untouched_cells_stay(weights):
    values, w = statements(400)
    missing = np.random.default_rng(1).random(values.shape) < 0.15
    values[missing] = np.nan
    res = reconcile_statements(values, w if weights == "variance" else None, IDS)
    enforce = enforceable(np.isfinite(values), IDS)
    after = relative_residuals(res.values, enforce, IDS)
    before = relative_residuals(values, enforce, IDS)
    assert np.nanmax(before) > 0.1  # the raw statements do not add up
    assert np.nanmax(after) < 1e-9  # every enforceable identity holds
    # cells in no enforceable identity are bit-for-bit unchanged (item 6: D never holds)
    in_enforced = (enforce.astype(int) @ IDS.members.astype(int)) > 0
    assert np.array_equal(res.values[~in_enforced], values[~in_enforced], equal_nan=True)
    assert not res.changed[:, IDS.columns.tolist().index(6)].any()
    assert res.statements == int(enforce.any(axis=1).sum())


def test_weighted_projection_is_the_constrained_least_squares_solution():
    values, w = statements(5, seed=3)
    a = IDS.matrix[:3, :5]  # A, B, C over items 1..5 (C dependent)
    v, ww = values[:, :5], w[:, :5]
    got = project(v, ww, a)
    for i in range(len(v)):
        # the same problem solved with an explicit pseudo-inverse on the independent rows
        W = np.diag(ww[i] / ww[i].max())
        ar = a[:2]
        want = v[i] - W @ ar.T @ np.linalg.solve(ar @ W @ ar.T, ar @ v[i])
        assert np.allclose(got[i], want, rtol=1e-9, atol=1e-9 * np.abs(v[i]).max())


def test_variance_weights_move_the_uncertain_item_and_equal_weights_spread():
    # 1 + 2 = 3 off by 10; item 2 has 100x the sd of the others
    values = np.array([[100.0, 50.0, 160.0, np.nan, np.nan, np.nan, np.nan]])
    w = np.array([[1.0, 1e4, 1.0, 1, 1, 1, 1]])
    var = reconcile_statements(values, w, IDS).values[0]
    eq = reconcile_statements(values, None, IDS).values[0]
    assert var[0] + var[1] == pytest.approx(var[2])
    assert abs(var[1] - 50.0) > 9.9 and abs(var[0] - 100.0) < 0.01  # item 2 absorbs it
    assert np.allclose(eq[:3] - values[0, :3], [10 / 3, 10 / 3, -10 / 3])


def test_absent_members_and_non_positive_weights_leave_an_identity_unenforced():
    values = np.array([[1.0, 2.0, 4.0, 1.0, 1.0, 5.0, np.nan]])
    w = np.ones_like(values)
    w[0, 3] = 0.0  # item 4's weight 0: B and C not enforceable, A is
    res = reconcile_statements(values, w, IDS)
    assert res.values[0, 0] + res.values[0, 1] == pytest.approx(res.values[0, 2])
    assert np.array_equal(res.values[0, 3:6], values[0, 3:6])
