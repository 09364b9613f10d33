"""A two-component mixture is scored by 054's pair terms (one join of its two components'
rows, no per-cell aggregate); they give the general terms' scores on every kind of cell."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from proforma.app.scoring.cells import family_params, register_functions, rule_params
from proforma.contracts.rules import RuleSet

SCORES = ("r", "nll", "crps", "z", "u")
FLAGS = ("in50", "in80", "in90", "in95")


def _cells(seed: int, components: tuple[int, int]) -> pa.Table:
    """(cell, actual, component, mu, sigma) rows of 400 cells with both components, and
    cells that trigger each edge: one component only, a non-finite mu, a missing, zero
    or non-finite sigma, components 40-80 sds away (the density's sum underflows), a
    tiny sigma (it overflows)."""
    rng = np.random.default_rng(seed)
    n = 400
    actual = rng.normal(0, 1, n)
    mu = actual[None, :] + rng.normal(0, 0.5, (2, n))
    sigma = rng.uniform(0.1, 0.9, (2, n))
    mu[:, 10:20] = actual[10:20] + np.array([[40.0], [-80.0]]) * sigma[:, 10:20]  # far tails
    sigma[1, 20:25] = 1e-30  # overflow of the direct sum
    mu[0, 25:28] = np.nan
    mu[1, 28] = np.inf
    sigma[0, 30:33] = np.nan
    sigma[1, 33:36] = 0.0
    sigma[0, 36] = np.inf
    mu[1, 37:40] = mu[0, 37:40]  # equal means, and equal scales below (the Laplace limit)
    sigma[1, 37:40] = sigma[0, 37:40]
    keep = np.ones((2, n), bool)
    keep[0, 40:50] = False  # cells with the second component only
    keep[1, 50:60] = False  # ... with the first only
    rows: dict[str, list[Any]] = {k: [] for k in ("cell", "actual", "component", "mu", "sigma")}
    for k, component in enumerate(components):
        idx = np.flatnonzero(keep[k])
        rows["cell"].append(idx.astype(np.int64) * 7 + 3)
        rows["actual"].append(actual[idx])
        rows["component"].append(np.full(idx.size, component, np.int16))
        rows["mu"].append(mu[k, idx])
        rows["sigma"].append(
            np.where(np.isnan(sigma[k, idx]) & (idx % 2 == 0), None, sigma[k, idx])
        )
    table = pa.table(
        {
            "cell": pa.array(np.concatenate(rows["cell"])),
            "actual": pa.array(np.concatenate(rows["actual"]), pa.float32()),
            "component": pa.array(np.concatenate(rows["component"])),
            "mu": pa.array(np.concatenate(rows["mu"])),
            "sigma": pa.array(np.concatenate(rows["sigma"]).tolist(), pa.float64()),
        }
    )
    return table.take(rng.permutation(table.num_rows))  # no order to lean on


@pytest.mark.parametrize("family", ["gaussian", "laplace", "student_t"])
@pytest.mark.parametrize("rules", ["published", "paper"])
@pytest.mark.parametrize("has_sigma", [True, False])
def test_pair_terms_equal_the_general_terms(wh, family, rules, has_sigma):
    register_functions(wh)
    components = (3, 7)
    wh.con.register("pair_cells", _cells(len(family) + len(rules), components))
    sub = {"family": family, "df": 5.0 if family == "student_t" else None}
    params = {
        **family_params(sub),
        **rule_params(RuleSet.parse(rules, "test")),
        "has_sigma": has_sigma,
        "first_component": components[0],
    }
    wh.run_step("eval/054_mixture_cell_terms", params, identifiers={"cells": "pair_cells"})
    columns = ", ".join(SCORES + FLAGS)
    general = wh.arrow(f"SELECT cell, {columns} FROM mixture_cell_terms ORDER BY cell")
    pair = wh.arrow(f"SELECT cell, {columns} FROM mixture_pair_cell_terms ORDER BY cell")
    assert pair["cell"].to_pylist() == general["cell"].to_pylist()
    assert general.num_rows > 380  # the non-finite mus' cells only are left out
    for name in SCORES:
        want = general[name].to_numpy(zero_copy_only=False).astype(float)
        got = pair[name].to_numpy(zero_copy_only=False).astype(float)
        assert np.array_equal(np.isnan(got), np.isnan(want)), name
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=name)
    for name in FLAGS:
        assert pair[name].to_pylist() == general[name].to_pylist(), name
    if has_sigma:
        nll = general["nll"].to_numpy(zero_copy_only=False).astype(float)
        assert np.isfinite(nll[~np.isnan(nll)]).all()  # the tails' sums were redone
