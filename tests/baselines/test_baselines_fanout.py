"""Fan-out engines agree: serial, joblib (loky) and a Dask LocalCluster."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from proforma.contracts.errors import UserError
from proforma.models.baselines import elastic_net
from proforma.models.baselines.fanout import FanOut, fan_out


def square_plus(task: int, *, offset: np.ndarray) -> float:
    return float(task**2 + offset.sum())


def test_engines_return_results_in_task_order() -> None:
    offset = np.ones(3)
    seen = []
    out = fan_out(
        square_plus,
        [3, 1, 2],
        {"offset": offset},
        engine="joblib",
        n_jobs=2,
        on_result=lambda t, r: seen.append(t),
    )
    assert out == [12.0, 4.0, 7.0] and sorted(seen) == [1, 2, 3]
    assert fan_out(square_plus, [], {"offset": offset}) == []
    with pytest.raises(UserError, match="engine"):
        FanOut("spark")


def test_dask_local_cluster_matches_joblib(panel, tmp_path) -> None:
    from dask.distributed import Client, LocalCluster

    for d in panel.values():
        d.X = np.nan_to_num(d.X, nan=0.0)
    spec = {"alpha": [0.01, 0.1], "l1_ratio": [0.5], "max_iter": 300, "tol": 1e-3, "max_rows": None}
    kw: dict[str, Any] = {"items": ("niq", "revtq", "atq"), "horizons": (1, 5)}
    args = (panel["train"], panel["val"], panel["test"])
    by_joblib = elastic_net.fit_predict(
        *args, tmp_path / "joblib", spec, fan=FanOut("joblib", 2), **kw
    )
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        by_dask = elastic_net.fit_predict(
            *args, tmp_path / "dask", spec, fan=FanOut("dask", client=client), **kw
        )
    assert by_joblib.info["selection"] == by_dask.info["selection"]
    a, b = by_joblib.components[0][0], by_dask.components[0][0]
    assert np.isfinite(a).sum() == 2 * 3 * panel["test"].n
    assert np.array_equal(a, b, equal_nan=True)
