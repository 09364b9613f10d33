"""Training, checkpoints, determinism, prediction, mixtures and scenarios on tiny models."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch
from scipy.stats import norm

from proforma.contracts.errors import UserError
from proforma.models.forma.batching import SPLIT_LAST_Q, WindowStore
from proforma.models.forma.predict import (
    FORECAST_SCHEMA,
    mixture_moments,
    mixture_quantile,
    predict,
)
from proforma.models.forma.presets import preset
from proforma.models.forma.scenario import (
    OriginParams,
    conditional_forecast,
    identity_check,
    oracle_cells,
    oracle_summary,
    r2_changes,
    to_dollars,
)
from proforma.models.forma.train import fit, load_checkpoint
from tests.forma.conftest import TINY as TINY_NO_WARMUP
from tests.forma.conftest import TOY_IDENTITIES, interrupt_then_resume, make_windows

#: A short warm-up: the resume test then checks its step count.
TINY = {**TINY_NO_WARMUP, "warmup_steps": 3}


@pytest.fixture(scope="module")
def store():
    return WindowStore.from_batches([make_windows(48, seed=5)])


def _params(model):
    return torch.cat([p.detach().flatten() for p in model.state_dict().values()])


def test_tiny_fit_lowers_the_loss(store):
    cfg = preset("small", epochs=8, horizon_start=4, max_horizon=4, **TINY)
    res = fit(store, TOY_IDENTITIES, cfg, seed=1, progress=False)
    losses = [h["loss"] for h in res.history]
    assert losses[-1] < losses[0] - 0.03 and min(losses[-3:]) < min(losses[:3])
    assert all(0 <= h["padding_share"] < 1 for h in res.history)


def test_warmup_scales_the_learning_rate_by_optimizer_step(store, tmp_path):
    cfg = preset("small", epochs=1, **{**TINY, "warmup_steps": 1000})
    res = fit(store, TOY_IDENTITIES, cfg, seed=3, checkpoint=tmp_path / "w.pt", progress=False)
    _, ck = load_checkpoint(tmp_path / "w.pt")
    steps = res.history[0]["batches"]
    assert steps >= 1
    assert ck["optimizer"]["param_groups"][0]["lr"] == pytest.approx(cfg.lr * steps / 1000)


@pytest.mark.parametrize("name", ["small", "mid"])
def test_cpu_presets_anneal_the_learning_rate(name):
    # At a constant 5e-3 with batch 4 the small preset's test R2 stalled at the noise of
    # its steps (docs/forma.md, "Learning curve"); the CPU presets decay to near zero.
    from proforma.models.forma.train import learning_rate, planned_steps

    cfg = preset(name)
    total = planned_steps(cfg, 26_407)
    peak = learning_rate(cfg, cfg.warmup_steps, total)
    assert peak == pytest.approx(cfg.lr)
    assert learning_rate(cfg, total // 2, total) < 0.6 * cfg.lr
    assert learning_rate(cfg, total - 1, total) <= 0.1 * cfg.lr + 1e-12


def test_checkpoint_round_trip_resume_and_determinism(store, tmp_path):
    cfg = preset("small", epochs=2, **TINY)
    full = fit(store, TOY_IDENTITIES, cfg, seed=7, checkpoint=tmp_path / "a.pt", progress=False)
    again = fit(store, TOY_IDENTITIES, cfg, seed=7, checkpoint=tmp_path / "b.pt", progress=False)
    ma, cka = load_checkpoint(tmp_path / "a.pt")
    mb, _ = load_checkpoint(tmp_path / "b.pt")
    assert torch.equal(_params(ma), _params(mb))  # same seed, same weights
    assert full.history[-1]["loss"] == again.history[-1]["loss"]
    assert cka["complete"] and cka["epoch"] == 2 and cka["seed"] == 7
    assert cka["account_map"] == list(range(10)) and cka["industry_map"][49] == 48
    assert cka["identities"]["identity"] and cka["config"]["d_model"] == 16
    # interrupted after epoch 1 (its checkpoint written), then resumed: identical to the
    # uninterrupted run, the learning-rate schedule (cosine here) included
    assert cfg.lr_schedule == "cosine"

    ck, resumed = interrupt_then_resume(store, cfg, 7, tmp_path / "c.pt")
    assert ck["epoch"] == 1 and not ck["complete"]
    assert resumed.epochs_run == 1
    mc, _ = load_checkpoint(tmp_path / "c.pt")
    assert torch.equal(_params(ma), _params(mc))
    # another seed gives other weights; a mismatched resume is refused
    with pytest.raises(UserError):
        fit(
            store,
            TOY_IDENTITIES,
            cfg,
            seed=8,
            checkpoint=tmp_path / "c.pt",
            resume=True,
            progress=False,
        )
    with pytest.raises(UserError):
        load_checkpoint(tmp_path / "missing.pt")


def test_predict_writes_the_contract_schema_with_components(store, tmp_path):
    cfg = preset("small", epochs=1, **TINY)
    fit(store, TOY_IDENTITIES, cfg, seed=1, checkpoint=tmp_path / "s1.pt", progress=False)
    fit(store, TOY_IDENTITIES, cfg, seed=2, checkpoint=tmp_path / "s2.pt", progress=False)
    models = [load_checkpoint(tmp_path / f"s{s}.pt")[0] for s in (1, 2)]
    test = WindowStore.from_batches(
        [make_windows(6, seed=9, split="test", origin_q0=SPLIT_LAST_Q["test"] - 5, future=False)]
    )
    table = pa.Table.from_batches(list(predict(models, test, batch_size=4)))
    assert table.schema == FORECAST_SCHEMA
    assert set(table.column("component").to_pylist()) == {0, 1}
    hz = np.asarray(table.column("horizon"))
    oq = np.asarray(table.column("origin_q"))
    assert hz.min() == 1 and (oq + hz <= SPLIT_LAST_Q["test"]).all()  # the split cut
    assert (np.asarray(table.column("sigma")) > 0).all()
    assert 0 not in set(table.column("item_id").to_pylist())  # scale never queried
    # 6 origins x 6 items x (<= 20 horizons) x 2 components, no duplicates
    keys = set(
        zip(
            *(
                table.column(c).to_pylist()
                for c in ("firm_id", "origin_q", "item_id", "horizon", "component")
            )
        )
    )
    assert len(keys) == table.num_rows


def test_mixture_formulas():
    mu = np.array([[0.0, 1.0], [2.0, 1.0], [4.0, 1.0]])
    sigma = np.array([[1.0, 0.5], [1.0, 0.5], [2.0, 0.5]])
    point, s = mixture_moments(mu, sigma)
    assert np.allclose(point, [2.0, 1.0])
    assert np.allclose(s, [np.sqrt((1 + 1 + 4) / 3 + 8 / 3), 0.5])
    # one component: the normal quantile; a mixture: CDF at the quantile equals p
    q = mixture_quantile(np.array([[0.3]]), np.array([[2.0]]), 0.9)
    assert q[0] == pytest.approx(0.3 + 2.0 * norm.ppf(0.9), abs=1e-6)
    q = mixture_quantile(mu[:, :1], sigma[:, :1], 0.25)[0]
    assert np.mean(norm.cdf(q, mu[:, 0], sigma[:, 0])) == pytest.approx(0.25, abs=1e-6)
    lq = mixture_quantile(np.array([[0.0]]), np.array([[np.sqrt(2)]]), 0.75, family="laplace")
    assert lq[0] == pytest.approx(np.log(2), abs=1e-6)  # Laplace(0, b=1) quantile


def test_scenario_pins_stay_fixed_and_dollars_round_trip(store, tmp_path):
    cfg = preset("small", epochs=1, **TINY)
    fit(store, TOY_IDENTITIES, cfg, seed=3, checkpoint=tmp_path / "m.pt", progress=False)
    model = load_checkpoint(tmp_path / "m.pt")[0]
    test = WindowStore.from_batches([make_windows(2, seed=2, split="test", future=False)])
    params = OriginParams(
        z=250.0,
        k={i: 0.5 + i for i in range(1, 7)},
        mu={i: 0.1 * i for i in range(1, 7)},
        sigma={i: 1.0 + 0.1 * i for i in range(1, 7)},
    )
    v = params.to_dollars(2, 0.7)
    assert params.to_std(2, float(v)) == pytest.approx(0.7, abs=1e-9)
    pins = {(1, 1): params.to_std(1, 1234.0), (1, 2): 0.25, (2, 5): -1.5, (4, 30): 0.0}
    pins.pop((4, 30))
    plain = conditional_forecast([model], test, 0, {})
    cond = to_dollars(conditional_forecast([model, model], test, 0, pins), params)
    rows = {(r["item_id"], r["horizon"]): r for r in cond.to_pylist()}
    for key, val in pins.items():
        r = rows[key]
        assert r["pinned"] and r["point"] == pytest.approx(val, abs=1e-6) and r["sigma"] == 0
        assert r["lo_80"] == r["hi_80"] == pytest.approx(val, abs=1e-6)
    assert rows[(1, 1)]["point_usd"] == pytest.approx(1234.0, rel=1e-5)
    assert sum(cond.column("pinned").to_pylist()) == 3
    assert plain.num_rows == cond.num_rows and not any(plain.column("pinned").to_pylist())
    free = [r for r in cond.to_pylist() if not r["pinned"]]
    assert all(r["lo_50"] < r["point"] < r["hi_50"] and r["lo_95"] < r["lo_50"] for r in free)
    # the pins condition the rest: unpinned forecasts move
    before = {(r["item_id"], r["horizon"]): r["point"] for r in plain.to_pylist()}
    assert any(abs(before[(r["item_id"], r["horizon"])] - r["point"]) > 1e-6 for r in free)


def test_identity_check_and_oracle_metrics():
    t = pa.table(
        {
            "item_id": pa.array([1, 2, 3, 1, 2], pa.int16()),
            "horizon": pa.array([1, 1, 1, 2, 2], pa.int8()),
            "point_usd": [10.0, 5.0, 16.0, 1.0, 1.0],
        }
    )
    chk = identity_check(t, ["A", "A", "A"], [1, 2, 3], [1, 1, -1])
    assert chk.to_pylist() == [
        {
            "identity": "A",
            "horizon": 1,
            "residual": -1.0,
            "gross": 31.0,
            "violation": pytest.approx(1 / 31),
        }
    ]
    a, b, p = np.array([1.0, 2.0, 0.0]), np.array([0.0, 1.0, 1.0]), np.array([0.5, 2.0, 0.0])
    y = a - b
    assert r2_changes(a, b, p) == pytest.approx(
        1 - 0.25 / ((y**2).sum() - y.sum() ** 2 / 3 + 1e-12)
    )
    cells = {
        "item_id": np.array([1, 1, 2]),
        "horizon": np.array([1, 2, 1]),
        "actual": a,
        "baseline": b,
        "uncond": p,
        "cond": a,
    }
    s = oracle_summary(cells, {1: "IS", 2: "BS"}).to_pylist()
    assert (
        s[0]["group"] == "all" and s[0]["d_mae"] == pytest.approx(-0.5 / 3) and s[0]["r2_cond"] == 1
    )
    assert {(r["group"], r["key"]) for r in s} >= {("horizon", "1"), ("statement", "BS")}


def test_oracle_cells_pin_the_realized_path(store, tmp_path):
    cfg = preset("small", epochs=1, **TINY)
    fit(store, TOY_IDENTITIES, cfg, seed=4, checkpoint=tmp_path / "o.pt", progress=False)
    model = load_checkpoint(tmp_path / "o.pt")[0]
    test = WindowStore.from_batches([make_windows(4, seed=8, split="test")])
    cells = oracle_cells([model], test, 1, batch_size=2)
    assert len(cells["actual"]) > 0 and 1 not in set(cells["item_id"].tolist())
    assert not np.allclose(cells["uncond"], cells["cond"])


def test_progress_bars_in_a_log_redraw_rarely(capsys):
    from proforma.models.progress import LOG_INTERVAL_S, progress_bar

    bar = progress_bar(total=500, desc="steps")  # pytest's stderr is not a terminal
    assert bar.mininterval == LOG_INTERVAL_S
    assert bar.maxinterval == LOG_INTERVAL_S  # nor does tqdm's monitor redraw it sooner
    for i in range(500):
        bar.update(1)
        bar.set_postfix(loss=f"{i}", refresh=False)
    bar.close()
    err = capsys.readouterr().err
    assert err.count("steps:") <= 3
    # one whole line per update: no carriage returns, no padding, the last one complete
    lines = err.splitlines()
    assert "\r" not in err and lines and all(line.startswith("steps:") for line in lines)
    assert all(line == line.rstrip() for line in lines) and "500/500" in lines[-1]
    assert len(set(lines)) == len(lines)  # the closing redraw is not a second last line
