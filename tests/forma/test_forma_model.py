"""Forma: parameter accounting, curriculum, batching and the ex-ante grid, losses."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch

from proforma.contracts.errors import UserError
from proforma.contracts.panel import TUPLE_WINDOW_SCHEMA
from proforma.models.forma.batching import (
    SPLIT_LAST_Q,
    WindowStore,
    bucketed_order,
    build_example,
    collate,
    default_account_map,
    iter_batches,
)
from proforma.models.forma.losses import gaussian_beta_nll, laplace_beta_nll, masked_loss
from proforma.models.forma.network import Forma, count_parameters
from proforma.models.forma.presets import curriculum, preset
from proforma.models.forma.tokens import sinusoidal
from proforma.models.forma.train import build_model
from tests.forma.conftest import make_windows


def test_paper_preset_has_exactly_942210_parameters():
    cfg = preset("paper")
    assert (cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_ff, cfg.n_accounts) == (
        128,
        4,
        4,
        512,
        82,
    )
    assert count_parameters(build_model(cfg)) == 942_210
    # the embedding share: (82 accounts + 49 industries + w_x + e_mask) x 128
    m = build_model(cfg)
    assert count_parameters(m.embed) == 133 * 128
    assert count_parameters(Forma(83)) == 942_210 + 128


def test_curriculum_schedule():
    assert curriculum(preset("paper")) == [4, 4, 8, 12, 16, 20] + [20] * 6
    assert curriculum(preset("small")) == [4, 4, 8, 12, 16] + [20] * 11
    with pytest.raises(UserError):
        preset("huge")
    with pytest.raises(UserError):
        preset("paper", family="student")


def test_sinusoid_handles_negative_quarters():
    pe = sinusoidal(torch.tensor([-11, 0, 20]), 16)
    assert pe.shape == (3, 16)
    assert torch.allclose(pe[1, 0::2], torch.zeros(8)) and torch.allclose(
        pe[1, 1::2], torch.ones(8)
    )
    assert not torch.allclose(pe[0], pe[2])


@pytest.mark.parametrize("query_attention", ["full", "context"])
def test_attention_never_takes_the_cudnn_backend(query_attention):
    """cuDNN's attention re-plans for every sequence length (bucketed batches vary), which
    made bf16 training 4-7x slower than fp32 on an H100 (docs/forma.md, "On a GPU"): every
    attention call of the network runs with it off, and the caller's setting comes back."""
    torch.manual_seed(0)
    net = Forma(
        n_accounts=5, d_model=16, n_layers=2, n_heads=2, d_ff=32, query_attention=query_attention
    )
    seen = []
    for layer in net.encoder.layers:
        layer.self_attn.register_forward_pre_hook(
            lambda *_: seen.append(torch.backends.cuda.cudnn_sdp_enabled())
        )
    b, t = 2, 6
    query = torch.zeros(b, t, dtype=torch.bool)
    query[:, 4:] = True
    before = torch.backends.cuda.cudnn_sdp_enabled()
    net(
        torch.randint(0, 5, (b, t)),
        torch.arange(t).expand(b, t) - 3,
        torch.randn(b, t),
        query,
        torch.zeros(b, dtype=torch.long),
        torch.zeros(b, t, dtype=torch.bool),
        query,
    )
    assert seen and not any(seen)
    assert torch.backends.cuda.cudnn_sdp_enabled() == before


def _one_window(rel_q, item_id, x, origin_q=8000, split="train", ff48=7):
    return pa.RecordBatch.from_pylist(
        [
            {
                "firm_id": 1,
                "origin_q": origin_q,
                "split": split,
                "ff48": ff48,
                "rel_q": rel_q,
                "item_id": item_id,
                "x": x,
            }
        ],
        schema=TUPLE_WINDOW_SCHEMA,
    )


def test_future_grid_is_ex_ante_and_cut_at_the_split_end():
    # origin 3 quarters before the train split's last quarter; items 1, 2 reported at origin,
    # item 5 only earlier; the scale token (0) at rel_q 0.
    oq = SPLIT_LAST_Q["train"] - 3
    rel = [-1, 0, 0, 0, 1, 1, 2, 3]
    item = [5, 1, 2, 0, 1, 5, 2, 1]
    x = [0.5, 1.0, 2.0, 0.3, 1.1, 9.0, 2.2, 1.3]
    store = WindowStore.from_batches([_one_window(rel, item, x, origin_q=oq)])
    ex = build_example(store, 0, 20)
    fut = ex.future
    grid = sorted(zip(ex.item_id[fut].tolist(), ex.rel_q[fut].tolist()))
    assert grid == [
        (1, 1),
        (1, 2),
        (1, 3),
        (2, 1),
        (2, 2),
        (2, 3),
    ]  # cut at q=3, no scale, no item 5
    obs = dict(
        zip(zip(ex.item_id[fut].tolist(), ex.rel_q[fut].tolist()), ex.observed[fut].tolist())
    )
    assert obs == {
        (1, 1): True,
        (1, 2): False,
        (1, 3): True,
        (2, 1): False,
        (2, 2): True,
        (2, 3): False,
    }
    assert ex.hidden[fut].all()  # inference: the whole future is hidden
    # the curriculum's horizon also cuts
    ex1 = build_example(store, 0, 1)
    assert ex1.rel_q[ex1.future].max() == 1
    # same firm in the test split: no cut before 20
    store_t = WindowStore.from_batches([_one_window(rel, item, x, origin_q=oq, split="test")])
    assert build_example(store_t, 0, 20).rel_q.max() == 20


def test_unrealized_queries_never_enter_the_loss():
    store = WindowStore.from_batches([make_windows(8, seed=3, drop_future=0.5)])
    amap = default_account_map(10)
    batch = collate([build_example(store, i, 20) for i in range(len(store))], amap)
    # exact check: loss positions are exactly hidden & observed, never padding
    exs = [build_example(store, i, 20) for i in range(len(store))]
    for r, e in enumerate(exs):
        n = len(e.item_id)
        assert np.array_equal(batch.loss_mask[r, :n].numpy(), e.hidden & e.observed)
        assert not batch.loss_mask[r, n:].any()
        assert (~e.observed & e.future).any()  # there are unrealized query tokens
    # and changing their targets does not change the loss
    torch.manual_seed(0)
    model = Forma(10, d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.0).eval()
    mu, lv = model(*batch.inputs())
    before, tokens = masked_loss("gaussian", batch.target, mu, lv, batch.loss_mask)
    poisoned = batch.target.clone()
    unreal = torch.zeros_like(batch.pad)
    for r, e in enumerate(exs):
        unreal[r, : len(e.item_id)] = torch.from_numpy(~e.observed)
    poisoned[unreal] = 1e6
    after, n2 = masked_loss("gaussian", poisoned, mu, lv, batch.loss_mask)
    assert tokens == n2 > 0 and torch.equal(before, after)


def test_beta_nll_formulas():
    y, mu, lv = torch.tensor([1.0]), torch.tensor([0.2]), torch.tensor([0.4])
    s2 = np.exp(0.4)
    g = ((1 - 0.2) ** 2 / (2 * s2) + 0.2) * s2**0.5
    assert gaussian_beta_nll(y, mu, lv).item() == pytest.approx(g, rel=1e-6)
    b = np.sqrt(s2) / np.sqrt(2)
    lap = (np.log(2 * b) + 0.8 / b) * b**0.5
    assert laplace_beta_nll(y, mu, lv).item() == pytest.approx(lap, rel=1e-6)
    # log variance is clamped at +-10
    big = gaussian_beta_nll(y, mu, torch.tensor([50.0]), beta=0.0)
    assert big.item() == pytest.approx(0.64 / (2 * np.exp(10)) + 5, rel=1e-6)
    # token-weighted mean over the mask
    mask = torch.tensor([True, False, True])
    yy, mm, ll = torch.tensor([1.0, 5.0, 0.0]), torch.zeros(3), torch.zeros(3)
    loss, n = masked_loss("gaussian", yy, mm, ll, mask, beta=0.0)
    assert n == 2 and loss.item() == pytest.approx((0.5 + 0.0) / 2)


def test_bucketing_cuts_padding():
    rng = np.random.default_rng(0)
    sizes = rng.integers(50, 2000, size=640)

    def pad_share(batches):
        slots = sum(len(b) * sizes[b].max() for b in batches)
        return 1 - sizes.sum() / slots

    bucketed = bucketed_order(sizes, 32, np.random.default_rng(1), chunk_batches=20)
    random_ = [p for p in np.array_split(np.random.default_rng(1).permutation(640), 20)]
    assert sorted(np.concatenate(bucketed).tolist()) == list(range(640))
    assert pad_share(bucketed) < 0.5 * pad_share(random_)


def test_store_reads_batches_sorts_and_drops_duplicates():
    a = make_windows(8, seed=1)
    store = WindowStore.from_batches([a, a.slice(2, 3)])
    assert len(store) == 8
    keys = list(zip(store.firm_id.tolist(), store.origin_q.tolist()))
    assert keys == sorted(keys)
    with pytest.raises(UserError):
        WindowStore.from_batches([a.drop_columns(["x"])])


def test_training_batches_have_masks_and_unknown_items_fail():
    store = WindowStore.from_batches([make_windows(8)])
    cfg = preset("small", n_accounts=10)
    batches = list(
        iter_batches(
            store,
            [np.arange(8)],
            20,
            default_account_map(10),
            rng=np.random.default_rng(0),
            cfg=cfg,
        )
    )
    assert batches[0].loss_mask.any()
    with pytest.raises(UserError):
        collate([build_example(store, 0, 4)], default_account_map(5))
