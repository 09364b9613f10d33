"""The standardization map has one definition, SQL's (sql/build/110's panel.pf_standardize
and panel.pf_destandardize); models/standardization.py's numpy formulas agree with those
macros to the last bits of asinh and sinh, clip and inverse included."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from proforma.app.flows.build import BuildParams
from proforma.models.standardization import CLIP, destandardize, standardize


def test_numpy_map_equals_the_sql_macros(wh):
    wh.execute("CREATE SCHEMA IF NOT EXISTS panel")
    wh.run_step("build/110_standardize", BuildParams().variables(pinned=False))
    rng = np.random.default_rng(11)
    n = 2000
    cols = {
        "v": rng.standard_normal(n) * np.exp(rng.uniform(-3, 12, n)),
        "k": np.exp(rng.uniform(np.log(0.01), np.log(1000), n)),
        "z": np.exp(rng.uniform(0, 10, n)),
        "mu": rng.normal(0, 2, n),
        "sigma": rng.uniform(0.05, 3, n),
        "x": rng.uniform(-7, 7, n),
    }
    with wh.registered("inputs", pa.table(cols)):
        got = wh.arrow(
            "SELECT panel.pf_standardize(v, k, z, mu, sigma) AS s, "
            "panel.pf_destandardize(x, k, z, mu, sigma) AS d FROM inputs"
        )
    s = standardize(cols["v"], cols["k"], cols["z"], cols["mu"], cols["sigma"])
    d = destandardize(cols["x"], cols["k"], cols["z"], cols["mu"], cols["sigma"])
    # equal up to the last bits of asinh / sinh (the C library's against numpy's)
    assert np.allclose(got["s"].to_numpy(), s, rtol=1e-13, atol=1e-13)
    assert np.allclose(got["d"].to_numpy(), d, rtol=1e-13, atol=0)
    clipped = np.abs(s) == CLIP
    assert clipped.any() and (~clipped).any()  # both sides of the clip were compared
    # the inverse holds inside the clip
    back = standardize(d, cols["k"], cols["z"], cols["mu"], cols["sigma"])
    inside = np.abs(cols["x"]) < CLIP
    assert np.allclose(back[inside], cols["x"][inside], rtol=0, atol=1e-8)
