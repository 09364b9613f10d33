"""Chained GBM: the chain, teacher forcing in training, the cascade at inference."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from proforma.models.baselines import chained_gbm
from proforma.models.baselines.chained_gbm import chain_items, chain_steps, design
from proforma.models.baselines.fit_cache import FitCache

CHAIN = ("revtq", "cogsq", "rectq", "invtq")
SPEC = {
    "max_trees": 25,
    "early_stopping": 10,
    "leaves": [7, 15],
    "learning_rate": 0.3,
    "max_rows": None,
    "lgb_params": {"max_bin": 31},
}


def test_chain_has_14_steps_and_25_universe_items() -> None:
    steps = chain_steps()
    assert len(steps) == 14
    assert steps[0] == ["revtq"] and steps[-1] == ["acomincq"]
    assert steps[9] == ["aoq", "mibtq"]  # neiq is outside the universe
    assert steps[12] == ["miiq"]  # dvpq, dvcq too
    assert len(chain_items()) == 25 and len(set(chain_items())) == 25


def test_design_missing_upstream_is_zero() -> None:
    X = np.ones((2, 3), np.float32)
    up = np.array([[np.nan, 2.0], [1.0, np.nan]])
    assert np.array_equal(design(X, up), [[1, 1, 1, 0, 2], [1, 1, 1, 1, 0]])


def _chain_panel(panel):
    items = panel["train"].items
    rev, cogs = items.index("revtq"), items.index("cogsq")
    rng = np.random.default_rng(9)
    for d in panel.values():
        d.X = np.nan_to_num(d.X, nan=0.0)
        # revtq: predictable part plus large unpredictable noise; cogsq equals realized revtq.
        d.Y[:, rev, 0] = 2.0 * d.X[:, 0] + rng.normal(scale=1.0, size=d.n)
        d.Y[rng.random(d.n) < 0.1, rev, 0] = np.nan
        d.Y[:, cogs, 0] = np.nan_to_num(d.Y[:, rev, 0], nan=0.0)
    return panel, rev, cogs


def test_teacher_forcing_in_training_and_cascade_at_inference(
    panel_factory, tmp_path, monkeypatch
) -> None:
    quarters = {"train": range(7900, 7912), "val": range(8010, 8014), "test": range(8050, 8055)}
    panel, rev, cogs = _chain_panel(panel_factory(quarters=quarters))
    train, val, test = panel["train"], panel["val"], panel["test"]
    calls: list[tuple[int, np.ndarray]] = []
    real_design = chained_gbm.design

    def spy(X, upstream):
        calls.append((X.shape[0], np.array(upstream, copy=True)))
        return real_design(X, upstream)

    monkeypatch.setattr(chained_gbm, "design", spy)
    fc = chained_gbm.fit_predict(train, val, test, tmp_path, "l2", SPEC, horizons=(1,), items=CHAIN)
    mu = fc.components[0][0][:, :, 0]

    # Step 2 (cogsq, rectq) sees exactly one upstream column: revtq.
    one_up = [u for n, u in calls if u.shape[1] == 1]
    training = [u for u in one_up if u.shape[0] != test.n]
    inference = [u for u in one_up if u.shape[0] == test.n]
    realized = np.concatenate([train.Y[:, rev, 0], val.Y[:, rev, 0]])
    for u in training:  # realized values (with their gaps), never predictions
        assert np.isnan(u).any()
        assert np.isin(u[np.isfinite(u)], realized).all()
    assert inference and all(np.array_equal(u[:, 0], mu[:, rev]) for u in inference)

    # cogsq learned "= upstream revtq": at inference it follows the predicted revtq, not
    # the realized one (whose noise no model can know).
    assert np.corrcoef(mu[:, cogs], mu[:, rev])[0, 1] > 0.95
    real = np.nan_to_num(test.Y[:, rev, 0], nan=0.0)
    assert np.mean((mu[:, cogs] - mu[:, rev]) ** 2) < 0.2 * np.mean((mu[:, cogs] - real) ** 2)
    # Only the chained items are forecast.
    assert np.isfinite(mu).any(axis=0).sum() == len(CHAIN)
    chosen = fc.info["chosen"][1]["revtq"]
    assert chosen["leaves"] in (7, 15) and 1 <= chosen["trees"] <= 25


def test_l1_arm_and_resume(panel, tmp_path, monkeypatch) -> None:
    panel, rev, _ = _chain_panel(panel)
    train, val, test = panel["train"], panel["val"], panel["test"]
    first = chained_gbm.fit_predict(
        train, val, test, tmp_path, "l1", SPEC, horizons=(1,), items=CHAIN
    )
    monkeypatch.setattr(
        chained_gbm, "chain_task", lambda *a, **k: (_ for _ in ()).throw(AssertionError)
    )
    again = chained_gbm.fit_predict(
        train, val, test, tmp_path, "l1", SPEC, horizons=(1,), items=CHAIN
    )
    assert np.array_equal(first.components[0][0], again.components[0][0], equal_nan=True)
    assert np.isfinite(first.components[0][0][:, rev, 0]).all()


def test_shared_bins_mask_later_items_and_keep_the_cascade(panel_factory, tmp_path) -> None:
    # The demo preset bins once per horizon and subsets rows per fit; each item must still
    # see only the features and earlier steps' items, learn from its own labels, and at
    # inference follow the chain's predictions.
    import lightgbm as lgb

    quarters = {"train": range(7900, 7912), "val": range(8010, 8014), "test": range(8050, 8055)}
    panel, rev, cogs = _chain_panel(panel_factory(quarters=quarters))
    train, val, test = panel["train"], panel["val"], panel["test"]
    spec = SPEC | {"shared_bins": True}
    fc = chained_gbm.fit_predict(train, val, test, tmp_path, "l2", spec, horizons=(1,), items=CHAIN)
    mu = fc.components[0][0][:, :, 0]
    assert np.isfinite(mu).any(axis=0).sum() == len(CHAIN)
    assert np.corrcoef(mu[:, cogs], mu[:, rev])[0, 1] > 0.95
    real = np.nan_to_num(test.Y[:, rev, 0], nan=0.0)
    assert np.mean((mu[:, cogs] - mu[:, rev]) ** 2) < 0.2 * np.mean((mu[:, cogs] - real) ** 2)

    record = FitCache(tmp_path, "gbm-l2", {}, "unused")
    record.dir = Path(fc.info["run"])
    chain = record.load("chain", "h1")
    p = train.X.shape[1]
    steps = chain_steps(CHAIN)  # [revtq], [cogsq, rectq], [invtq]
    n_up = 0
    for step in steps:
        for it in step:
            booster = lgb.Booster(model_str=chain["chosen"][train.items.index(it)]["model"])
            gain = booster.feature_importance("split")
            assert gain.size == p + len(CHAIN)
            assert gain[p + n_up :].sum() == 0  # its own step's and later columns: never split on
        n_up += len(step)
    # revtq learns its own target (labels reach LightGBM): validation loss far below variance.
    assert chain["chosen"][rev]["val_loss"] < 0.7 * np.nanvar(val.Y[:, rev, 0])
    # cogsq ("= upstream revtq") splits on the revtq column.
    booster = lgb.Booster(model_str=chain["chosen"][cogs]["model"])
    assert booster.feature_importance("split")[p] > 0
