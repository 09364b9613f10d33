"""The Student-t CDF of 057: the closed form for a whole df from 2 to 100 and the Python
UDF for any other df (df 1 included) agree with scipy's stdtr, the published
evaluator's, including the tails."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from scipy import special

from proforma.app.scoring.cells import register_functions

#: w = (actual - mu) / sigma over the body and both tails (sigma 1, mu 0).
W = np.concatenate([-np.geomspace(1e-8, 1e6, 120), [0.0], np.geomspace(1e-8, 1e6, 120)])


def _pit(wh, df: float, actual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """057's u and crps for mu 0, sigma 1 at `actual` under a Student-t of `df`."""
    cells = pa.table(
        {
            "cell": pa.array(np.arange(actual.size, dtype=np.int64)),
            "mu": pa.array(np.zeros(actual.size)),
            "sigma": pa.array(np.ones(actual.size)),
            "actual": pa.array(actual),
        }
    )
    register_functions(wh)
    wh.con.register("t_cells", cells)
    try:
        wh.run_step(
            "eval/057_single_cell_terms",
            {
                "family": "student_t",
                "df": df,
                "sigma_in_sample": False,
                "sigma_floor": None,
                "float32_residuals": False,
            },
            identifiers={"cells": "t_cells"},
        )
        out = wh.arrow("SELECT u, crps FROM single_cell_terms ORDER BY cell")
    finally:
        wh.execute("DROP VIEW IF EXISTS single_cell_terms")
        wh.con.unregister("t_cells")
    return (
        out["u"].to_numpy(zero_copy_only=False),
        out["crps"].to_numpy(zero_copy_only=False),
    )


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 6, 7, 10, 29, 30, 99, 100, 2.5, 101, 250.0])
def test_t_cdf_matches_scipy(wh, df):
    u, crps = _pit(wh, float(df), W)
    want = special.stdtr(df, W)
    np.testing.assert_allclose(u, want, rtol=0, atol=2e-15)
    # the lower tail keeps its relative accuracy where it is above rounding
    lower = W < -1
    tail = want[lower] > 1e-10
    np.testing.assert_allclose(u[lower][tail], want[lower][tail], rtol=1e-6)
    if df > 1:
        assert np.isfinite(crps).all()
    else:  # no finite CRPS without a mean
        assert np.isnan(crps.astype(float)).all()


def test_t_cdf_series_only_for_whole_df_from_2_to_100(wh):
    """The closed form's coefficients are set for a whole df in [2, 100] only, and the
    series has floor(df / 2) terms."""
    for df, terms in ((2.0, [1.0]), (3.0, [1.0]), (4.0, [1.0, 0.5]), (7.0, [1.0, 2 / 3, 8 / 15])):
        _pit(wh, df, np.array([0.5]))
        assert wh.scalar("SELECT getvariable('t_series')") == pytest.approx(terms, abs=1e-15)
    for df in (1.0, 2.5, 101.0, 0.5):
        _pit(wh, df, np.array([0.5]))
        assert wh.scalar("SELECT getvariable('t_series')") is None


def test_the_udf_is_registered_once_whichever_connection_asks_and_no_transaction_aborts(
    tmp_path,
):
    """Two warehouses of one file share DuckDB's database instance and its catalog: the
    second one's registration finds the function there, outside a transaction by
    trying (the failure harms nothing) and inside one by looking it up (a failure would
    abort the transaction)."""
    from proforma.app.store.warehouse import connect

    path = tmp_path / "udf.duckdb"
    first, second, third = (connect(path=path) for _ in range(3))
    try:
        register_functions(first)
        register_functions(second)
        assert "eval_t_cdf" in second.functions
        with third.transaction():
            third.execute("CREATE TABLE kept AS SELECT 1 AS x")
            register_functions(third)
            assert third.scalar("SELECT eval_t_cdf(0.0, 3.0)") == pytest.approx(0.5)
        assert third.scalar("SELECT count(*) FROM kept") == 1
        assert second.scalar("SELECT eval_t_cdf(0.0, 3.0)") == pytest.approx(0.5)
    finally:
        for wh in (first, second, third):
            wh.close()
