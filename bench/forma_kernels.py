"""Which GPU kernels one Forma training step spends its time in, per precision mode: the
top kernels by device time over a few profiled steps of the same batches (after warm-up),
and whether the fused attention kernels accept the step when the math fallback is off.
Prints JSON lines; nothing here is a test.

    python3 bench/forma_kernels.py --windows FOLDER --preset paper --modes fp32,bf16
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from forma import (
    from_windows,
    identities,
    sync,
)

from proforma.models.forma.batching import bucketed_order, default_account_map
from proforma.models.forma.presets import preset
from proforma.models.forma.train import EpochBatches, build_model, train_step


def batches(cfg, store, ids, n: int):
    cap = cfg.train_queries if cfg.query_attention == "context" else 0
    sizes = store.size_estimates(20, None, cfg.lookback, cap)
    order = bucketed_order(sizes, cfg.batch_size, np.random.default_rng(0), cfg.bucket_chunk)
    plan = EpochBatches(
        store,
        order[:n],
        np.arange(n),
        20,
        default_account_map(cfg.n_accounts),
        ids,
        cfg,
        {"train": 10**9},
        seed=0,
        epoch=0,
    )
    return [plan[k] for k in range(n)]


def run_mode(mode: str, name: str, store, ids, device, steps: int, top: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    cfg = preset(name, bf16=mode.startswith("bf16"))
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    torch.manual_seed(0)
    model = build_model(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    data = batches(cfg, store, ids, steps + 3)
    for b in data[:3]:
        train_step(model, model, opt, b, cfg, device)
    sync(device)
    t0 = time.perf_counter()
    for b in data[3:]:
        train_step(model, model, opt, b, cfg, device)
    sync(device)
    wall = time.perf_counter() - t0
    origins = sum(len(b.firm_id) for b in data[3:])
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for b in data[3:]:
            train_step(model, model, opt, b, cfg, device)
        sync(device)
    events = [e for e in prof.key_averages() if e.self_device_time_total > 0]
    total = sum(e.self_device_time_total for e in events)
    events.sort(key=lambda e: -e.self_device_time_total)
    print(
        json.dumps(
            {
                "mode": mode,
                "preset": name,
                "origins_per_s": round(origins / wall, 1),
                "device_ms_per_step": round(total / 1e3 / steps, 2),
                "wall_ms_per_step": round(1e3 * wall / steps, 2),
                "top": [
                    [e.key[:90], round(e.self_device_time_total / total, 3), e.count]
                    for e in events[:top]
                ],
            }
        ),
        flush=True,
    )
    # Would a fused kernel take this step? With the math fallback off, SDPA says why not.
    torch.backends.cuda.enable_math_sdp(False)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            train_step(model, model, opt, data[3], cfg, device)
            sync(device)
        print(
            json.dumps(
                {
                    "mode": mode,
                    "fused_attention": "ok",
                    "warnings": sorted({str(w.message)[:200] for w in caught})[:6],
                }
            )
        )
    except RuntimeError as exc:
        print(
            json.dumps(
                {
                    "mode": mode,
                    "fused_attention": "refused",
                    "why": str(exc)[:300],
                    "warnings": sorted({str(w.message)[:200] for w in caught})[:8],
                }
            )
        )
    finally:
        torch.backends.cuda.enable_math_sdp(True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--windows", type=Path, required=True)
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--modes", default="fp32,bf16")
    ap.add_argument("--origins", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--top", type=int, default=14)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    device = torch.device(args.device)
    store = from_windows(args.windows, args.origins)
    ids = identities()
    for mode in args.modes.split(","):
        run_mode(mode, args.preset, store, ids, device, args.steps, args.top)


if __name__ == "__main__":
    main()
