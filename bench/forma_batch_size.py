"""Benchmark: Forma's CPU forecasts per batch size, alone and with a second process beside
it (issue 48). Prints ms per origin for each batch size and the largest difference of mu
and sigma from the batch size the GPU uses (64); nothing here is a test.

    .venv/bin/python bench/forma_batch_size.py --workdir /tmp/demo24 [--origins 256]
        [--sizes 64,32,16,8,4,2] [--pair]

--workdir is a finished demo (bench/demo_stages.py): its warehouse and the installed
`mid` checkpoint. Each process runs one PyTorch thread, as the demo's forecast processes
do; --pair runs two such processes side by side on the same origins (the demo's
`--jobs 2`), which is what the demo's 2 cores see.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proforma.app.store.settings import paths_under


def _measure(work: str, n: int, sizes: list[int], seed: int, out: mp.Queue) -> None:
    os.environ.update(paths_under(Path(work)))
    import numpy as np
    import pyarrow as pa
    import torch

    from proforma.app.flows import forma as flows
    from proforma.models.forma.predict import predict

    torch.set_num_threads(1)
    wh = flows.read_only()
    store = flows.load_store(wh, ["test"], future=False)
    wh.close()
    pick = np.sort(np.random.default_rng(seed).choice(len(store), n, replace=False))
    sample = store.take(pick)
    models, _ = flows.load_models("mid", "gaussian", [60], "cpu")

    def forecast(size: int) -> tuple[float, np.ndarray, np.ndarray]:
        started = time.perf_counter()
        table = pa.Table.from_batches(list(predict(models, sample, batch_size=size)))
        seconds = time.perf_counter() - started
        table = table.sort_by(
            [(c, "ascending") for c in ("firm_id", "origin_q", "item_id", "horizon")]
        )
        return seconds, table.column("mu").to_numpy(), table.column("sigma").to_numpy()

    forecast(sizes[0])  # warm-up: first-call allocations and kernel selection
    _, mu64, sigma64 = forecast(64)
    for size in sizes:
        seconds, mu, sigma = forecast(size)
        out.put(
            {
                "batch_size": size,
                "ms_per_origin": round(1000 * seconds / n, 1),
                "max_mu_diff_vs_64": float(np.abs(mu - mu64).max()),
                "max_sigma_diff_vs_64": float(np.abs(sigma - sigma64).max()),
                "process": seed,
            }
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--origins", type=int, default=256)
    ap.add_argument("--sizes", default="64,32,16,8,4,2")
    ap.add_argument("--pair", action="store_true", help="two processes side by side")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with open("/proc/loadavg") as fh:
        print(f"load before: {' '.join(fh.read().split()[:3])}; cores: {os.cpu_count()}")
    ctx = mp.get_context("spawn")
    queue: mp.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=_measure, args=(str(args.workdir), args.origins, sizes, seed, queue))
        for seed in range(2 if args.pair else 1)
    ]
    for proc in procs:
        proc.start()
    for _ in range(len(procs) * len(sizes)):
        print(json.dumps(queue.get()), flush=True)
    for proc in procs:
        proc.join()


if __name__ == "__main__":
    main()
