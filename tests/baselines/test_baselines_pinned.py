"""Paper-preset numbers pinned: speed work on the demo preset must not move them.

The expected values were produced by the code before the demo-preset speed changes
(shared LightGBM bins, block-wise imputation writes) on this tiny panel; the paper
preset's code paths (per-fit LightGBM datasets, per-(item, horizon) scikit-learn fits,
the per-quarter factor imputation) must reproduce them.
"""

from __future__ import annotations

import numpy as np
import pytest

from proforma.models.baselines import chained_gbm, elastic_net, random_forest
from proforma.models.baselines.imputation import impute_matrix


@pytest.fixture
def pinned_panel(panel_factory):
    p = panel_factory(seed=5)
    for d in p.values():
        d.X = np.nan_to_num(d.X, nan=0.0)
    return p


def _summary(mu: np.ndarray) -> tuple[int, float, float]:
    ok = np.isfinite(mu)
    return (
        int(ok.sum()),
        float(np.sum(mu[ok], dtype=np.float64)),
        float(np.sum(np.abs(mu[ok]), dtype=np.float64)),
    )


def _check(got: tuple[int, float, float], expected: tuple[int, float, float]) -> None:
    assert got[0] == expected[0]
    assert got[1:] == pytest.approx(expected[1:], rel=1e-5, abs=1e-4)


def test_elastic_net_paper_path_pinned(pinned_panel, tmp_path) -> None:
    args = (pinned_panel["train"], pinned_panel["val"], pinned_panel["test"])
    spec = {
        "alpha": [0.1, 1.0],
        "l1_ratio": [0.1, 0.9],
        "max_iter": 10_000,
        "tol": 1e-4,
        "max_rows": None,
    }
    fc = elastic_net.fit_predict(
        *args, tmp_path, spec, items=("niq", "revtq"), horizons=(5,), backend="sklearn"
    )
    assert {h: s["g"] for h, s in fc.info["selection"].items()} == {5: 0}
    _check(_summary(fc.components[0][0]), (320, 57.72435049712658, 556.4886527471244))


def test_random_forest_paper_path_pinned(pinned_panel, tmp_path) -> None:
    args = (pinned_panel["train"], pinned_panel["val"], pinned_panel["test"])
    spec = {
        "n_estimators": [10],
        "max_depth": [3, 6],
        "min_samples_split": [20],
        "min_samples_leaf": 5,
        "max_samples": 0.5,
        "max_features": 1.0,
        "max_rows": None,
    }
    fc = random_forest.fit_predict(
        *args, tmp_path, spec, items=("niq", "atq"), horizons=(2,), backend="sklearn"
    )
    assert {h: s["g"] for h, s in fc.info["selection"].items()} == {2: 1}
    _check(_summary(fc.components[0][0]), (320, -16.03338919300586, 511.162900862284))


def test_chained_gbm_per_fit_datasets_pinned(pinned_panel, tmp_path) -> None:
    args = (pinned_panel["train"], pinned_panel["val"], pinned_panel["test"])
    spec = {
        "max_trees": 15,
        "early_stopping": 5,
        "leaves": [7, 15],
        "learning_rate": 0.1,
        "max_rows": None,
        "lgb_params": {"max_bin": 63},
    }
    fc = chained_gbm.fit_predict(
        *args, tmp_path, "l2", spec, horizons=(1,), items=("revtq", "cogsq")
    )
    chosen = {k: (v["leaves"], v["trees"]) for k, v in fc.info["chosen"][1].items()}
    assert chosen == {"revtq": (15, 15), "cogsq": (15, 15)}
    _check(_summary(fc.components[0][0]), (320, 26.4315479202196, 394.7347816033289))


# The local-XS imputation of a fixed matrix (the published package's estimator; its
# formula is checked against a row-by-row reference in test_baselines_imputation.py).
PINNED_SUM = 32295.97628502641
PINNED_ABS_SUM = 35986.47980793631


def test_imputation_pinned() -> None:
    rng = np.random.default_rng(11)
    X = rng.normal(size=(90, 8)) @ rng.normal(size=(8, 120)) + 3.0
    X[rng.random(X.shape) < 0.3] = np.nan
    out = impute_matrix(X)
    assert float(np.sum(out, dtype=np.float64)) == pytest.approx(PINNED_SUM, rel=1e-9)
    assert float(np.sum(np.abs(out), dtype=np.float64)) == pytest.approx(PINNED_ABS_SUM, rel=1e-9)
