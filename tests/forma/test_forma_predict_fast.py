"""The inference fast path (last layer and heads on query slots only) returns what the
full forward pass returned before it existed."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from proforma.models.forma.batching import SPLIT_LAST_Q, WindowStore, build_example, collate
from proforma.models.forma.network import Forma
from proforma.models.forma.predict import predict, run_batch, run_slots, slot_index
from tests.forma.conftest import make_windows


def _test_store() -> WindowStore:
    last = SPLIT_LAST_Q["test"]
    return WindowStore.from_batches(
        [
            make_windows(6, seed=9, split="test", origin_q0=last - 5, future=False),
            make_windows(
                5, seed=3, split="test", origin_q0=last - 30, future=False, items=(1, 2, 4, 6)
            ),
        ]
    )


def _model() -> Forma:
    torch.manual_seed(7)
    return Forma(10, 49, 16, 2, 2, 32, 0.0).eval()


def test_slot_path_equals_the_full_forward_pass():
    store, model = _test_store(), _model()
    batch = collate([build_example(store, i, 20) for i in range(len(store))], np.arange(10))
    mu, sigma = run_batch(model, batch)
    index, valid = slot_index(batch)
    mu_s, sigma_s = run_slots(model, batch, index)
    r, k = np.nonzero(valid)
    slot = batch.slot.numpy()
    assert valid.sum() == slot.sum() and slot[r, index[r, k]].all()
    np.testing.assert_allclose(mu_s[r, k], mu[r, index[r, k]], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sigma_s[r, k], sigma[r, index[r, k]], rtol=1e-5, atol=1e-6)


def test_predict_output_is_pinned_to_the_full_pass_figures():
    # Figures printed by the full-forward predict() before the slot path (commit e092c75).
    table = pa.Table.from_batches(list(predict([_model()], _test_store(), batch_size=4)))
    table = table.sort_by([(c, "ascending") for c in ("firm_id", "origin_q", "item_id", "horizon")])
    mu, sigma = np.asarray(table.column("mu")), np.asarray(table.column("sigma"))
    assert table.num_rows == 538
    np.testing.assert_allclose(mu.sum(), 259.59039306640625, rtol=1e-6)
    np.testing.assert_allclose(sigma.sum(), 579.3226004838943, rtol=1e-6)
    np.testing.assert_allclose(
        (mu * np.arange(len(mu))).sum() / len(mu), 126.65916839449712, rtol=1e-6
    )
    np.testing.assert_allclose(
        mu[:3], [0.3991847634315491, 0.34731751680374146, 0.2749518156051636], rtol=1e-5
    )
    np.testing.assert_allclose(
        sigma[-3:], [1.137374997138977, 1.1163275241851807, 1.0898536443710327], rtol=1e-5
    )
