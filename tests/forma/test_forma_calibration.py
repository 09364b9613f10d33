"""Interval calibration on held-out validation origins (models/forma/calibration.py)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from tiny_synthetic import build_tiny_synthetic

from proforma.contracts.errors import UserError
from proforma.models.forma.batching import WindowStore
from proforma.models.forma.calibration import (
    LEVELS,
    central_coverage,
    coverage_scale,
    holdout,
    horizon_scales,
    realized_cells,
    scaled,
)
from tests.forma.conftest import make_windows


def _store() -> WindowStore:
    batches = [
        make_windows(24, seed=1, split="train", origin_q0=7900),
        make_windows(40, seed=2, split="val", origin_q0=8000),
    ]
    return WindowStore.from_batches(batches)


def test_holdout_takes_whole_firms_of_the_validation_split_only() -> None:
    store = _store()
    keep, held = holdout(store, 9)
    assert len(np.intersect1d(keep, held)) == 0
    assert len(keep) + len(held) == len(store)
    assert (store.split[held] == "val").all() and len(held) >= 9
    # every validation origin of a held-out firm is held out: none of them trains
    held_firms = np.unique(store.firm_id[held])
    trained_val = keep[store.split[keep] == "val"]
    assert not np.isin(store.firm_id[trained_val], held_firms).any()
    # the same sample every time (every seed of a mixture holds out the same origins)
    assert np.array_equal(holdout(store, 9)[1], held)
    assert len(holdout(store, 0)[1]) == 0
    assert len(holdout(store, 10_000)[1]) == (store.split == "val").sum()


def test_realized_cells_keep_items_present_at_the_origin() -> None:
    store = _store()
    cells = realized_cells(store)
    assert (cells["horizon"] >= 1).all() and len(cells["actual"]) > 0
    # item 0 (the scale pseudo-item) is never a target
    assert (cells["item"] > 0).all()


def test_a_gaussian_twice_as_wide_as_its_sigma_needs_a_factor_of_two() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(0.0, 2.0, 200_000)
    mu, sigma = np.zeros((1, y.size)), np.ones((1, y.size))
    c = coverage_scale(y, mu, sigma)
    assert c == pytest.approx(2.0, rel=0.02)
    assert (central_coverage(y, mu, sigma * c) >= np.array(LEVELS)).all()
    # too wide a sigma is narrowed
    assert coverage_scale(y, mu, sigma * 4) == pytest.approx(0.5, rel=0.02)


def test_heavy_tails_get_the_smallest_factor_that_covers_every_level() -> None:
    rng = np.random.default_rng(1)
    y = rng.laplace(0.0, 1 / np.sqrt(2), 200_000)  # variance 1: a Gaussian sigma of 1 fits it
    mu, sigma = np.zeros((2, y.size)), np.ones((2, y.size))
    before = central_coverage(y, mu, sigma)
    assert before[0] > 0.5 and before[-1] < 0.95  # over at 50%, under at 95%
    c = coverage_scale(y, mu, sigma)
    assert c > 1.0
    assert (central_coverage(y, mu, sigma * c) >= np.array(LEVELS)).all()
    assert (central_coverage(y, mu, sigma * c * 0.995) < np.array(LEVELS)).any()


def test_horizons_are_scaled_apart_and_thin_horizons_take_the_pooled_factor() -> None:
    rng = np.random.default_rng(2)
    h = np.repeat([1, 2, 3], [50_000, 50_000, 100])
    y = rng.normal(0.0, np.where(h == 1, 1.0, 3.0))
    mu, sigma = np.zeros((1, y.size)), np.ones((1, y.size))
    out = horizon_scales(y, h, mu, sigma, max_horizon=4)
    s = out["scale_by_horizon"]
    assert s[0] == pytest.approx(1.0, rel=0.03) and s[1] == pytest.approx(3.0, rel=0.03)
    assert s[2] == s[3] == out["pooled_scale"]  # 100 cells and none: the pooled factor
    assert out["cells_by_horizon"] == [50_000, 50_000, 100, 0]
    # each horizon with its own factor covers its own cells at least nominally
    for horizon in (1, 2):
        sel = h == horizon
        scale = s[horizon - 1]
        covered = central_coverage(y[sel], mu[:, sel], sigma[:, sel] * scale)
        assert (covered >= np.array(LEVELS)).all()


def test_scaled_multiplies_sigma_by_its_horizons_factor_only() -> None:
    from proforma.models import FORECAST_SCHEMA

    batch = pa.RecordBatch.from_pydict(
        {
            "firm_id": [1, 1, 2],
            "origin_q": [8000, 8000, 8001],
            "item_id": [3, 3, 4],
            "horizon": [1, 2, 20],
            "component": [0, 0, 0],
            "mu": [0.1, 0.2, 0.3],
            "sigma": [1.0, 1.0, 2.0],
        },
        schema=FORECAST_SCHEMA,
    )
    factors = [1.5, 2.0] + [1.0] * 17 + [3.0]
    (out,) = list(scaled(iter([batch]), factors))
    assert out.schema == FORECAST_SCHEMA
    assert out.column("sigma").to_pylist() == [1.5, 2.0, 6.0]
    assert out.column("mu").to_pylist() == [0.1, 0.2, 0.3]


TINY_CALIBRATED = {"epochs": 1, "origins_per_epoch": 8, "calibration_origins": 6}


@pytest.fixture
def tiny_panel(wh, settings, monkeypatch, tmp_path) -> None:
    """A built tiny synthetic panel with validation years, checkpoints kept in tmp, the
    warehouse closed for the flows to open."""
    from proforma.app.store.settings import get_settings

    monkeypatch.setenv("PROFORMA_MODELS_DIR", str(tmp_path / "models"))
    get_settings.cache_clear()
    build_tiny_synthetic(wh, firms=12, start=1996, end=2012, seed=3)
    wh.close()


def test_history_is_the_windows_read_without_their_future(tiny_panel) -> None:
    from proforma.app.flows.forma import load_store
    from proforma.app.store.warehouse import connect

    with connect(read_only=True) as con:
        with_future = load_store(con, ["val"], future=True)
        without = load_store(con, ["val"], future=False)
    history = with_future.history()
    assert (with_future.rel_q >= 1).any()
    for field in ("firm_id", "origin_q", "split", "ff48", "offsets", "rel_q", "item_id", "x"):
        assert np.array_equal(getattr(history, field), getattr(without, field)), field


def test_predict_calibrates_on_the_origins_training_held_out(tiny_panel, monkeypatch) -> None:
    from proforma.app.flows import forma as flows
    from proforma.app.store.warehouse import connect

    trained_on: list[set] = []
    import proforma.models.forma.train as forma_train

    real_fit = forma_train.fit

    def spy(store, *args, **kwargs):
        trained_on.append(set(zip(store.firm_id.tolist(), store.origin_q.tolist())))
        return real_fit(store, *args, **kwargs)

    monkeypatch.setattr("proforma.models.forma.train.fit", spy)
    flows.train("small", [60], overrides=TINY_CALIBRATED, threads=1)
    import torch

    ck = torch.load(flows.checkpoint_path("small", "gaussian", 60), weights_only=False)
    held = set(zip(ck["calibration_holdout"]["firm_id"], ck["calibration_holdout"]["origin_q"]))
    assert len(held) >= 6 and not held & trained_on[0]

    lines: list[str] = []
    flows.predict("small", [60], name="calibrated", score=False, threads=1, log=lines.append)
    flows.predict("small", [60], name="raw", score=False, calibrate=False, threads=1)
    assert any("intervals calibrated on" in line for line in lines)
    with connect(read_only=True) as con:
        meta = {
            name: json.loads(m) if isinstance(m, str) else m
            for name, m in con.fetchall("SELECT name, metadata FROM eval.submissions")
        }
        ratio = con.fetchall(
            "SELECT c.horizon, min(c.sigma / r.sigma), max(c.sigma / r.sigma), "
            "max(abs(c.mu - r.mu)) FROM eval.forecasts c "
            "JOIN eval.submissions sc ON sc.submission_id = c.submission_id AND sc.name = 'calibrated' "
            "JOIN eval.forecasts r USING (firm_id, origin_q, item_id, horizon, component) "
            "JOIN eval.submissions sr ON sr.submission_id = r.submission_id AND sr.name = 'raw' "
            "GROUP BY 1 ORDER BY 1"
        )
    cal = meta["calibrated"]["calibration"]
    assert cal["applied"] and cal["origins"] == len(held)
    assert meta["raw"]["calibration"] == {"applied": False}
    # factors below 1 are fitted and reported, never applied (widen only)
    assert cal["widen_only"] and cal["scale_by_horizon"] == [
        max(1.0, f) for f in cal["fitted_scale_by_horizon"]
    ]
    for h, lo, hi, dmu in ratio:
        # one factor per horizon, the points untouched
        assert lo == pytest.approx(cal["scale_by_horizon"][h - 1], rel=1e-6)
        assert hi == pytest.approx(lo, rel=1e-9) and dmu == 0


def test_seeds_holding_out_different_origins_are_refused(tiny_panel) -> None:
    from proforma.app.flows import forma as flows

    flows.train("small", [60], overrides=TINY_CALIBRATED, threads=1)
    flows.train("small", [61], overrides={**TINY_CALIBRATED, "calibration_origins": 40}, threads=1)
    with pytest.raises(UserError, match="held out different validation origins"):
        flows.predict("small", [60, 61], score=False, threads=1)
    # without calibration the mixture is forecast as before
    rep = flows.predict("small", [60, 61], score=False, calibrate=False, threads=1)
    assert rep.submission_id > 0
