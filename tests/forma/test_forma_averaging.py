"""The moving average of Forma's weights: its arithmetic, its checkpoint and its resume."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from proforma.app.flows.forma import ship_checkpoint
from proforma.contracts.errors import UserError
from proforma.models.forma.averaging import WeightAverage
from proforma.models.forma.batching import WindowStore
from proforma.models.forma.presets import preset
from proforma.models.forma.train import fit, load_checkpoint
from tests.forma.conftest import TINY, TOY_IDENTITIES, interrupt_then_resume, make_windows


@pytest.fixture(scope="module")
def store():
    return WindowStore.from_batches([make_windows(48, seed=5)])


def _flat(state: dict) -> torch.Tensor:
    return torch.cat([v.detach().float().flatten() for v in state.values()])


def test_the_average_follows_the_ramped_decay():
    net = nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        net.weight.fill_(0.0)
    avg = WeightAverage(net, decay=0.5)
    expected = 0.0
    for t, value in enumerate([4.0, 8.0, 2.0, 6.0]):
        with torch.no_grad():
            net.weight.fill_(value)
        d = min(0.5, (1 + t) / (10 + t))
        expected = d * expected + (1 - d) * value
        avg.update(net)
        assert avg.weights(net)["weight"] == pytest.approx(torch.full((1, 2), expected))
    # the first update keeps 1/10 of the initial weights, not `decay` of them
    assert WeightAverage(net, 0.999).rate() == pytest.approx(0.1)
    with pytest.raises(ValueError):
        WeightAverage(net, 1.0)


def test_a_run_with_an_average_forecasts_with_it_and_resumes_exactly(store, tmp_path):
    cfg = preset("small", epochs=2, ema_decay=0.9, **TINY)
    full = fit(store, TOY_IDENTITIES, cfg, seed=7, checkpoint=tmp_path / "a.pt", progress=False)
    model, ck = load_checkpoint(tmp_path / "a.pt")
    raw = _flat(ck["state_dict"])
    averaged = _flat(model.state_dict())
    assert ck["ema"]["updates"] == sum(h["batches"] for h in full.history)
    assert not torch.equal(raw, averaged)  # the forecast does not use the last step's weights
    assert full.model is not None
    assert torch.equal(averaged, _flat(full.model.state_dict()))

    left, _ = interrupt_then_resume(store, cfg, 7, tmp_path / "b.pt")
    assert left["epoch"] == 1 and left["ema"]["updates"] == full.history[0]["batches"]
    resumed, ck_b = load_checkpoint(tmp_path / "b.pt")
    assert torch.equal(_flat(resumed.state_dict()), averaged)
    assert torch.equal(_flat(ck_b["state_dict"]), raw)

    shipped = ship_checkpoint(tmp_path / "a.pt", tmp_path / "shipped.pt")
    from_ship, ck_s = load_checkpoint(shipped)
    assert ck_s["ema"] is None and "optimizer" not in ck_s
    assert torch.equal(_flat(from_ship.state_dict()), averaged)


def test_the_decay_is_checked():
    with pytest.raises(UserError, match="ema_decay"):
        preset("mid", ema_decay=1.0)
