"""Hand-made tuple windows in the contract's Arrow schema (docs/contracts.md)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from proforma.contracts.panel import TUPLE_WINDOW_SCHEMA
from proforma.models.forma.masking import Identities

# A toy statement: items 1 + 2 = 3 (identity A), 3 - 4 = 5 (identity B); item 6 ungrouped.
TOY_IDENTITIES = Identities.from_arrays(["A", "A", "A", "B", "B", "B"], [1, 2, 3, 3, 4, 5])


def make_windows(
    n_origins: int = 48,
    seed: int = 0,
    *,
    items=(1, 2, 3, 4, 5, 6),
    split: str = "train",
    origin_q0: int = 7900,
    future: bool = True,
    drop_future: float = 0.2,
) -> pa.RecordBatch:
    """Origins with a persistent, learnable dynamic: x_{t+q} = a_item * rho^q + noise."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {k: [] for k in TUPLE_WINDOW_SCHEMA.names}
    for o in range(n_origins):
        level = rng.normal(size=len(items))
        rq, it, xv = [], [], []
        for q in range(-11, 21 if future else 1):
            if q >= 1 and rng.random() < drop_future:
                continue
            for j, item in enumerate(items):
                if q <= 0 and rng.random() < 0.1 and q != 0:
                    continue
                rq.append(q)
                it.append(item)
                xv.append(float(level[j] * 0.9 ** abs(q) + 0.1 * rng.normal()))
            if q == 0:
                rq.append(0)
                it.append(0)
                xv.append(float(rng.normal()))
        rows["firm_id"].append(o // 4 + 1)
        rows["origin_q"].append(origin_q0 + o % 4)
        rows["split"].append(split)
        rows["ff48"].append(int(rng.integers(1, 50)))
        rows["rel_q"].append(rq)
        rows["item_id"].append(it)
        rows["x"].append(xv)
    return pa.RecordBatch.from_pydict(rows, schema=TUPLE_WINDOW_SCHEMA)


@pytest.fixture
def toy_ids() -> Identities:
    return TOY_IDENTITIES


#: A one-layer, 16-wide network: every Forma test trains in seconds.
TINY = {
    "d_model": 16,
    "n_layers": 1,
    "n_heads": 2,
    "d_ff": 32,
    "dropout": 0.0,
    "n_accounts": 10,
    "batch_size": 8,
    "lr": 3e-3,
    "weight_decay": 0.0,
    "origins_per_epoch": None,
    "warmup_steps": 0,
}


def interrupt_then_resume(store, cfg, seed: int, path):
    """Train `cfg` until its first epoch's checkpoint is written at `path`, stop there (as a
    killed run would), then resume it to the end. Returns (the checkpoint as the
    interruption left it, the resumed run's FitResult)."""
    import torch

    from proforma.models.forma.train import fit

    class Stop(Exception):
        pass

    def stop(row: dict, _model: object) -> None:
        raise Stop

    with pytest.raises(Stop):
        fit(store, TOY_IDENTITIES, cfg, seed=seed, checkpoint=path, progress=False, on_epoch=stop)
    left = torch.load(path, weights_only=False)
    resumed = fit(
        store, TOY_IDENTITIES, cfg, seed=seed, checkpoint=path, resume=True, progress=False
    )
    return left, resumed
