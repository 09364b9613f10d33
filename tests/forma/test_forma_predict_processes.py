"""Forecasting in processes side by side (predict --jobs, issue 48): the same forecasts
as one process makes, every origin once, in the contract's schema."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from proforma.app.flows.forma import start_forecast_processes
from proforma.contracts.errors import UserError
from proforma.models import FORECAST_SCHEMA
from proforma.models.forma.batching import SPLIT_LAST_Q, WindowStore
from proforma.models.forma.predict import predict
from proforma.models.forma.presets import preset
from proforma.models.forma.train import fit, load_checkpoint
from tests.forma.conftest import TINY, TOY_IDENTITIES, make_windows

KEYS = ["firm_id", "origin_q", "item_id", "horizon", "component"]


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in KEYS])


def test_processes_forecast_what_one_process_does(tmp_path: Path) -> None:
    cfg = preset("small", epochs=1, **TINY)
    checkpoints = []
    for seed in (1, 2):
        path = tmp_path / f"seed{seed}.pt"
        fit(
            WindowStore.from_batches([make_windows(16, seed=seed)]),
            TOY_IDENTITIES,
            cfg,
            seed=seed,
            checkpoint=path,
            progress=False,
        )
        checkpoints.append(path)
    last = SPLIT_LAST_Q["test"]
    store = WindowStore.from_batches(
        [make_windows(9, seed=4, split="test", origin_q0=last - 8, future=False)]
    )
    models = [load_checkpoint(p)[0] for p in checkpoints]
    one = _sorted(pa.Table.from_batches(list(predict(models, store, batch_size=4))))
    many = pa.Table.from_batches(
        list(
            start_forecast_processes(
                checkpoints, store, jobs=2, batch_size=4, folder=tmp_path / "spool"
            ).batches()
        ),
        schema=FORECAST_SCHEMA,
    )
    many = _sorted(many)
    assert many.schema == FORECAST_SCHEMA and many.num_rows == one.num_rows > 0
    for key in KEYS:
        assert many.column(key).equals(one.column(key)), key
    for value in ("mu", "sigma"):
        np.testing.assert_allclose(
            many.column(value).to_numpy(), one.column(value).to_numpy(), rtol=1e-5, atol=1e-6
        )
    assert set(many.column("component").to_pylist()) == {0, 1}


def test_a_failing_process_is_one_clear_error(tmp_path: Path) -> None:
    store = WindowStore.from_batches([make_windows(4, seed=1, split="test", future=False)])
    try:
        list(
            start_forecast_processes(
                [tmp_path / "missing.pt"], store, jobs=2, folder=tmp_path
            ).batches()
        )
    except UserError as exc:
        assert "--jobs 1" in str(exc)
    else:
        raise AssertionError("a process that cannot load its checkpoint must fail the call")
