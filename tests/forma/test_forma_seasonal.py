"""The seasonal option: future tokens see their item's value of the same season a year
before (tokens.seasonal_lag), from visible history only."""

from __future__ import annotations

import numpy as np
import torch

from proforma.models.forma.batching import SPLIT_LAST_Q, WindowStore, build_example, collate
from proforma.models.forma.network import Forma
from proforma.models.forma.predict import run_batch, run_slots, slot_index
from proforma.models.forma.tokens import seasonal_lag
from tests.forma.conftest import make_windows

AMAP = np.arange(10)


def test_seasonal_lag_reads_the_same_season_of_visible_history():
    # one set: item 1 at -3 (0.5) and 0 (0.9), item 2 at -2 hidden, then future tokens
    account = torch.tensor([[1, 1, 2, 1, 1, 1, 1, 2, 3, 0]])
    rel_q = torch.tensor([[-3, 0, -2, 1, 2, 4, 5, 2, 1, 0]])
    x = torch.tensor([[0.5, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    hidden = torch.tensor([[False, False, True, True, True, True, True, True, True, True]])
    value, seen = seasonal_lag(account, rel_q, x, hidden, n_rows=10)
    # q=1 -> -3, q=2 -> -2 (absent), q=4 -> 0, q=5 -> -3; item 2's -2 is hidden; item 3 none
    assert seen.tolist() == [[False, False, False, True, False, True, True, False, False, False]]
    np.testing.assert_allclose(value[seen].numpy(), [0.5, 0.9, 0.5])
    assert not value[~seen].any()


def test_year_ago_reads_the_origin_quarter_of_the_year_before():
    account = torch.tensor([[1, 1, 2, 1, 1, 2, 1]])
    rel_q = torch.tensor([[-4, 0, -4, 1, 7, 3, -3]])
    x = torch.tensor([[0.2, 0.9, 0.4, 0.0, 0.0, 0.0, 0.7]])
    hidden = torch.tensor([[False, False, True, True, True, True, False]])
    value, seen = seasonal_lag(account, rel_q, x, hidden, n_rows=10, year_ago=True)
    # every future token of item 1 sees its -4 value; item 2's -4 is hidden
    assert seen.tolist() == [[False, False, False, True, True, False, False]]
    np.testing.assert_allclose(value[seen].numpy(), [0.2, 0.2])


def _examples() -> list:
    last = SPLIT_LAST_Q["test"]
    store = WindowStore.from_batches([make_windows(4, seed=5, split="test", origin_q0=last - 25)])
    return [build_example(store, i, 8) for i in range(len(store))]


def test_a_query_sees_its_same_season_value_and_nothing_later():
    exs = _examples()
    torch.manual_seed(3)
    model = Forma(10, 49, 16, 1, 2, 32, 0.0, query_attention="context", seasonal=True).eval()
    batch = collate(exs, AMAP)
    e = exs[0]
    # an item's forecast at q = 1 against its value at rel_q -3 (the same season)
    item = next(i for i in (1, 2, 3) if ((e.item_id == i) & (e.rel_q == -3)).any())
    src = int(np.nonzero((e.item_id == item) & (e.rel_q == -3))[0][0])
    q1 = int(np.nonzero((e.item_id == item) & (e.rel_q == 1))[0][0])
    q2 = int(np.nonzero((e.item_id == item) & (e.rel_q == 2))[0][0])
    base = model.embed(*batch.inputs()[:5])
    moved = collate(exs, AMAP)
    moved.x[0, src] += 1.0
    emb = model.embed(*moved.inputs()[:5])
    # the q=1 token changes by w_season (it also sees the value through attention, but
    # the embedding is before any attention); the q=2 token does not
    torch.testing.assert_close(emb[0, 1 + q1] - base[0, 1 + q1], model.embed.w_season)
    torch.testing.assert_close(emb[0, 1 + q2], base[0, 1 + q2])
    # the fast inference path (query slots only) gives the full pass's numbers
    mu, sigma = run_batch(model, batch)
    idx, valid = slot_index(batch)
    mu_s, sigma_s = run_slots(model, batch, idx)
    slot = batch.slot.numpy()
    np.testing.assert_allclose(mu_s[valid], mu[slot], atol=1e-5)
    np.testing.assert_allclose(sigma_s[valid], sigma[slot], atol=1e-5)


def test_each_seasonal_option_adds_two_vectors_only():
    def count(**kw) -> int:
        m = Forma(10, 49, 16, 1, 2, 32, 0.0, query_attention="context", **kw)
        return sum(p.numel() for p in m.parameters())

    assert count(seasonal=True) == count() + 2 * 16
    assert count(seasonal=True, year_ago=True) == count() + 4 * 16


def test_year_ago_moves_every_future_token_of_its_item():
    exs = _examples()
    e = exs[0]
    item = next(i for i in (1, 2, 3) if ((e.item_id == i) & (e.rel_q == -4)).any())
    src = int(np.nonzero((e.item_id == item) & (e.rel_q == -4))[0][0])
    fut = np.nonzero((e.item_id == item) & (e.rel_q >= 1))[0]
    other = np.nonzero((e.item_id != item) & (e.rel_q >= 1))[0]
    torch.manual_seed(3)
    model = Forma(10, 49, 16, 1, 2, 32, 0.0, query_attention="context", year_ago=True).eval()
    batch, moved = collate(exs, AMAP), collate(exs, AMAP)
    moved.x[0, src] += 1.0
    delta = model.embed(*moved.inputs()[:5]) - model.embed(*batch.inputs()[:5])
    w_year = model.embed.w_year
    assert w_year is not None
    torch.testing.assert_close(delta[0, 1 + fut], w_year.expand(len(fut), -1))
    assert not delta[0, 1 + other].any()
