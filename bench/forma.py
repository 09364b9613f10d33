"""Forma throughput: training and inference origins per second and padding share.

    .venv/bin/python bench/forma.py                       # CPU, both presets, short runs
    .venv/bin/python bench/forma.py --device cuda --bf16 --compile --origins 4096

Windows are synthetic but shaped like the real panel (PAPER.tex appendix "Batching":
about 758 observed historical tuples and 1,124 realized future targets per origin, i.e.
roughly 63 items reported per quarter, some firms far sparser); `--warehouse` reads the
demo panel's train tuple windows instead (needs the build). Prints one line per
(preset, phase); nothing here is a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models.forma.batching import (
    WindowStore,
    bucketed_order,
    default_account_map,
    iter_batches,
)
from models.forma.losses import masked_loss
from models.forma.masking import Identities
from models.forma.network import count_parameters
from models.forma.predict import predict
from models.forma.presets import preset
from models.forma.train import build_model

SCHEMA = pa.schema([
    ("firm_id", pa.int32()), ("origin_q", pa.int32()), ("split", pa.string()),
    ("ff48", pa.int16()), ("rel_q", pa.list_(pa.int8())), ("item_id", pa.list_(pa.int16())),
    ("x", pa.list_(pa.float32())),
])


def synthetic_windows(n: int, seed: int = 0, split: str = "train") -> pa.RecordBatch:
    """Origins with 20..78 items each, 5% holes in history, 15% in the future, some exits."""
    rng = np.random.default_rng(seed)
    rows = {k: [] for k in SCHEMA.names}
    for o in range(n):
        n_items = int(rng.integers(20, 79))
        items = np.sort(rng.choice(np.arange(1, 79), n_items, replace=False))
        exit_q = 21 if rng.random() < 0.8 else int(rng.integers(1, 21))
        q = np.repeat(np.arange(-11, 21), n_items)
        it = np.tile(items, 32)
        keep = np.where(q <= 0, rng.random(len(q)) > 0.05, (rng.random(len(q)) > 0.15) & (q < exit_q))
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
    return pa.RecordBatch.from_pydict(rows, schema=SCHEMA)


def identities() -> Identities:
    import csv

    root = Path(__file__).resolve().parents[1] / "reference"
    with open(root / "items.csv") as f:
        items = [r["item"] for r in csv.DictReader(f)]
    with open(root / "identities.csv") as f:
        rows = list(csv.DictReader(f))
    return Identities.from_arrays([r["identity"] for r in rows],
                                  [items.index(r["item"]) + 1 for r in rows])


def from_warehouse(n: int) -> WindowStore:
    from app import views
    from app.warehouse import connect

    with connect(read_only=True) as wh:
        store = WindowStore.from_batches(views.tuple_windows(wh, "train", 1024, future=True))
    return store.take(np.arange(min(n, len(store))))


def bench(name: str, store: WindowStore, args, ids: Identities) -> None:
    cfg = preset(name, bf16=args.bf16, compile=args.compile)
    batch = args.batch or (min(cfg.batch_size, 8) if args.device == "cpu" else cfg.batch_size)
    cfg = cfg.replace(batch_size=batch)
    device = torch.device(args.device)
    torch.manual_seed(0)
    torch.set_float32_matmul_precision(cfg.matmul_precision)
    model = build_model(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    net = torch.compile(model, dynamic=True) if cfg.compile else model
    amap = default_account_map(cfg.n_accounts)
    rng = np.random.default_rng(0)
    horizon = 20
    sizes = store.size_estimates(horizon, None, cfg.lookback)
    for bucket in (True, False):
        order = (bucketed_order(sizes, cfg.batch_size, rng, cfg.bucket_chunk) if bucket else
                 [np.asarray(b) for b in np.array_split(rng.permutation(len(sizes)),
                                                       max(1, len(sizes) // cfg.batch_size))])
        slots = sum(len(b) * (sizes[b].max() + 1) for b in order)
        share = 1 - (sizes.sum() + len(sizes)) / slots
        print(f"{name:6s} padding share at H=20 ({'bucketed' if bucket else 'random  '}): {share:.1%}")
    order = bucketed_order(sizes, cfg.batch_size, rng, cfg.bucket_chunk)[: args.train_batches + 1]
    model.train()
    done, t0 = 0, None
    for k, batch in enumerate(iter_batches(store, order, horizon, amap, rng=rng, identities=ids, cfg=cfg,
                                           lookback=cfg.lookback)):
        if k == 1:  # the first batch warms up (and compiles)
            if device.type == "cuda":
                torch.cuda.synchronize()
            t0, c0 = time.perf_counter(), time.process_time()
        ctx = (torch.autocast("cuda", dtype=torch.bfloat16) if cfg.bf16 and device.type == "cuda"
               else torch.autocast("cpu", enabled=False))
        with ctx:
            mu, lv = net(*batch.inputs(device))
        loss, _ = masked_loss(cfg.family, batch.target.to(device), mu, lv, batch.loss_mask.to(device))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        opt.step()
        if k >= 1:
            done += len(batch.firm_id)
    if device.type == "cuda":
        torch.cuda.synchronize()
    train_s, train_c = time.perf_counter() - t0, time.process_time() - c0
    print(f"{name:6s} train : {done / train_s:8.1f} origins/s wall, {done / train_c:6.1f} per CPU-s "
          f"({done} origins, batch {cfg.batch_size}, "
          f"{count_parameters(model):,} params, {args.device}{' bf16' if cfg.bf16 else ''}"
          f"{' compiled' if cfg.compile else ''})")
    n_inf = min(len(store), args.infer_origins)
    sub = store.take(np.arange(n_inf))
    list(predict([model], sub.take(np.arange(min(8, n_inf))), batch_size=args.infer_batch, device=device))
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0, c0 = time.perf_counter(), time.process_time()
    rows = sum(b.num_rows for b in predict([model], sub, batch_size=args.infer_batch, device=device,
                                            bf16=cfg.bf16))
    if device.type == "cuda":
        torch.cuda.synchronize()
    inf_s, inf_c = time.perf_counter() - t0, time.process_time() - c0
    print(f"{name:6s} infer : {n_inf / inf_s:8.1f} origins/s wall, {n_inf / inf_c:6.1f} per CPU-s "
          f"({n_inf} origins, batch {args.infer_batch}, "
          f"{rows:,} forecast rows)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="small,paper")
    ap.add_argument("--origins", type=int, default=512, help="synthetic origins in the pool")
    ap.add_argument("--train-batches", type=int, default=6)
    ap.add_argument("--infer-origins", type=int, default=256)
    ap.add_argument("--infer-batch", type=int, default=64)
    ap.add_argument("--batch", type=int, default=0,
                    help="training sets per batch (0 = the preset's; on CPU at most 8, since the "
                         "unfused attention path with dropout holds B x heads x T x T weights)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    ap.add_argument("--warehouse", action="store_true", help="use the built panel's train windows")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    store = from_warehouse(args.origins) if args.warehouse else WindowStore.from_batches(
        [synthetic_windows(args.origins)])
    n_tok = np.diff(store.offsets)
    print(f"pool: {len(store)} origins, {n_tok.mean():.0f} tuples/origin on average "
          f"(history {np.mean([(store.window(i)[0] <= 0).sum() for i in range(len(store))]):.0f}), "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads, built in {time.perf_counter() - t0:.1f}s")
    ids = identities()
    for name in args.presets.split(","):
        bench(name.strip(), store, args, ids)


if __name__ == "__main__":
    main()
