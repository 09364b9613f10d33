"""Chronos-2 arm throughput: origins per second of the forecast step (contexts -> quantile rows).

    .venv/bin/python bench/chronos.py                                  # tiny model, CPU
    .venv/bin/python bench/chronos.py --size full --origins 32         # public checkpoint's size
    .venv/bin/python bench/chronos.py --size full --device cuda --dtype bfloat16 --origins 20000
    .venv/bin/python bench/chronos.py --warehouse data/warehouse.duckdb  # the panel's own contexts

The models are random-weight Chronos-2s of the real class built from a config (no
download): `tiny` (the tests' model) and `full` (the parameter count of amazon/chronos-2,
so the same arithmetic per origin as the public weights). Contexts are synthetic but
shaped like the panel (12 quarters, 20..78 items per origin, about 63 on average, 5% gaps,
a few items reported only before the origin) unless --warehouse reads the test split's
raw windows. Prints one line per run with wall and CPU seconds and the load average;
nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

# The repository root replaces this file's folder on the path: bench/chronos.py would
# otherwise shadow the chronos-forecasting package (`import chronos`).
sys.path[0] = str(Path(__file__).resolve().parents[1])

from proforma.models.chronos import HISTORY
from proforma.models.chronos.context import OriginContext, contexts_from_batch, origin_context
from proforma.models.chronos.forecast import (
    forecast_origins,
    level_indices,
    long_form,
    quantile_cells,
)
from proforma.models.chronos.loading import describe, load_pipeline
from proforma.models.chronos.tiny import FULL_SIZE, TINY, save_checkpoint

SIZES = {"tiny": TINY, "full": FULL_SIZE}


def synthetic_contexts(n: int, seed: int = 0) -> list[OriginContext]:
    rng = np.random.default_rng(seed)
    out = []
    for o in range(n):
        n_items = int(rng.integers(20, 79)) if rng.random() < 0.3 else int(rng.integers(55, 79))
        items = np.sort(rng.choice(np.arange(1, 79), n_items, replace=False))
        level = np.exp(rng.normal(4, 2, n_items)) * np.where(rng.random(n_items) < 0.1, -1, 1)
        rel = np.repeat(np.arange(-HISTORY + 1, 1), n_items)
        item = np.tile(items, HISTORY)
        drift = np.exp(np.cumsum(rng.normal(0.01, 0.05, (HISTORY, n_items)), axis=0)).reshape(-1)
        v = np.tile(level, HISTORY) * drift
        keep = rng.random(rel.size) > 0.05
        gone = np.isin(item, items[rng.random(n_items) < 0.05]) & (rel == 0)
        keep &= ~gone
        out.append(origin_context(o, 8040 + o % 60, rel[keep], item[keep], v[keep]))
    return out


def warehouse_contexts(path: str, n: int) -> list[OriginContext]:
    from proforma.app.model_inputs.views import raw_windows
    from proforma.app.store.warehouse import connect

    out: list[OriginContext] = []
    with connect(path=path, read_only=True) as wh:
        for batch in raw_windows(wh, "test", 1024):
            out += contexts_from_batch(batch)
            if len(out) >= n:
                break
    return out[:n]


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=[*SIZES, "both"], default="tiny")
    ap.add_argument("--origins", type=int, default=512)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument(
        "--batch-size",
        default="1024",
        help="series per forward pass; a comma-separated list runs each",
    )
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    ap.add_argument("--warehouse", help="read the test split's contexts from this warehouse")
    ap.add_argument(
        "--flops",
        action="store_true",
        help="also count the model's floating-point operations per origin "
        "(torch's FlopCounterMode: matrix products and attention)",
    )
    args = ap.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    contexts = (
        warehouse_contexts(args.warehouse, args.origins)
        if args.warehouse
        else synthetic_contexts(args.origins)
    )
    series = sum(c.values.shape[0] for c in contexts)
    targets = sum(c.n_targets for c in contexts)
    print(
        f"{len(contexts):,} origins, {series:,} series ({series / len(contexts):.1f} per origin, "
        f"{targets:,} forecast), torch threads {torch.get_num_threads()}",
        flush=True,
    )
    for size in list(SIZES) if args.size == "both" else [args.size]:
        with tempfile.TemporaryDirectory() as tmp:
            pipeline = load_pipeline(
                str(save_checkpoint(Path(tmp) / size, size=SIZES[size])), args.device, args.dtype
            )
        info = describe(pipeline)
        for batch_size in (int(b) for b in args.batch_size.split(",")):
            _run(pipeline, info, size, contexts, batch_size, args.device)
            if args.flops:
                _count_flops(pipeline, size, contexts, batch_size)


def _count_flops(pipeline: Any, size: str, contexts: list[OriginContext], batch_size: int) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    sample = contexts[: max(1, min(len(contexts), 4 * batch_size // 60))]
    with FlopCounterMode(display=False) as counter:
        pipeline.predict([c.values for c in sample], prediction_length=20, batch_size=batch_size)
    per_origin = counter.get_total_flops() / len(sample)
    print(
        f"{size:5s} batch {batch_size:5d}: {per_origin / 1e9:8.2f} GFLOP per origin "
        f"(counted over {len(sample)} origins)",
        flush=True,
    )


def _run(
    pipeline: Any,  # a Chronos-2 pipeline (the chronos package ships no types)
    info: dict,
    size: str,
    contexts: list[OriginContext],
    batch_size: int,
    device: str,
) -> None:
    import torch

    forecast_origins(pipeline, contexts[:8], batch_size=batch_size)  # warm-up
    t0, c0 = time.perf_counter(), _cpu_s()
    out = pipeline.predict(
        [c.values for c in contexts], prediction_length=20, batch_size=batch_size
    )
    if device == "cuda":
        torch.cuda.synchronize()
    t1, c1 = time.perf_counter(), _cpu_s()
    cells, _ = quantile_cells(contexts, [p.numpy() for p in out], level_indices(pipeline.quantiles))
    table = long_form(cells)
    t2, c2 = time.perf_counter(), _cpu_s()
    n = len(contexts)
    print(
        f"{size:5s} {info['parameters']:>12,} params {device} {info['dtype']:8s} "
        f"batch {batch_size:5d}: {n:,} origins; model {t1 - t0:7.2f} s wall "
        f"{c1 - c0:7.2f} CPU-s = {n / (t1 - t0):9.1f} origins/s; rows {t2 - t1:6.2f} s wall "
        f"{c2 - c1:6.2f} CPU-s; together {n / (t2 - t0):9.1f} origins/s, "
        f"{n / max(c2 - c0, 1e-9):8.1f} origins per CPU-s, {table.num_rows:,} rows; "
        f"load {os.getloadavg()[0]:.2f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
