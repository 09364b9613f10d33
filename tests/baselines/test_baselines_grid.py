"""Selection per horizon on validation, refit on train+val, resume, elastic net and RF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from proforma.models.baselines import elastic_net, random_forest
from proforma.models.baselines.fanout import FanOut
from proforma.models.baselines.fit_cache import FitCache
from proforma.models.baselines.grid import PairwiseConfig, run_pairwise, select_per_horizon


class ConstantModel:
    """Predicts params['c'] (selection) or, with c=None, the mean of its training targets."""

    def __init__(self, params: dict[str, Any]):
        self.c = params["c"]

    def fit(self, X: np.ndarray, y: np.ndarray) -> ConstantModel:
        self.value = float(np.mean(y)) if self.c is None else self.c
        self.n = y.size
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.full(X.shape[0], self.value)


def build_constant(params: dict[str, Any]) -> ConstantModel:
    return ConstantModel(params)


def _imputed(panel):
    # The competitors see imputed features; tests fill the few NaNs with 0 for speed.
    for d in panel.values():
        d.X = np.nan_to_num(d.X, nan=0.0)
    return panel


def test_select_per_horizon_picks_lowest_validation_mse() -> None:
    grid = [{"a": 0}, {"a": 1}, {"a": 2}]
    scores = [
        {"h": 1, "g": 0, "mse": 3.0},
        {"h": 1, "g": 1, "mse": 1.0},
        {"h": 1, "g": 2, "mse": 2.0},
        {"h": 2, "g": 0, "mse": 0.5},
        {"h": 2, "g": 1, "mse": 0.5},
        {"h": 2, "g": 2, "mse": 0.7},
    ]
    sel = select_per_horizon(scores, grid)
    assert sel[1]["params"] == {"a": 1} and sel[1]["val_mse"] == 1.0
    assert sel[2]["g"] == 0  # a tie goes to the first grid point


def test_grid_winner_is_validation_winner_and_shared_across_items(panel, tmp_path) -> None:
    panel = _imputed(panel)
    train, val, test = panel["train"], panel["val"], panel["test"]
    # The validation-optimal constant for niq at h: its validation mean.
    h = 3
    target_mean = float(np.nanmean(val.target("niq", h)))
    grid = [{"c": target_mean + 5.0}, {"c": target_mean}, {"c": target_mean - 2.0}]
    cfg = PairwiseConfig(grid=grid, items=("niq", "revtq"), horizons=(h,))
    reg = FitCache(tmp_path, "const", cfg.describe() | {"n": 1}, "x")
    mu, sel = run_pairwise("const", build_constant, cfg, train, val, test, reg, FanOut("serial"))
    assert sel[h]["params"] == {"c": target_mean}
    # Both items use niq's winner at h (shared), not their own best constant.
    i_niq, i_rev = train.items.index("niq"), train.items.index("revtq")
    assert np.allclose(mu[:, i_niq, h - 1], target_mean)
    assert np.allclose(mu[:, i_rev, h - 1], target_mean)
    assert np.isnan(mu[:, train.items.index("atq"), h - 1]).all()


def test_refit_uses_train_plus_validation(panel, tmp_path) -> None:
    panel = _imputed(panel)
    train, val, test = panel["train"], panel["val"], panel["test"]
    val.Y = val.Y + 10.0  # make train and validation targets easy to tell apart
    cfg = PairwiseConfig(grid=[{"c": None}], items=("revtq",), horizons=(1, 2))
    reg = FitCache(tmp_path, "mean", cfg.describe(), "y")
    mu, _ = run_pairwise("mean", build_constant, cfg, train, val, test, reg, FanOut("serial"))
    i = train.items.index("revtq")
    for h in (1, 2):
        both = np.concatenate([train.target(i, h), val.target(i, h)])
        assert np.allclose(mu[:, i, h - 1], np.nanmean(both), atol=1e-5)
        assert not np.allclose(mu[:, i, h - 1], np.nanmean(train.target(i, h)), atol=1e-2)
        assert reg.load("fit", f"revtq_h{h}")["n_fit"] == int(np.isfinite(both).sum())


def test_resume_skips_finished_fits(panel, tmp_path, monkeypatch) -> None:
    panel = _imputed(panel)
    train, val, test = panel["train"], panel["val"], panel["test"]
    spec = {"alpha": [0.01, 1.0], "l1_ratio": [0.5], "max_iter": 200, "tol": 1e-3, "max_rows": None}
    kw: dict[str, Any] = {"items": ("niq", "revtq"), "horizons": (1, 4)}
    first = elastic_net.fit_predict(train, val, test, tmp_path, spec, **kw)

    def boom(params):
        raise AssertionError("a finished fit was refit")

    monkeypatch.setattr(elastic_net.ENET, "build", boom)
    again = elastic_net.fit_predict(train, val, test, tmp_path, spec, **kw)
    assert np.array_equal(first.components[0][0], again.components[0][0], equal_nan=True)
    # A changed grid is a new run: it must fit again.
    with pytest.raises(AssertionError, match="refit"):
        elastic_net.fit_predict(train, val, test, tmp_path, spec | {"tol": 1e-2}, **kw)


def test_elastic_net_learns_signal_and_prefers_small_alpha(panel, tmp_path) -> None:
    panel = _imputed(panel)
    train, val, test = panel["train"], panel["val"], panel["test"]
    spec = {
        "alpha": [0.01, 1000.0],
        "l1_ratio": [0.5],
        "max_iter": 500,
        "tol": 1e-3,
        "max_rows": None,
    }
    fc = elastic_net.fit_predict(train, val, test, tmp_path, spec, items=("niq",), horizons=(1,))
    assert fc.info["selection"][1]["params"]["alpha"] == 0.01
    i = train.items.index("niq")
    y, p = test.target(i, 1), fc.components[0][0][:, i, 0]
    ok = np.isfinite(y)
    r2 = 1 - np.mean((y[ok] - p[ok]) ** 2) / np.var(y[ok])
    assert r2 > 0.5
    batches = list(fc.batches())
    rows = sum(b.num_rows for b in batches)
    assert rows == int(ok.sum())  # only scoreable cells, one per realized target
    assert batches[0].schema.field("item_id").type.bit_width == 16


def test_random_forest_grid(panel, tmp_path) -> None:
    panel = _imputed(panel)
    train, val, test = panel["train"], panel["val"], panel["test"]
    spec = {
        "n_estimators": [5],
        "max_depth": [1, 4],
        "min_samples_split": [10],
        "min_samples_leaf": 5,
        "max_samples": 0.5,
        "max_features": 0.2,
        "max_rows": None,
    }
    fc = random_forest.fit_predict(
        train, val, test, tmp_path, spec, items=("niq", "atq"), horizons=(2,), backend="sklearn"
    )
    # The chosen depth is the one with the lower validation MSE recorded on disk.
    run = FitCache(tmp_path, "rf", {}, "unused")
    run.dir = Path(fc.info["run"])
    scores = {g: run.load("select", f"h2_g{g}")["mse"] for g in (0, 1)}
    best = min(scores, key=scores.__getitem__)
    assert fc.info["selection"][2]["g"] == best
    assert fc.info["selection"][2]["params"]["max_depth"] == (1, 4)[best]
    mu = fc.components[0][0]
    assert np.isfinite(mu[:, train.items.index("atq"), 1]).all()
    assert np.isnan(mu[:, train.items.index("niq"), 0]).all()  # h1 not asked for
