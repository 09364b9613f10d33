"""Random forest: one regression forest per (item, horizon).

Fixed: 25 minimum samples per leaf, 50% bootstrap per tree. Grid: trees {50,100,200} x
max_depth {5,10,20} x min_samples_split {100,200}, same selection protocol as the
elastic net (grid.py). scikit-learn by default; cuML's GPU forest when installed (the
paper's setting: ~40 GPU hours for the 1,560 fits at full scale). Forests are not
kept on disk (they are large); each finished fit keeps its test predictions.
"""

from __future__ import annotations

import itertools
from typing import Any

from proforma.models.baselines.grid import GridModel
from proforma.models.baselines.presets import RF_PAPER


def build(params: dict[str, Any]) -> Any:
    if params.get("backend") == "cuml":
        from cuml.ensemble import RandomForestRegressor as CuRF

        return CuRF(
            n_estimators=params["n_estimators"],
            max_depth=params["max_depth"],
            min_samples_split=params["min_samples_split"],
            min_samples_leaf=params["min_samples_leaf"],
            max_samples=params["max_samples"],
            bootstrap=True,
            max_features=params["max_features"],
            random_state=params.get("random_state", 0),
        )
    from sklearn.ensemble import RandomForestRegressor

    return RandomForestRegressor(
        n_estimators=params["n_estimators"],
        max_depth=params["max_depth"],
        min_samples_split=params["min_samples_split"],
        min_samples_leaf=params["min_samples_leaf"],
        bootstrap=True,
        max_samples=params["max_samples"],
        max_features=params["max_features"],
        random_state=params.get("random_state", 0),
        n_jobs=1,
    )


def grid_points(spec: dict[str, Any], backend: str = "sklearn") -> list[dict[str, Any]]:
    return [
        {
            "n_estimators": t,
            "max_depth": d,
            "min_samples_split": s,
            "min_samples_leaf": spec["min_samples_leaf"],
            "max_samples": spec["max_samples"],
            "max_features": spec["max_features"],
            "backend": backend,
        }
        for t, d, s in itertools.product(
            spec["n_estimators"], spec["max_depth"], spec["min_samples_split"]
        )
    ]


#: The shared per-(item, horizon) protocol (grid.py) with the forest's grid; forests are
#: not kept on disk.
RF = GridModel("rf", build, grid_points, RF_PAPER)
fit_predict = RF.fit_predict
