"""Projection of forecast statements onto the accounting identities (docs/report.md).

A statement is one (firm, origin, horizon): its item values in reported units. An
identity is a set of signed terms that sum to zero (ref.identities); it is enforceable
in a statement when every member item is forecast there. With A the enforceable
identities' rows over the statement's items and W a diagonal of positive weights, the
weighted least-squares adjustment that makes every enforceable identity hold is

    v' = v - W A' (A W A')^+ A v

(minimum of sum_j (v'_j - v_j)^2 / w_j subject to A v' = 0). Variance weights are the
squared delta-method sd of each value, so the items the model is least sure about absorb
most of the residual; equal weights (W = I) minimize the total squared dollar change.
Items in no enforceable identity are not touched.

Statements are processed in groups that share one pattern of enforceable identities, so
each group is a stack of small dense systems solved at once with numpy. Identities are
often linearly dependent (the income statement's ten are not independent), so each
pattern keeps an independent subset of its rows (same solution set, a positive definite
A W A'); the systems are Jacobi-scaled and the correction is applied twice (iterative
refinement), which brings the residual to rounding level even when a statement's values
span twelve orders of magnitude.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import linalg

WEIGHTS = ("variance", "equal")
#: Weights below this share of a statement's largest weight are raised to it, so that
#: A W A' stays invertible when a value's delta-method sd underflows.
WEIGHT_FLOOR = 1e-24
REFINEMENTS = 2


@dataclass(frozen=True)
class IdentitySet:
    """The identities as a dense matrix over item columns: matrix[i, j] = sign of item
    columns[j] in identity names[i] (0 when it is not a member)."""

    names: tuple[str, ...]
    columns: np.ndarray  # item ids, sorted
    matrix: np.ndarray  # (identities, items) float

    @classmethod
    def from_terms(
        cls, identity: Sequence[str], item_id: Sequence[int], sign: Sequence[float]
    ) -> IdentitySet:
        names = tuple(sorted(set(map(str, identity))))
        columns = np.array(sorted({int(i) for i in item_id}), dtype=np.int64)
        matrix = np.zeros((len(names), len(columns)))
        row = {n: i for i, n in enumerate(names)}
        col = {int(c): j for j, c in enumerate(columns)}
        for name, item, s in zip(identity, item_id, sign):
            matrix[row[str(name)], col[int(item)]] = float(s)
        return cls(names, columns, matrix)

    @property
    def members(self) -> np.ndarray:
        """(identities, items) bool: which items each identity needs."""
        return self.matrix != 0


def enforceable(present: np.ndarray, identities: IdentitySet) -> np.ndarray:
    """(statements, identities) bool: identities whose members are all present."""
    members = identities.members.astype(np.int64)
    return (present.astype(np.int64) @ members.T) == members.sum(1)[None, :]


def independent_rows(matrix: np.ndarray) -> np.ndarray:
    """Indices of a maximal linearly independent subset of the rows (QR with pivoting)."""
    if matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    _, r, piv = linalg.qr(matrix.T, pivoting=True, mode="economic")
    diag = np.abs(np.diag(r))
    rank = int((diag > diag.max() * 1e-10).sum()) if diag.size else 0
    return np.sort(piv[:rank])


def _correction(values: np.ndarray, weights: np.ndarray, a: np.ndarray) -> np.ndarray:
    """W A' (A W A')^-1 A v for a stack of statements (A with independent rows)."""
    residual = values @ a.T  # (n, m)
    gram = (a[None, :, :] * weights[:, None, :]) @ a.T  # (n, m, m)
    scale = np.sqrt(np.einsum("nii->ni", gram))  # Jacobi scaling
    scaled = gram / scale[:, :, None] / scale[:, None, :]
    rhs = (residual / scale)[..., None]
    try:
        lam = np.linalg.solve(scaled, rhs)[..., 0] / scale
    except np.linalg.LinAlgError:
        # Numerically singular only when rows are parallel up to items of negligible
        # weight; the pseudo-inverse then leaves those items' share of the residual.
        lam = (np.linalg.pinv(scaled, rcond=1e-15, hermitian=True) @ rhs)[..., 0] / scale
    return weights * (lam @ a)


def project(values: np.ndarray, weights: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Statements `values` (n, k) adjusted so that a @ v = 0 for every row of `a` (m, k),
    with per-statement diagonal weights (n, k) > 0. Rows of `a` may be dependent."""
    keep = independent_rows(a)
    if keep.size == 0 or values.shape[0] == 0:
        return values.copy()
    a = a[keep]
    # The projection does not change when a statement's weights are scaled together;
    # scaling by the largest keeps A W A' in range.
    w = weights / weights.max(axis=1, keepdims=True)
    w = np.maximum(w, WEIGHT_FLOOR)
    out = values.copy()
    for _ in range(REFINEMENTS):
        out = out - _correction(out, w, a)
    return out


@dataclass
class Projected:
    """The reconciled values (same shape as the input, NaN where absent), which cells
    changed, and per statement the largest relative identity residual before and after."""

    values: np.ndarray
    changed: np.ndarray
    statements: int
    residual_before: np.ndarray
    residual_after: np.ndarray


def relative_residuals(
    values: np.ndarray, enforce: np.ndarray, identities: IdentitySet
) -> np.ndarray:
    """(statements, identities) |sum_j s_j v_j| / sum_j |s_j v_j| where enforceable, else NaN."""
    filled = np.where(np.isfinite(values), values, 0.0)
    net = np.abs(filled @ identities.matrix.T)
    gross = np.abs(filled) @ np.abs(identities.matrix.T)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(gross > 0, net / gross, 0.0)
    return np.where(enforce, share, np.nan)


def reconcile_statements(
    values: np.ndarray, weights: np.ndarray | None, identities: IdentitySet
) -> Projected:
    """Reconcile a batch of statements.

    values: (statements, items) in reported units over identities.columns, NaN where the
    item is not forecast; weights: the same shape (variance weights) or None (equal).
    A cell counts as present when its value (and weight) is finite and, with weights,
    its weight is > 0; identities with an absent member are not enforced.
    """
    present = np.isfinite(values)
    if weights is not None:
        present &= np.isfinite(weights) & (weights > 0)
    enforce = enforceable(present, identities)
    out = values.copy()
    touched_rows = np.nonzero(enforce.any(axis=1))[0]
    if touched_rows.size:
        bits = np.packbits(enforce[touched_rows], axis=1)
        patterns, which = np.unique(bits, axis=0, return_inverse=True)
        which = which.reshape(-1)
        for p in range(len(patterns)):
            rows = touched_rows[which == p]
            ids = np.nonzero(enforce[rows[0]])[0]
            cols = np.nonzero(identities.members[ids].any(axis=0))[0]
            a = identities.matrix[np.ix_(ids, cols)]
            v = values[np.ix_(rows, cols)]
            w = np.ones_like(v) if weights is None else weights[np.ix_(rows, cols)]
            out[np.ix_(rows, cols)] = project(v, w, a)
    changed = present & (out != values)
    return Projected(
        values=out,
        changed=changed,
        statements=int(touched_rows.size),
        residual_before=_max_or_nan(relative_residuals(values, enforce, identities)),
        residual_after=_max_or_nan(relative_residuals(out, enforce, identities)),
    )


def _max_or_nan(a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        filled = np.where(np.isnan(a), -np.inf, a).max(axis=1, initial=-np.inf)
    return np.where(np.isinf(filled), np.nan, filled)
