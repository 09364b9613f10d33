"""The CPU presets' options: context attention for query tokens, sampled training queries,
and the origin-value anchor."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from proforma.contracts.errors import UserError
from proforma.models.forma.batching import SPLIT_LAST_Q, WindowStore, build_example, collate
from proforma.models.forma.network import Forma
from proforma.models.forma.predict import run_batch, run_slots, slot_index
from proforma.models.forma.presets import preset
from proforma.models.forma.tokens import sinusoidal
from tests.forma.conftest import TOY_IDENTITIES, make_windows

AMAP = np.arange(10)


def _store(split: str = "test") -> WindowStore:
    last = SPLIT_LAST_Q[split]
    return WindowStore.from_batches(
        [
            make_windows(6, seed=9, split=split, origin_q0=last - 25),
            make_windows(4, seed=3, split=split, origin_q0=last - 30, items=(1, 2, 4, 6)),
        ]
    )


def _model(**kw) -> Forma:
    torch.manual_seed(7)
    return Forma(10, 49, 16, 2, 2, 32, 0.0, **kw).eval()


def _masked_reference(model: Forma, batch) -> torch.Tensor:
    """The same encoder run as one full pass with an explicit attention mask (a query may
    look at context tokens only, a context token too): what context attention must equal."""
    h = model.embed(*batch.inputs()[:5], batch.anchor if model.anchor else None)
    b, t1 = h.shape[:2]
    ctx = torch.cat((torch.ones(b, 1, dtype=torch.bool), ~batch.query & ~batch.pad), dim=1)
    allowed = ctx[:, None, :].expand(b, t1, t1)
    mask = torch.zeros(b, t1, t1).masked_fill(~allowed, float("-inf"))
    heads = model.encoder.layers[0].self_attn.num_heads
    mask = mask.repeat_interleave(heads, dim=0)
    for layer in model.encoder.layers:
        h = layer(h, src_mask=mask)
    return h[:, 1:]


def test_context_attention_equals_the_masked_full_pass():
    store, model = _store(), _model(query_attention="context")
    batch = collate([build_example(store, i, 20) for i in range(len(store))], AMAP)
    assert batch.query.any() and (~batch.query & ~batch.pad).any()
    ref = _masked_reference(model, batch)
    u = torch.cat((ref, sinusoidal(batch.rel_q, 16)), -1)
    mu_ref = model.mu_head(u).squeeze(-1)
    with torch.no_grad():
        mu, _ = model(*batch.inputs())
    keep = ~batch.pad
    torch.testing.assert_close(mu[keep], mu_ref.detach()[keep], rtol=1e-4, atol=1e-5)


def test_a_context_query_ignores_the_other_queries_and_the_slot_path_agrees():
    store = _store()
    exs = [build_example(store, i, 20) for i in range(len(store))]
    batch = collate(exs, AMAP)
    # drop every second future slot of every set: the remaining queries' outputs stay
    thin = []
    for e in exs:
        keep = ~e.future | (np.cumsum(e.future) % 2 == 0)
        thin.append(
            type(e)(
                **{k: (v[keep] if isinstance(v, np.ndarray) else v) for k, v in e.__dict__.items()}
            )
        )
    thin_batch = collate(thin, AMAP)
    for mode, should_agree in (("context", True), ("full", False)):
        model = _model(query_attention=mode)
        mu, _ = run_batch(model, batch)
        mu_t, _ = run_batch(model, thin_batch)
        a = np.concatenate(
            [
                mu[r, : len(e.item_id)][(~e.future | (np.cumsum(e.future) % 2 == 0)) & e.future]
                for r, e in enumerate(exs)
            ]
        )
        b = np.concatenate([mu_t[r, : len(e.item_id)][e.future] for r, e in enumerate(thin)])
        assert np.allclose(a, b, atol=1e-5) == should_agree, mode
    # the inference path (last layer on the slots only) equals the full context pass
    model = _model(query_attention="context")
    mu, sigma = run_batch(model, batch)
    index, valid = slot_index(batch)
    mu_s, sigma_s = run_slots(model, batch, index)
    r, k = np.nonzero(valid)
    np.testing.assert_allclose(mu_s[r, k], mu[r, index[r, k]], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sigma_s[r, k], sigma[r, index[r, k]], rtol=1e-5, atol=1e-5)


def test_training_sets_keep_at_most_the_sampled_realized_queries():
    store = _store("train").take(np.arange(6))
    cfg = preset("small", query_attention="context", train_queries=7, p_mask_future_block=1.0)
    for i in range(len(store)):
        ex = build_example(
            store, i, 20, rng=np.random.default_rng(i), identities=TOY_IDENTITIES, cfg=cfg
        )
        queries = ex.future & ex.hidden
        assert queries.sum() == 7 and ex.observed[queries].all()  # only targets, at most 7
    full = preset(
        "small", query_attention="full", train_queries=0
    )  # the whole grid, targets or not
    ex = build_example(
        store, 0, 20, rng=np.random.default_rng(0), identities=TOY_IDENTITIES, cfg=full
    )
    assert (ex.future & ~ex.observed).any()
    with pytest.raises(UserError, match="context"):
        preset("small", query_attention="full", train_queries=5)


def test_the_anchor_starts_the_forecast_at_the_origin_value():
    store = _store()
    exs = [build_example(store, i, 20) for i in range(len(store))]
    batch = collate(exs, AMAP)
    for r, e in enumerate(exs):
        at0 = {int(i): float(x) for i, q, x in zip(e.item_id, e.rel_q, e.x) if q == 0 and i != 0}
        fut = np.nonzero(e.future)[0]
        assert np.allclose(batch.anchor[r, fut].numpy(), [at0[int(e.item_id[j])] for j in fut])
        assert not batch.anchor[r, : len(e.item_id)][~e.future].any()
    model = _model(query_attention="context", anchor=True)
    with torch.no_grad():  # with the mean head zeroed the forecast is the origin value
        last = model.mu_head[-1]
        assert isinstance(last, torch.nn.Linear)
        last.weight.zero_()
        last.bias.zero_()
    mu, _ = run_batch(model, batch)
    slot = batch.slot.numpy()
    np.testing.assert_allclose(mu[slot], batch.anchor.numpy()[slot], atol=1e-6)
    assert (
        sum(p.numel() for p in model.parameters())
        == sum(p.numel() for p in _model(query_attention="context").parameters()) + 16
    )  # w_anchor
