"""Forma throughput against the arithmetic it does: training and forecast origins per
second (wall and per CPU-second), FLOPs per origin from the batch shapes, the share of
the machine's measured matmul rate that reaches, the padding share, and a profile.

    .venv/bin/python bench/forma.py --threads 1                       # CPU, small + paper
    .venv/bin/python bench/forma.py --presets small --windows data/forma_windows --profile
    .venv/bin/python bench/forma.py --presets paper --device cuda --bf16 --compile \\
        --workers 12 --train-batches 60 --origins 4096

Windows are synthetic but shaped like the real panel (the paper's batching appendix:
about 758 observed historical tuples and 1,124 realized future targets per origin) unless
`--windows` names a folder of `proforma forma export` (then its train windows). The
machine's limit is a dense fp32 (bf16 with --bf16 on a GPU) matrix product of the
model's width class, timed here; attention on a CPU is bound by its softmax, so the
exp count is printed beside the FLOPs. Prints lines; nothing here is a test.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proforma.contracts.panel import TUPLE_WINDOW_SCHEMA
from proforma.models.forma.batching import Batch, WindowStore, bucketed_order, default_account_map
from proforma.models.forma.masking import Identities
from proforma.models.forma.network import Forma, count_parameters
from proforma.models.forma.predict import predict
from proforma.models.forma.presets import FormaConfig, preset
from proforma.models.forma.train import EpochBatches, build_model, train_step


def synthetic_windows(n: int, seed: int = 0, split: str = "train") -> pa.RecordBatch:
    """Origins with 20..78 items each, 5% holes in history, 15% in the future, some exits."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {k: [] for k in TUPLE_WINDOW_SCHEMA.names}
    for o in range(n):
        n_items = int(rng.integers(20, 79))
        items = np.sort(rng.choice(np.arange(1, 79), n_items, replace=False))
        exit_q = 21 if rng.random() < 0.8 else int(rng.integers(1, 21))
        q = np.repeat(np.arange(-11, 21), n_items)
        it = np.tile(items, 32)
        keep = np.where(
            q <= 0, rng.random(len(q)) > 0.05, (rng.random(len(q)) > 0.15) & (q < exit_q)
        )
        keep |= q == 0
        q, it = q[keep], it[keep]
        q = np.concatenate((q, [0]))
        it = np.concatenate((it, [0]))
        rows["firm_id"].append(o + 1)
        rows["origin_q"].append(7800 + o % 150)
        rows["split"].append(split)
        rows["ff48"].append(int(rng.integers(1, 50)))
        rows["rel_q"].append(q.astype(np.int8))
        rows["item_id"].append(it.astype(np.int16))
        rows["x"].append(rng.normal(size=len(q)).astype(np.float32))
    return pa.RecordBatch.from_pydict(rows, schema=TUPLE_WINDOW_SCHEMA)


def identities() -> Identities:
    import csv

    root = Path(__file__).resolve().parents[1] / "reference"
    with open(root / "items.csv") as f:
        items = [r["item"] for r in csv.DictReader(f)]
    with open(root / "identities.csv") as f:
        rows = list(csv.DictReader(f))
    return Identities.from_arrays(
        [r["identity"] for r in rows], [items.index(r["item"]) + 1 for r in rows]
    )


def from_windows(folder: Path, n: int, split: str = "train") -> WindowStore:
    with pa.memory_map(str(folder / f"windows_{split}.arrow")) as src:
        store = WindowStore.from_batches(pa.ipc.open_file(src).read_all().to_batches())
    pick = np.random.default_rng(0).choice(len(store), min(n, len(store)), replace=False)
    return store.take(np.sort(pick))


# -- arithmetic -------------------------------------------------------------------------
def forward_cost(
    cfg: FormaConfig, batch: Batch, readout_only: bool = False
) -> tuple[float, float, float]:
    """(FLOPs executed, FLOPs on real tokens, softmax exps executed) of one forward pass,
    counted from the shapes: projections 2*n*d*d each (q, k, v, out), attention 4*n_q*n_k*d,
    feed-forward 4*n*d*ff, the two heads 2 * (2*n*2d*2d + 2*n*2d); multiply-adds count 2."""
    d, ff, L = cfg.d_model, cfg.d_ff, cfg.n_layers
    pad = batch.pad.numpy()
    b, t = pad.shape
    if cfg.query_attention == "context":
        query = batch.query.numpy()
        real_c = (~pad & ~query).sum(1) + 1
        real_q = query.sum(1)
        pad_c, pad_q = np.full(b, real_c.max()), np.full(b, max(real_q.max(), 1))
    else:
        real_c, real_q = (~pad).sum(1) + 1, np.zeros(b, int)
        pad_c, pad_q = np.full(b, t + 1), np.zeros(b, int)
    slots = batch.slot.numpy().sum(1)
    out = []
    for nc, nq, q in ((pad_c, pad_q, np.full(b, max(slots.max(), 1))), (real_c, real_q, slots)):
        n = nc + nq
        layer = 2 * n * d * d * 2 + 2 * nc * d * d * 2 + 4 * n * nc * d + 4 * n * d * ff
        total = L * layer
        if readout_only:  # the slot path: last layer and heads on the query slots only
            total = (
                (L - 1) * layer
                + 2 * q * d * d * 2
                + 2 * nc * d * d * 2
                + 4 * q * nc * d
                + 4 * q * d * ff
            )
            n = q
        total = total + 2 * (2 * n * 4 * d * d + 2 * n * 2 * d)
        out.append(float(total.sum()))
    exps = float((cfg.n_heads * L * (pad_c + pad_q) * pad_c).sum())
    return out[0], out[1], exps


def matmul_rate(
    device: torch.device, dtype: torch.dtype, size: int = 1024, reps: int = 20
) -> float:
    """Measured FLOP/s of a square matrix product (the machine's practical ceiling). On a
    CPU it is per CPU-second: on a shared machine wall time counts other jobs' turns,
    CPU time only this process's, so the ceiling and the model's rate compare alike."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    c = torch.randn(size, size, device=device, dtype=dtype)
    for _ in range(3):
        a @ c
    sync(device)
    clock = time.process_time if device.type == "cpu" else time.perf_counter
    t0 = clock()
    for _ in range(reps):
        a @ c
    sync(device)
    return 2 * size**3 * reps / (clock() - t0)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _rate(flops: float, wall: float, cpu: float, peak: float, device: torch.device) -> dict:
    """Achieved FLOP rate and its share of the matmul ceiling: per CPU-second on a CPU
    (matmul_rate is too), per second on a GPU."""
    seconds = cpu if device.type == "cpu" else wall
    unit = "gflop_per_cpu_s" if device.type == "cpu" else "achieved_gflop_s"
    return {
        unit: round(flops / seconds / 1e9, 1),
        "share_of_peak": round(flops / seconds / peak, 3),
    }


# -- measurements -----------------------------------------------------------------------
def bench_training(
    cfg: FormaConfig, store: WindowStore, ids: Identities, args, device: torch.device, peak: float
) -> tuple[dict, Forma]:
    torch.manual_seed(0)
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    model = build_model(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    net = torch.compile(model, dynamic=True) if cfg.compile else model
    amap = default_account_map(cfg.n_accounts)
    rng = np.random.default_rng(0)
    horizon = args.horizon
    cap = cfg.train_queries if cfg.query_attention == "context" else 0
    sizes = store.size_estimates(horizon, None, cfg.lookback, cap)
    order = bucketed_order(sizes, cfg.batch_size, rng, cfg.bucket_chunk)
    random_order = np.array_split(rng.permutation(len(sizes)), max(1, len(sizes) // cfg.batch_size))
    padding = {}
    for label, o in (("bucketed", order), ("random", random_order)):
        slots = sum(len(b) * (sizes[b].max() + 1) for b in o)
        padding[label] = 1 - (sizes.sum() + len(sizes)) / slots
    n_batches = min(len(order), args.train_batches + args.warmup_batches)
    plan = EpochBatches(
        store,
        order[:n_batches],
        np.arange(n_batches),
        horizon,
        amap,
        ids,
        cfg,
        {"train": 10**9},
        seed=0,
        epoch=0,
    )
    # data preparation alone (what one process spends building sets and masks)
    prep0 = time.process_time()
    built = [plan[k] for k in range(min(n_batches, 8))]
    prep_cpu = (time.process_time() - prep0) / sum(len(b.firm_id) for b in built)
    model.train()
    done = flops = flops_real = exps = 0.0
    t0: float | None = None
    c0: float | None = None
    for k, batch in enumerate(plan.iterate(args.workers, pin_memory=device.type == "cuda")):
        if k == args.warmup_batches:  # the first batches warm up (and compile)
            sync(device)
            t0, c0 = time.perf_counter(), time.process_time()
        train_step(net, model, opt, batch, cfg, device)
        if k >= args.warmup_batches:
            done += len(batch.firm_id)
            f, fr, e = forward_cost(cfg, batch)
            flops, flops_real, exps = flops + 3 * f, flops_real + 3 * fr, exps + 3 * e
    sync(device)
    if t0 is None or c0 is None:
        raise SystemExit("--train-batches must exceed --warmup-batches")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "phase": "train",
        "preset": cfg.name,
        "device": str(device),
        "bf16": cfg.bf16,
        "compile": cfg.compile,
        "workers": args.workers,
        "batch": cfg.batch_size,
        "horizon": horizon,
        "origins": int(done),
        "origins_per_s": round(done / wall, 1),
        "origins_per_cpu_s": round(done / cpu, 2),
        "prep_cpu_ms_per_origin": round(1000 * prep_cpu, 2),
        "gflop_per_origin": round(flops / done / 1e9, 3),
        "gflop_per_origin_real_tokens": round(flops_real / done / 1e9, 3),
        "mexp_per_origin": round(exps / done / 1e6, 1),
        **_rate(flops, wall, cpu, peak, device),
        "matmul_peak_gflop_s": round(peak / 1e9, 1),
        "padding_bucketed": round(padding["bucketed"], 3),
        "padding_random": round(padding["random"], 3),
        "parameters": count_parameters(model),
    }, model


def bench_inference(
    cfg: FormaConfig, model, store: WindowStore, args, device: torch.device, peak: float
) -> dict:
    from proforma.models.forma.batching import build_example, collate, sequential_order

    n_inf = min(len(store), args.infer_origins)
    sub = store.take(np.arange(n_inf))
    list(
        predict(
            [model], sub.take(np.arange(min(8, n_inf))), batch_size=args.infer_batch, device=device
        )
    )
    sync(device)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    rows = sum(
        b.num_rows
        for b in predict([model], sub, batch_size=args.infer_batch, device=device, bf16=cfg.bf16)
    )
    sync(device)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    flops = 0.0
    amap = default_account_map(cfg.n_accounts)
    sizes = sub.size_estimates(20, None, cfg.lookback)
    for idx in sequential_order(sizes, args.infer_batch):
        batch = collate([build_example(sub, int(i), 20, lookback=cfg.lookback) for i in idx], amap)
        flops += forward_cost(cfg, batch, readout_only=True)[0]
    return {
        "phase": "forecast",
        "preset": cfg.name,
        "device": str(device),
        "origins": n_inf,
        "batch": args.infer_batch,
        "origins_per_s": round(n_inf / wall, 1),
        "origins_per_cpu_s": round(n_inf / cpu, 2),
        "forecast_rows": rows,
        "gflop_per_origin": round(flops / n_inf / 1e9, 3),
        **_rate(flops, wall, cpu, peak, device),
        "peak_rss_gb": round(rss1 / 2**20, 2),
        "rss_growth_gb": round((rss1 - rss0) / 2**20, 2),
    }


def profile_training(
    cfg: FormaConfig, store: WindowStore, ids: Identities, args, device: torch.device
) -> dict:
    """Where one process's training time goes, from torch.profiler's per-op self times:
    attention kernels, matrix products, the optimizer, other tensor ops, and what is left
    (batch building, masks, Python) measured as wall time outside any op."""
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = build_model(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    amap = default_account_map(cfg.n_accounts)
    rng = np.random.default_rng(1)
    cap = cfg.train_queries if cfg.query_attention == "context" else 0
    order = bucketed_order(
        store.size_estimates(args.horizon, None, cfg.lookback, cap),
        cfg.batch_size,
        rng,
        cfg.bucket_chunk,
    )[: args.profile_batches]
    plan = EpochBatches(
        store,
        order,
        np.arange(len(order)),
        args.horizon,
        amap,
        ids,
        cfg,
        {"train": 10**9},
        seed=0,
        epoch=0,
    )
    train_step(model, model, opt, plan[0], cfg, device)  # warm-up
    groups = {"attention": 0.0, "matmul": 0.0, "optimizer": 0.0, "other ops": 0.0}
    t0 = time.perf_counter()
    prep = 0.0
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for k in range(len(plan)):
            p0 = time.perf_counter()
            batch = plan[k]
            prep += time.perf_counter() - p0
            train_step(model, model, opt, batch, cfg, device)
    wall = time.perf_counter() - t0
    for ev in prof.key_averages():
        name, us = ev.key.lower(), ev.self_cpu_time_total / 1e6
        if "attention" in name or "softmax" in name:
            groups["attention"] += us
        elif any(k in name for k in ("addmm", "aten::mm", "bmm", "matmul", "linear")):
            groups["matmul"] += us
        elif any(k in name for k in ("adam", "_foreach", "clip_grad", "optimizer")):
            groups["optimizer"] += us
        else:
            groups["other ops"] += us
    ops = sum(groups.values())
    groups["batch building (data)"] = prep
    groups["python and the rest"] = max(0.0, wall - ops - prep)
    return {
        "phase": "profile",
        "preset": cfg.name,
        "batches": len(plan),
        "wall_s": round(wall, 2),
        **{k: round(v / wall, 3) for k, v in groups.items()},
    }


def parse_overrides(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, _, raw = item.partition("=")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--presets", default="small,paper")
    ap.add_argument(
        "--set", nargs="*", default=[], metavar="FIELD=VALUE", help="preset overrides (JSON values)"
    )
    ap.add_argument("--origins", type=int, default=512, help="origins in the pool")
    ap.add_argument("--windows", type=Path, default=None, help="folder of `proforma forma export`")
    ap.add_argument(
        "--horizon", type=int, default=20, help="curriculum horizon of the timed batches"
    )
    ap.add_argument("--train-batches", type=int, default=6)
    ap.add_argument("--warmup-batches", type=int, default=1)
    ap.add_argument("--infer-origins", type=int, default=256)
    ap.add_argument("--infer-batch", type=int, default=64)
    ap.add_argument(
        "--batch", type=int, default=0, help="training sets per batch (0 = the preset's)"
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--workers", type=int, default=0, help="DataLoader processes building batches")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    ap.add_argument("--profile", action="store_true", help="also print where training time goes")
    ap.add_argument("--profile-batches", type=int, default=8)
    ap.add_argument("--no-inference", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    t0 = time.perf_counter()
    store = (
        from_windows(args.windows, args.origins)
        if args.windows
        else WindowStore.from_batches([synthetic_windows(args.origins)])
    )
    n_tok = np.diff(store.offsets)
    print(
        json.dumps(
            {
                "pool": len(store),
                "tuples_per_origin": round(float(n_tok.mean()), 1),
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "loadavg": Path("/proc/loadavg").read_text().split()[:3],
                "built_s": round(time.perf_counter() - t0, 1),
            }
        ),
        flush=True,
    )
    ids = identities()
    overrides = parse_overrides(args.set)
    peak = matmul_rate(
        device, torch.bfloat16 if args.bf16 and device.type == "cuda" else torch.float32
    )
    for name in args.presets.split(","):
        cfg = preset(name.strip(), bf16=args.bf16, compile=args.compile, **overrides)
        if args.batch:
            cfg = cfg.replace(batch_size=args.batch)
        row, model = bench_training(cfg, store, ids, args, device, peak)
        print(json.dumps(row), flush=True)
        if not args.no_inference:
            print(json.dumps(bench_inference(cfg, model, store, args, device, peak)), flush=True)
        if args.profile and device.type == "cpu":
            print(json.dumps(profile_training(cfg, store, ids, args, device)), flush=True)


if __name__ == "__main__":
    main()
