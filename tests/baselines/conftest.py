"""Tiny tabular panels in the contract's column layout (985 features, 78 x 20 targets)."""

from __future__ import annotations

import numpy as np
import pytest

from proforma.models.baselines.data import N_HORIZONS, TabularData, feature_columns, item_names


def make_panel(
    n_per_q: int = 40,
    quarters: dict[str, range] | None = None,
    seed: int = 0,
    missing: float = 0.1,
    target_missing: float = 0.1,
) -> dict[str, TabularData]:
    """Splits of a panel where every target is a linear function of a few features plus noise."""
    quarters = quarters or {
        "train": range(7900, 7912),
        "val": range(8010, 8014),
        "test": range(8050, 8054),
    }
    rng = np.random.default_rng(seed)
    features = feature_columns()
    items = item_names()
    p = len(features)
    load = rng.normal(size=(p, 3)) * 0.8
    beta = rng.normal(size=(3, len(items), N_HORIZONS))
    out = {}
    firm = 0
    for split, qs in quarters.items():
        nq = n_per_q * len(qs)
        F = rng.normal(size=(nq, 3))
        X = (F @ load.T + 0.3 * rng.normal(size=(nq, p))).astype(np.float32)
        X[:, -48:] = 0.0
        X[np.arange(nq), p - 48 + rng.integers(0, 48, nq)] = 1.0  # one industry dummy per row
        Y = np.einsum("nk,kih->nih", F, beta) + 0.3 * rng.normal(size=(nq, len(items), N_HORIZONS))
        Y = Y.astype(np.float32)
        Xm = X.copy()
        Xm[:, :-48][rng.random((nq, p - 48)) < missing] = np.nan
        Y[rng.random(Y.shape) < target_missing] = np.nan
        out[split] = TabularData(
            firm_id=np.arange(firm, firm + nq, dtype=np.int32),
            origin_q=np.repeat(np.asarray(list(qs), dtype=np.int32), n_per_q),
            split=np.full(nq, split, dtype=object),
            X=Xm,
            Y=Y,
            features=features,
            items=items,
        )
        firm += nq
    return out


@pytest.fixture
def panel() -> dict[str, TabularData]:
    return make_panel()


@pytest.fixture
def panel_factory():
    """make_panel itself, for tests that need another shape."""
    return make_panel
