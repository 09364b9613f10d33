"""Cross-sectional latent-factor imputation of the tabular features (local XS, 10 factors).

The paper's choice for every tabular competitor, and the published package's: the
cross-sectional (XS) estimator of Bryzgalova, Lerner, Lettau and Pelger, fit one calendar
quarter at a time on the observed cells, filling only the missing ones. For one quarter
(rows = firms, columns = characteristics):

1. centre each column on its observed mean (0 for a column never observed);
2. the covariance of every pair of columns from the rows observing both,
   Sigma = X'X / W'W (zero-filled X, W the observed mask; no pair counts as one);
3. loadings Lambda = the top K eigenvectors of Sigma scaled by the square roots of their
   eigenvalues (floored at 1e-8);
4. per row, factors F = ((1/L) Lo'Lo + gamma I)^-1 (1/L) Lo' yo over its observed cells
   (L columns, gamma = 0.01 / L); a row observing nothing keeps F = 0;
5. missing cells = F Lambda' + the column means.

Which columns enter (the tabular levels and year-over-year changes plus scale_level_0,
never the industry dummies) and in which order is the caller's business
(app/model_inputs/imputed.py); quarters with fewer than K + 1 rows are not imputed there. Observed
cells are never modified: the output equals the input wherever the input is finite.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from proforma.models.numerics import one_blas_thread


@dataclass(frozen=True)
class ImputationConfig:
    n_factors: int = 10
    #: Ridge on the per-row factor regression; None means 0.01 / number of columns.
    gamma: float | None = None

    @property
    def min_rows(self) -> int:
        """A quarter needs more rows than factors to be imputed at all."""
        return self.n_factors + 1


def impute_matrix(X: np.ndarray, config: ImputationConfig | None = None) -> np.ndarray:
    """Fill the NaN cells of one cross-section X (rows = firms, columns = characteristics).

    Callers imputing many quarters run them under models.numerics.one_blas_thread() (and,
    if they like, on several threads of their own)."""
    return _local_xs(np.asarray(X, dtype=np.float64), config or ImputationConfig())


#: From this many columns on, the top k eigenpairs come from ARPACK's Lanczos iteration:
#: at the tabular view's 937 columns it is many times faster than LAPACK's subset driver,
#: which was most of the imputation's time (docs/baselines.md has the figures).
ITERATIVE_FROM = 200


def top_eigenpairs(sigma: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest (algebraic) eigenvalues of the symmetric sigma and their vectors.
    ARPACK iterates to machine precision (tol=0) from a fixed start vector, so the result
    is deterministic and equals LAPACK's to ~1e-12 (tests); LAPACK takes small matrices
    and anything ARPACK does not converge on."""
    p = sigma.shape[0]
    if p >= ITERATIVE_FROM and k < p - 1:
        start = np.random.default_rng(0).standard_normal(p)
        try:
            return scipy.sparse.linalg.eigsh(sigma, k=k, which="LA", tol=0, v0=start)
        except scipy.sparse.linalg.ArpackNoConvergence:
            pass
    # the same LAPACK driver a full decomposition uses, top k only: equal to it to ~1e-14
    return scipy.linalg.eigh(sigma, subset_by_index=[p - k, p - 1])


def _local_xs(data: np.ndarray, cfg: ImputationConfig) -> np.ndarray:
    out = data.copy()
    missing = np.isnan(data)
    if not missing.any():
        return out
    n, p = data.shape
    k = min(cfg.n_factors, p)
    gamma = 0.01 / p if cfg.gamma is None else cfg.gamma
    observed = ~missing
    count = observed.sum(axis=0)
    means = np.where(
        count > 0, np.where(observed, data, 0.0).sum(axis=0) / np.maximum(count, 1), 0.0
    )
    X = np.where(observed, data - means, 0.0)
    W = observed.astype(np.float64)
    pairs = W.T @ W
    pairs[pairs == 0] = 1.0
    sigma = (X.T @ X) / pairs
    evals, evecs = top_eigenpairs(sigma, k)
    top = np.argsort(evals)[::-1]
    loadings = evecs[:, top] * np.sqrt(np.maximum(evals[top], 1e-8))  # (p, k)

    # All rows' normal equations at once: G_i = (1/p) sum_j w_ij l_j l_j' + gamma I.
    outer = (loadings[:, :, None] * loadings[:, None, :]).reshape(p, k * k)
    G = (W @ outer).reshape(n, k, k) / p + gamma * np.eye(k)
    b = (X @ loadings) / p
    factors = np.linalg.solve(G, b[:, :, None])[:, :, 0]
    factors[~observed.any(axis=1)] = 0.0
    filled = factors @ loadings.T + means
    out[missing] = filled[missing]
    return out


def impute_by_quarter(
    X: np.ndarray, quarters: np.ndarray, config: ImputationConfig | None = None
) -> np.ndarray:
    """Impute each calendar quarter's cross-section separately (rows grouped by `quarters`);
    a quarter with fewer than n_factors + 1 rows keeps its gaps."""
    config = config or ImputationConfig()
    out = np.asarray(X, dtype=np.float64).copy()
    with one_blas_thread():
        for q in np.unique(quarters):
            rows = np.nonzero(quarters == q)[0]
            if rows.size >= config.min_rows and np.isnan(out[rows]).any():
                out[rows] = impute_matrix(out[rows], config)
    return out
