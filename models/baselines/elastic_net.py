"""Elastic net: one scikit-learn (or cuML) fit per (item, horizon).

Grid alpha {0.01,0.1,1,10,100,1000} x l1_ratio {0.01,...,0.99}, selected per horizon
on `niq` by validation MSE and shared across items; coordinate descent with at most
10,000 iterations; refit on train+validation; rows with a missing feature or target
dropped per fit (grid.py).
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np

from proforma.models.baselines.grid import GridModel
from proforma.models.baselines.presets import ENET_PAPER


def build(params: dict[str, Any]) -> Any:
    """An elastic net for one grid point (cuML when installed and params ask for it)."""
    if params.get("backend") == "cuml":
        from cuml.linear_model import ElasticNet as CuElasticNet

        return CuElasticNet(
            alpha=params["alpha"],
            l1_ratio=params["l1_ratio"],
            max_iter=params["max_iter"],
            tol=params["tol"],
        )
    from sklearn.linear_model import ElasticNet

    return _Quiet(
        ElasticNet(
            alpha=params["alpha"],
            l1_ratio=params["l1_ratio"],
            max_iter=params["max_iter"],
            tol=params["tol"],
            selection="cyclic",
        )
    )


class _Quiet:
    """Fit without the ConvergenceWarning flood (the capped iteration count is the spec)."""

    def __init__(self, est: Any):
        self.est = est

    def fit(self, X: np.ndarray, y: np.ndarray) -> _Quiet:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.est.fit(X, y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.est.predict(X)


def keep_state(est: Any) -> dict[str, Any]:
    inner = getattr(est, "est", est)
    return {"coef": np.asarray(inner.coef_, dtype=np.float32), "intercept": float(inner.intercept_)}


def grid_points(spec: dict[str, Any], backend: str = "sklearn") -> list[dict[str, Any]]:
    return [
        {
            "alpha": a,
            "l1_ratio": r,
            "max_iter": spec["max_iter"],
            "tol": spec["tol"],
            "backend": backend,
        }
        for a, r in itertools.product(spec["alpha"], spec["l1_ratio"])
    ]


#: The shared per-(item, horizon) protocol (grid.py) with the elastic net's grid.
ENET = GridModel("enet", build, grid_points, ENET_PAPER, keep_state)
fit_predict = ENET.fit_predict
