"""Local-XS factor imputation: the formula (against a loop-per-row reference written
here), observed cells untouched, planted low-rank structure recovered, quarters alone."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from proforma.app.model_inputs.imputed import _quarter_slices, quarter_fills
from proforma.app.store.reference import imputation_columns
from proforma.models.baselines.data import to_table
from proforma.models.baselines.imputation import ImputationConfig, impute_by_quarter, impute_matrix


def _low_rank(n: int, p: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, k)) @ rng.normal(size=(p, k)).T + 0.05 * rng.normal(size=(n, p))


def test_observed_cells_untouched_and_missing_filled() -> None:
    X = _low_rank(120, 60, 4, 1)
    rng = np.random.default_rng(2)
    Xm = X.copy()
    Xm[rng.random(X.shape) < 0.25] = np.nan
    out = impute_matrix(Xm)
    obs = np.isfinite(Xm)
    assert np.array_equal(out[obs], Xm[obs])
    assert np.isfinite(out).all()


def _column_means(X: np.ndarray) -> np.ndarray:
    """Observed column means, 0 for a column never observed (nanmean warns there)."""
    seen = (~np.isnan(X)).sum(axis=0)
    return np.nansum(X, axis=0) / np.maximum(seen, 1)


def _local_xs_reference(X: np.ndarray, k: int = 10) -> np.ndarray:
    """The estimator as written in the literature, one row at a time (test reference)."""
    means = _column_means(X)
    Xc = X - means
    n, p = X.shape
    W = (~np.isnan(Xc)).astype(float)
    Z = np.nan_to_num(Xc)
    cov = (Z.T @ Z) / np.where(W.T @ W == 0, 1.0, W.T @ W)
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1][:k]
    lam = vecs[:, order] * np.sqrt(np.maximum(vals[order], 1e-8))
    out = X.copy()
    for i in range(n):
        o = W[i] == 1
        f = np.zeros(k)
        if o.any():
            f = np.linalg.solve(
                lam[o].T @ lam[o] / p + (0.01 / p) * np.eye(k), lam[o].T @ Z[i, o] / p
            )
        row = f @ lam.T + means
        out[i, ~o] = row[~o]
    return out


def test_local_xs_formula_matches_the_row_by_row_reference() -> None:
    rng = np.random.default_rng(21)
    X = _low_rank(70, 40, 5, 22) + rng.normal(size=40)
    X[rng.random(X.shape) < 0.35] = np.nan
    X[3] = np.nan  # a row observing nothing: column means
    X[:, 7] = np.nan  # a column never observed: 0 (its mean) plus the factors' part
    got, want = impute_matrix(X), _local_xs_reference(X)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9)
    assert np.allclose(got[3], _column_means(X))


def test_recovers_planted_low_rank_structure() -> None:
    X = _low_rank(300, 200, 6, 3) + 5.0  # non-zero means: the fit must restore them
    rng = np.random.default_rng(4)
    miss = rng.random(X.shape) < 0.3
    Xm = np.where(miss, np.nan, X)
    out = impute_matrix(Xm, ImputationConfig(n_factors=10))
    err = out[miss] - X[miss]
    # The held-out cells come back to within the noise level, far better than column means.
    col_mean = np.nanmean(Xm, axis=0)
    base = np.broadcast_to(col_mean, X.shape)[miss] - X[miss]
    assert np.sqrt(np.mean(err**2)) < 0.2 * np.sqrt(np.mean(base**2))
    assert np.corrcoef(out[miss], X[miss])[0, 1] > 0.98


def test_quarters_are_imputed_separately() -> None:
    # Quarter A has the structure, quarter B is a constant column pattern: mixing them
    # would leak A's values into B.
    A = _low_rank(80, 30, 3, 5)
    B = np.tile(np.arange(30, dtype=float), (50, 1))
    X = np.vstack([A, B])
    q = np.r_[np.zeros(80, int), np.ones(50, int)]
    Xm = X.copy()
    Xm[80:][np.random.default_rng(6).random((50, 30)) < 0.2] = np.nan
    out = impute_by_quarter(Xm, q)
    assert np.array_equal(out[:80], X[:80])  # nothing missing: untouched
    assert np.allclose(out[80:], B, atol=1e-4)
    # A quarter with fewer rows than factors + 1 is not imputed at all.
    few = impute_by_quarter(Xm[80:90], np.zeros(10, int))
    assert np.array_equal(np.isnan(few), np.isnan(Xm[80:90]))


def test_degenerate_quarters() -> None:
    one_row = np.array([[1.0, np.nan, 3.0]])
    assert np.allclose(impute_matrix(one_row), [[1.0, 0.0, 3.0]])
    never = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan]])
    out = impute_matrix(never)
    assert np.allclose(out[:, 0], [1, 2, 3]) and np.allclose(out[:, 1], 0.0)


def test_quarter_fills_are_the_imputed_gaps(panel) -> None:
    """One quarter's fills: exactly its gaps among the imputation columns (release order,
    scale_level_0, no industry dummies), each the local-XS value, indexed by the feature's
    position in the view; a quarter of fewer than 11 rows gives none."""
    from proforma.app.model_inputs.views import feature_columns

    train = panel["train"]
    q = np.unique(train.origin_q)[0]
    table = to_table(train.rows(train.origin_q == q))
    index = {c: j for j, c in enumerate(feature_columns(list(train.items)))}
    cols = [c for c in imputation_columns() if c in table.column_names]
    assert "scale_level_0" in cols and not any(c.startswith("indff48_") for c in cols)
    X = np.column_stack(
        [table.column(c).cast(pa.float64()).to_numpy(zero_copy_only=False) for c in cols]
    )
    want = impute_matrix(X)
    features = np.array([index[c] for c in cols], dtype=np.int16)
    firm = table.column("firm_id").to_numpy()
    origin = table.column("origin_q").to_numpy()
    fills = quarter_fills(firm, origin, X, ImputationConfig(), features).to_pylist()
    gaps = np.argwhere(np.isnan(X))
    assert len(fills) == len(gaps) > 0
    by_key = {(r["firm_id"], r["feature"]): r["value"] for r in fills}
    for row, col in gaps:
        assert by_key[(firm[row], index[cols[col]])] == np.float32(want[row, col])
    small = quarter_fills(firm[:10], origin[:10], X[:10], ImputationConfig(), features)
    assert small.num_rows == 0


def test_quarter_slices_of_sorted_rows() -> None:
    q = np.array([1, 1, 2, 2, 3, 4, 4, 4], dtype=np.int32)
    assert [(s.start, s.stop) for s in _quarter_slices(q)] == [(0, 2), (2, 4), (4, 5), (5, 8)]
    assert [(s.start, s.stop) for s in _quarter_slices(q[:1])] == [(0, 1)]


def test_iterative_eigenpairs_equal_lapacks_on_a_wide_quarter() -> None:
    """At the tabular view's width the top eigenpairs come from ARPACK: the fills equal
    those of LAPACK's decomposition (the parity figures were checked with LAPACK)."""
    import scipy.linalg

    from proforma.models.baselines import imputation

    rng = np.random.default_rng(31)
    X = _low_rank(400, 320, 12, 32) + rng.normal(size=320)
    X[rng.random(X.shape) < 0.4] = np.nan
    assert X.shape[1] >= imputation.ITERATIVE_FROM
    sigma = np.cov(np.nan_to_num(X), rowvar=False)
    vals, vecs = imputation.top_eigenpairs(sigma, 10)
    ref_vals, ref_vecs = scipy.linalg.eigh(sigma)
    assert np.allclose(np.sort(vals), ref_vals[-10:], rtol=1e-10)
    # the same subspace (eigenvectors up to sign): equal projectors
    top = ref_vecs[:, -10:]
    assert np.allclose(vecs @ vecs.T, top @ top.T, atol=1e-10)
    got, want = impute_matrix(X), _local_xs_reference(X)
    assert np.allclose(got, want, rtol=1e-9, atol=1e-9)
