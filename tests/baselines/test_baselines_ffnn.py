"""FFNN competitors: exact parameter counts, masked beta-NLL, seed mixture with sigma."""

from __future__ import annotations

import numpy as np
import torch

from proforma.models.baselines import ffnn
from proforma.models.baselines.ffnn import FFNN, beta_nll, n_parameters


def test_parameter_counts_match_the_paper() -> None:
    assert n_parameters(FFNN("linear")) == 3_076_320
    assert n_parameters(FFNN("large")) == 4_184_624
    mu, logvar = FFNN("large")(torch.zeros(2, 985))
    assert mu.shape == logvar.shape == (2, 1560)


def test_logvar_is_clamped() -> None:
    net = FFNN("linear", 4, 3)
    with torch.no_grad():
        net.logvar.bias.fill_(50.0)
    _, lv = net(torch.zeros(1, 4))
    assert float(lv.detach().max()) == 10.0


def test_beta_nll_ignores_missing_targets_and_weights_by_variance() -> None:
    mu = torch.zeros(1, 3, requires_grad=True)
    logvar = torch.zeros(1, 3)
    y = torch.tensor([[1.0, 100.0, 1.0]])
    mask = torch.tensor([[True, False, True]])
    loss = beta_nll(mu, logvar, y, mask)
    assert torch.isclose(loss, torch.tensor(0.5))  # 0.5 * (0 + 1) on the two observed cells
    loss.backward()
    assert mu.grad is not None and mu.grad[0, 1] == 0.0
    # beta = 0.5: a cell's NLL is scaled by var^0.5 (detached)
    lv = torch.full((1, 1), float(np.log(4.0)))
    plain = beta_nll(
        torch.zeros(1, 1), lv, torch.ones(1, 1), torch.ones(1, 1, dtype=torch.bool), beta=0.0
    )
    weighted = beta_nll(torch.zeros(1, 1), lv, torch.ones(1, 1), torch.ones(1, 1, dtype=torch.bool))
    assert torch.isclose(weighted, 2.0 * plain)


def test_seed_mixture_forecasts_with_sigma_and_resume(panel, tmp_path, monkeypatch) -> None:
    for d in panel.values():
        d.X = np.nan_to_num(d.X, nan=0.0)
    panel["test"].X[0, 5] = np.nan  # a test row with a missing feature gets no forecast
    spec = {"epochs": 2, "seeds": [60, 61], "lr": 1e-3, "batch_size": 256, "max_rows": None}
    fc = ffnn.fit_predict(panel["train"], panel["val"], panel["test"], tmp_path, "linear", spec)
    assert len(fc.components) == 2
    (mu0, s0), (mu1, _s1) = fc.components
    assert mu0.shape == (panel["test"].n, 78, 20)
    assert np.isnan(mu0[0]).all() and np.isfinite(mu0[1:]).all()
    assert (
        s0 is not None and (s0[1:] > 0).all() and not np.array_equal(mu0[1:], mu1[1:])
    )  # seeds differ
    rows = [b for b in fc.batches()]
    comps = set(np.concatenate([b.column("component").to_numpy() for b in rows]).tolist())
    assert comps == {0, 1}
    assert all(b.column("sigma").null_count == 0 for b in rows)
    monkeypatch.setattr(ffnn, "train_one", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    again = ffnn.fit_predict(panel["train"], panel["val"], panel["test"], tmp_path, "linear", spec)
    assert np.array_equal(again.components[1][0], mu1, equal_nan=True)


def test_training_reduces_loss_on_signal() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(256, 12)).astype(np.float32)
    Y = np.repeat(X[:, :1], 20, axis=1) + 0.1 * rng.normal(size=(256, 20)).astype(np.float32)
    Y[rng.random(Y.shape) < 0.3] = np.nan
    spec = {"epochs": 6, "lr": 1e-3, "batch_size": 64}
    state = ffnn.train_one("large", X, Y, 60, spec)
    mu, _ = ffnn.predict_one("large", state, X, 20)
    ok = np.isfinite(Y)
    assert np.mean((mu[ok] - Y[ok]) ** 2) < 0.5 * np.nanvar(Y)
