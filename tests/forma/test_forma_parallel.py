"""The multi-process and GPU switches, exercised on CPU: DDP under torchrun with gloo,
bf16 autocast, torch.compile wiring."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

import proforma.models.forma.train as forma_train
from proforma.models.forma.batching import WindowStore
from proforma.models.forma.presets import preset
from proforma.models.forma.train import fit, load_checkpoint
from tests.forma.conftest import TINY, TOY_IDENTITIES, make_windows

ROOT = Path(__file__).resolve().parents[2]


def _trained(result: forma_train.FitResult) -> torch.nn.Module:
    """The fitted network of a training result (fit always returns one)."""
    assert result.model is not None
    return result.model


def _write_ipc(path: Path, table: pa.Table) -> None:
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema) as w:
        w.write_table(table)


def test_torchrun_two_ranks_train_disjoint_shards_and_end_identical(tmp_path):
    _write_ipc(tmp_path / "windows.arrow", pa.Table.from_batches([make_windows(48, seed=5)]))
    ids = TOY_IDENTITIES.to_dict()
    _write_ipc(
        tmp_path / "ids.arrow",
        pa.table({"identity": ids["identity"], "item_id": pa.array(ids["item_id"], pa.int16())}),
    )
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "proforma.models.forma.train",
        "--windows",
        str(tmp_path / "windows.arrow"),
        "--identities",
        str(tmp_path / "ids.arrow"),
        "--preset",
        "small",
        "--seed",
        "3",
        "--epochs",
        "2",
        "--origins-per-epoch",
        "32",
        "--out",
        str(tmp_path / "seed3.pt"),
        "--rank-report",
        str(tmp_path / "ranks"),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        cmd, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    r0, r1 = (json.loads((tmp_path / "ranks" / f"rank{r}.json").read_text()) for r in (0, 1))
    assert (r0["rank"], r1["rank"], r0["world"], r1["world"]) == (0, 1, 2, 2)
    for epoch in (0, 1):
        keys = [{tuple(k) for e, b in r["batches"] if e == epoch for k in b} for r in (r0, r1)]
        assert keys[0] and keys[1] and not keys[0] & keys[1]  # disjoint shards of the epoch
        assert len(keys[0] | keys[1]) == 32  # together: the epoch's whole subsample
    # every rank ends with the same weights, and rank 0 wrote them
    assert r0["weights_sha256"] == r1["weights_sha256"]
    model, ck = load_checkpoint(tmp_path / "seed3.pt")
    sha = hashlib.sha256()
    for v in model.state_dict().values():
        sha.update(v.detach().contiguous().numpy().tobytes())
    assert sha.hexdigest() == r0["weights_sha256"] and ck["complete"]


def test_bf16_autocast_runs_a_training_step_on_cpu():
    store = WindowStore.from_batches([make_windows(16, seed=2)])
    seen: list[torch.dtype] = []
    cfg = preset("small", epochs=1, bf16=True, **TINY)
    model = forma_train.build_model(cfg)
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda mod, inp, out: seen.append(out.dtype) if isinstance(mod, torch.nn.Linear) else None
    )
    try:
        res = fit(store, TOY_IDENTITIES, cfg, seed=1, progress=False)
    finally:
        handle.remove()
    assert torch.bfloat16 in seen  # the linear layers ran under bf16 autocast
    assert np.isfinite(res.final_loss) and res.history[0]["batches"] == 2
    assert any(
        not torch.equal(a, b)
        for a, b in zip(_trained(res).state_dict().values(), model.state_dict().values())
    )


def test_compile_switch_wraps_the_network(monkeypatch):
    calls: list[dict] = []

    def fake_compile(module, **kwargs):
        calls.append(kwargs)
        return module

    monkeypatch.setattr(torch, "compile", fake_compile)
    store = WindowStore.from_batches([make_windows(8, seed=2)])
    fit(
        store,
        TOY_IDENTITIES,
        preset("small", epochs=1, compile=True, **TINY),
        seed=1,
        progress=False,
    )
    assert calls == [{"dynamic": True}]
    calls.clear()
    fit(store, TOY_IDENTITIES, preset("small", epochs=1, **TINY), seed=1, progress=False)
    assert calls == []


@pytest.mark.parametrize("schedule", ["constant", "cosine"])
def test_learning_rate_schedule(schedule):
    cfg = preset("small", lr=1e-2, warmup_steps=10, lr_schedule=schedule, lr_min_ratio=0.1)
    lrs = [forma_train.learning_rate(cfg, s, 110) for s in range(110)]
    assert lrs[0] == pytest.approx(1e-3) and lrs[9] == pytest.approx(1e-2)
    if schedule == "constant":
        assert lrs[-1] == pytest.approx(1e-2)
    else:
        assert lrs[-1] == pytest.approx(1e-3, rel=1e-3) and all(
            a >= b for a, b in itertools.pairwise(lrs[9:])
        )
    assert forma_train.planned_steps(preset("small"), 24_656) == 16 * 6144 // 4


DDP_STEP = """
import json, os, sys
import numpy as np, torch
sys.path[:0] = [{root!r}, {tests!r}]
from tests.forma.conftest import make_windows
from proforma.models.forma.batching import WindowStore, build_example, collate
from proforma.models.forma.presets import preset
from proforma.models.forma.train import build_model, train_step

torch.distributed.init_process_group("gloo")
rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
cfg = preset("small", grad_clip=1e9, **{tiny!r})
store = WindowStore.from_batches([make_windows(4, seed=11, split="test", origin_q0=8050)])
share = {share!r}[rank]
batch = collate([build_example(store, i, h) for i, h in share], np.arange(10))
torch.manual_seed(0)
model = build_model(cfg)
net = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
train_step(net, model, opt, batch, cfg, torch.device("cpu"), world)
out = {{k: v.flatten().tolist() for k, v in model.state_dict().items()}}
with open(os.path.join({out!r}, f"rank{{rank}}.json"), "w") as f:
    json.dump(out, f)
# both ranks reach the teardown together: a rank closing its gloo pairs while the other
# still uses them aborts that one ("terminate called without an active exception")
torch.distributed.barrier()
torch.distributed.destroy_process_group()
"""


def test_ddp_loss_weights_every_token_of_the_global_batch_equally(tmp_path):
    from proforma.models.forma.batching import build_example, collate
    from proforma.models.forma.train import build_model, train_step

    # rank 0 holds one short set (horizon 1), rank 1 three long ones: per-rank means
    # would give rank 0's few tokens the weight of rank 1's many
    share = [[(0, 1)], [(1, 20), (2, 20), (3, 20)]]
    script = tmp_path / "ddp_step.py"
    script.write_text(
        DDP_STEP.format(
            root=str(ROOT),
            tests=str(ROOT / "tests" / "forma"),
            tiny=TINY,
            share=share,
            out=str(tmp_path),
        )
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(script),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1]

    cfg = preset("small", grad_clip=1e9, **TINY)
    store = WindowStore.from_batches([make_windows(4, seed=11, split="test", origin_q0=8050)])

    def one_step(parts):
        """Weights after one single-process SGD step of train_step on the parts as one batch."""
        torch.manual_seed(0)
        model = build_model(cfg)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        train_step(
            model,
            model,
            opt,
            collate([build_example(store, i, h) for i, h in parts], np.arange(10)),
            cfg,
            torch.device("cpu"),
        )
        return torch.cat([v.flatten() for v in model.state_dict().values()])

    whole = one_step(share[0] + share[1])  # one process, the union batch, one token mean
    ddp = torch.tensor([x for v in ranks[0].values() for x in v])
    torch.testing.assert_close(ddp, whole, rtol=1e-4, atol=1e-6)
    # and the per-rank mean (each rank averaging its own tokens) is measurably different
    torch.manual_seed(0)
    start = torch.cat([v.flatten() for v in build_model(cfg).state_dict().values()])
    per_rank = start + ((one_step(share[0]) - start) + (one_step(share[1]) - start)) / 2
    assert not torch.allclose(per_rank, whole, rtol=1e-4, atol=1e-6)


def test_worker_processes_build_the_same_batches_as_the_main_process():
    store = WindowStore.from_batches([make_windows(24, seed=4)])
    cfg = preset("small", epochs=2, **TINY)
    runs = [fit(store, TOY_IDENTITIES, cfg, seed=5, progress=False, workers=w) for w in (0, 2)]
    for a, b in zip(
        _trained(runs[0]).state_dict().values(), _trained(runs[1]).state_dict().values()
    ):
        assert torch.equal(a, b)
    assert runs[0].history[-1]["loss"] == runs[1].history[-1]["loss"]
