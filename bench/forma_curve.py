"""Forma's learning curve: test R2 against training origins seen.

    proforma forma export data/forma_windows --splits train,val,test   # once, after `proforma build`
    .venv/bin/python bench/forma_curve.py --windows data/forma_windows --preset small \\
        --budgets 6144,12288,24576,49152,98304 --threads 1
    # or score the copies one `proforma train forma --keep-epochs 1,2,4,8,16` run kept:
    .venv/bin/python bench/forma_curve.py --windows data/forma_windows --threads 1 \\
        --checkpoints data/models/forma/small-gaussian/seed60.epoch*.pt

For each budget (training origins seen, the preset's epochs stretched so every epoch
holds at most one pass) a fresh seed-60 model is trained on the train + val windows and
scored on the test windows: change-space R2 with the truth-only denominator of
docs/scoring.md over every realized test cell (the `full` footprint's cells when every
model covers them), the same on the synthetic oracle's origins (the `oracle` footprint),
R2 by horizon, and the coverage of the central 50/80/90/95% intervals of the model's family. One JSON
line per budget goes to --out. The official numbers come from `proforma predict forma`
and `proforma score`; this script reads the same Arrow windows without the warehouse.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from forma import parse_overrides  # bench/forma.py: KEY=VALUE preset options

from proforma.models.forma.batching import WindowStore
from proforma.models.forma.calibration import holdout, realized_cells
from proforma.models.forma.masking import Identities
from proforma.models.forma.predict import predict
from proforma.models.forma.presets import FormaConfig, preset
from proforma.models.forma.train import fit

HORIZONS = (1, 2, 3, 4, 8, 12, 16, 20)
LEVELS = (0.5, 0.8, 0.9, 0.95)


def read_ipc(path: Path) -> pa.Table:
    with pa.memory_map(str(path)) as src:
        return pa.ipc.open_file(src).read_all()


def load(folder: Path) -> tuple[WindowStore, WindowStore, Identities, set[tuple[int, int]]]:
    train = WindowStore.from_batches(
        b for s in ("train", "val") for b in read_ipc(folder / f"windows_{s}.arrow").to_batches()
    )
    test = WindowStore.from_batches(read_ipc(folder / "windows_test.arrow").to_batches())
    ids = Identities.from_arrow(read_ipc(folder / "identities.arrow"))
    oracle_file = folder / "oracle_origins.arrow"
    oracle: set[tuple[int, int]] = set()
    if oracle_file.exists():
        t = read_ipc(oracle_file)
        oracle = set(zip(t.column("firm_id").to_pylist(), t.column("origin_q").to_pylist()))
    return train, test, ids, oracle


def write_oracle_origins(folder: Path) -> None:
    """The synthetic oracle's test origins as (firm_id, origin_q), read once from the warehouse."""
    from proforma.app.store.warehouse import connect

    with connect(read_only=True) as wh:
        t = wh.arrow(
            "SELECT DISTINCT f.firm_id, o.origin_q FROM raw.oracle_origins o "
            "JOIN panel.firms f USING (gvkey) ORDER BY 1, 2"
        )
    with (
        pa.OSFile(str(folder / "oracle_origins.arrow"), "wb") as f,
        pa.ipc.new_file(f, t.schema) as w,
    ):
        w.write_table(t)


def truth_cells(store: WindowStore) -> dict[str, np.ndarray]:
    """Every realized future cell of the windows (proforma.models.forma.calibration.realized_cells)
    with its key (origin index, item, horizon)."""
    cells = realized_cells(store)
    cells["key"] = (cells["origin"] * 1000 + cells["item"]) * 100 + cells["horizon"]
    return cells


def r2(actual: np.ndarray, baseline: np.ndarray, mu: np.ndarray) -> float:
    y = actual - baseline
    den = (y**2).sum() - y.sum() ** 2 / max(len(y), 1) + 1e-12
    return float(1 - ((mu - actual) ** 2).sum() / den) if den > 1e-15 else float("nan")


def half_width(p: float, family: str) -> float:
    """Half-width, in sigmas, of the central p interval of the family (Laplace: b = sigma / sqrt 2)."""
    from scipy.special import ndtri

    if family == "laplace":
        return float(-np.log1p(-p) / np.sqrt(2.0))
    return float(ndtri(0.5 + p / 2))


def evaluate(
    model,
    test: WindowStore,
    cells: dict[str, np.ndarray],
    oracle_rows: np.ndarray,
    family: str = "gaussian",
    batch_size: int = 16,
) -> dict:
    origin_key = test.firm_id.astype(np.int64) * 100_000 + test.origin_q
    keys, mus, sigmas = [], [], []
    for b in predict([model], test, batch_size=batch_size):
        ok = (
            b.column("firm_id").to_numpy().astype(np.int64) * 100_000
            + b.column("origin_q").to_numpy()
        )
        idx = np.searchsorted(origin_key, ok)
        keys.append(
            (idx * 1000 + b.column("item_id").to_numpy()) * 100 + b.column("horizon").to_numpy()
        )
        mus.append(b.column("mu").to_numpy())
        sigmas.append(b.column("sigma").to_numpy())
    key, mu, sigma = np.concatenate(keys), np.concatenate(mus), np.concatenate(sigmas)
    order = np.argsort(key)
    key, mu, sigma = key[order], mu[order], sigma[order]
    loc = np.minimum(np.searchsorted(key, cells["key"]), len(key) - 1)
    hit = key[loc] == cells["key"]
    a, base, m, s = cells["actual"][hit], cells["baseline"][hit], mu[loc][hit], sigma[loc][hit]
    hz = cells["horizon"][hit]
    out = {"cells": int(hit.sum()), "missed": int((~hit).sum()), "r2": r2(a, base, m)}
    for h in HORIZONS:
        sel = hz == h
        out[f"r2_h{h}"] = r2(a[sel], base[sel], m[sel])
    z = np.abs(a - m) / np.maximum(s, 1e-4)
    for p in LEVELS:
        out[f"cov{round(p * 100)}"] = float((z <= half_width(p, family)).mean())
    sel = np.isin(cells["origin"][hit], oracle_rows)
    if sel.any():
        out["oracle_cells"] = int(sel.sum())
        out["r2_oracle"] = r2(a[sel], base[sel], m[sel])
    return out


def budget_config(name: str, budget: int, n_origins: int, overrides: dict):
    """The preset with its epochs stretched to hold `budget` origins, at most one pass per epoch."""
    cfg = preset(name, **overrides)
    epochs = max(cfg.epochs, math.ceil(budget / n_origins))
    return cfg.replace(epochs=epochs, origins_per_epoch=min(n_origins, budget // epochs))


def loadavg() -> list[str] | None:
    path = Path("/proc/loadavg")
    return path.read_text().split()[:3] if path.exists() else None


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--windows", type=Path, required=True, help="folder of `proforma forma export`")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--budgets", default="6144,12288,24576,49152,98304")
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="FIELD=VALUE",
        help="preset overrides, e.g. lr=0.002 n_heads=2 (JSON values)",
    )
    ap.add_argument(
        "--schedule", default="", help="EPOCHSxORIGINS: one run, scored after --eval-epochs"
    )
    ap.add_argument(
        "--eval-epochs", default="", help="epochs after which --schedule's run is scored"
    )
    ap.add_argument(
        "--checkpoints",
        nargs="*",
        type=Path,
        default=[],
        help="score these checkpoints (train forma --keep-epochs copies) instead of training",
    )
    ap.add_argument("--seed", type=int, default=60)
    ap.add_argument(
        "--eval-origins",
        type=int,
        default=0,
        help="seeded test sample plus the oracle origins (0 = all)",
    )
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--workers", type=int, default=0, help="DataLoader processes building batches")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, default=None, help="append one JSON line per budget")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if not (args.windows / "oracle_origins.arrow").exists():
        write_oracle_origins(args.windows)
    train, test, ids, oracle = load(args.windows)
    if args.eval_origins and args.eval_origins < len(test):
        # a seeded sample, plus every oracle origin (the oracle footprint stays whole)
        pick = np.random.default_rng(0).choice(len(test), args.eval_origins, replace=False)
        is_oracle = [(int(f), int(q)) in oracle for f, q in zip(test.firm_id, test.origin_q)]
        test = test.take(np.union1d(pick, np.flatnonzero(np.array(is_oracle, dtype=bool))))
    cells = truth_cells(test)
    oracle_rows = np.array(
        [i for i in range(len(test)) if (int(test.firm_id[i]), int(test.origin_q[i])) in oracle]
    )
    overrides = parse_overrides(args.set)
    print(
        f"{len(train):,} training origins, {len(test):,} test origins ({len(cells['key']):,} cells, "
        f"{len(oracle_rows)} oracle origins); torch {torch.get_num_threads()} threads; "
        f"overrides {overrides}",
        flush=True,
    )

    def report(
        cfg, history: list[dict], model, train_cpu: float | None, train_wall: float, budget: int
    ) -> None:
        c0, t0 = time.process_time(), time.perf_counter()
        scores = evaluate(model.to(args.device), test, cells, oracle_rows, cfg.family)
        row = {
            "preset": cfg.name,
            "overrides": overrides,
            "budget": budget,
            "origins_seen": int(sum(h["origins"] for h in history)),
            "epochs_run": len(history),
            "epochs": cfg.epochs,
            "origins_per_epoch": cfg.origins_per_epoch,
            "steps": int(sum(h["batches"] for h in history)),
            "final_loss": round(history[-1]["loss"], 4),
            "parameters": sum(p.numel() for p in model.parameters()),
            "train_cpu_s": None if train_cpu is None else round(train_cpu, 1),
            "train_wall_s": round(train_wall, 1),
            "eval_cpu_s": round(time.process_time() - c0, 1),
            "eval_wall_s": round(time.perf_counter() - t0, 1),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "loadavg": loadavg(),
            **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in scores.items()},
        }
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")

    if args.checkpoints:
        from proforma.models.forma.train import load_checkpoint

        for path in sorted(
            args.checkpoints, key=lambda p: torch.load(p, weights_only=False)["epoch"]
        ):
            model, ck = load_checkpoint(path, args.device)
            hist = ck["history"]
            cfg = FormaConfig.from_dict(ck["config"])
            wall = sum(h["seconds"] for h in hist)  # the run's own clock (wall, per epoch)
            report(cfg, hist, model, None, wall, cfg.epochs * (cfg.origins_per_epoch or 0))
        return
    if args.schedule:
        epochs, per_epoch = (int(v) for v in args.schedule.lower().split("x"))
        cfg = preset(args.preset, **overrides).replace(epochs=epochs, origins_per_epoch=per_epoch)
        wanted = {int(e) for e in args.eval_epochs.split(",")} if args.eval_epochs else {epochs}
        history: list[dict] = []
        clock = {"cpu": 0.0, "wall": 0.0, "c0": time.process_time(), "t0": time.perf_counter()}

        def on_epoch(row: dict, model) -> None:
            history.append(row)
            if row["epoch"] in wanted:  # evaluation time is kept out of the training clock
                clock["cpu"] += time.process_time() - clock["c0"]
                clock["wall"] += time.perf_counter() - clock["t0"]
                report(cfg, history, model, clock["cpu"], clock["wall"], epochs * per_epoch)
                clock["c0"], clock["t0"] = time.process_time(), time.perf_counter()

        fit(
            train.take(holdout(train, cfg.calibration_origins)[0]),
            ids,
            cfg,
            seed=args.seed,
            progress=False,
            device=args.device,
            workers=args.workers,
            on_epoch=on_epoch,
        )
        return
    for budget in (int(b) for b in args.budgets.split(",")):
        cfg = budget_config(args.preset, budget, len(train), overrides)
        c0, t0 = time.process_time(), time.perf_counter()
        res = fit(
            # the origins `proforma train forma` holds out for calibration train here neither
            train.take(holdout(train, cfg.calibration_origins)[0]),
            ids,
            cfg,
            seed=args.seed,
            progress=False,
            device=args.device,
            workers=args.workers,
        )
        report(
            cfg, res.history, res.model, time.process_time() - c0, time.perf_counter() - t0, budget
        )


if __name__ == "__main__":
    main()
