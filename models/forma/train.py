"""Training: horizon curriculum, AdamW, clipping, per-epoch checkpoints, resume, DDP.

`fit(store, identities, cfg, seed=..., checkpoint=...)` trains one seed on a WindowStore
(the CLI fills it from train + val tuple windows; each origin once). Randomness is
derived from (seed, epoch) at the start of every epoch, so a run resumed from a
checkpoint continues exactly as the uninterrupted run would, and two runs with the same
seed, data and thread count give the same weights. Final-epoch weights are the model.

Several GPUs: `torchrun --nproc_per_node=N -m proforma.models.forma.train --windows w.arrow
--identities ids.arrow --out seed60.pt` (files from `proforma forma export`); each rank
takes every N-th batch of the same seeded epoch plan and DDP averages the gradients.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from proforma.contracts.errors import UserError
from proforma.models.forma.averaging import WeightAverage, with_shadow
from proforma.models.forma.batching import (
    SPLIT_LAST_Q,
    WindowStore,
    bucketed_order,
    default_account_map,
    iter_batches,
)
from proforma.models.forma.losses import masked_loss
from proforma.models.forma.masking import Identities
from proforma.models.forma.network import Forma, count_parameters
from proforma.models.forma.presets import FormaConfig, curriculum, preset
from proforma.models.numerics import float32_matmul, numerics_record

CHECKPOINT_FORMAT = "forma-checkpoint-v1"


@dataclass
class FitResult:
    checkpoint: Path | None
    seed: int
    epochs_run: int
    history: list[dict] = field(default_factory=list)
    parameters: int = 0
    model: nn.Module | None = field(default=None, repr=False)  # the trained (final-epoch) network

    @property
    def final_loss(self) -> float:
        return self.history[-1]["loss"] if self.history else float("nan")


def build_model(cfg: FormaConfig) -> Forma:
    return Forma(
        cfg.n_accounts,
        cfg.n_industries,
        cfg.d_model,
        cfg.n_layers,
        cfg.n_heads,
        cfg.d_ff,
        cfg.dropout,
        cfg.lookback,
        query_attention=cfg.query_attention,
        anchor=cfg.anchor,
        seasonal=cfg.seasonal,
        year_ago=cfg.year_ago,
        matmul_precision=cfg.matmul_precision,
    )


def industry_map(cfg: FormaConfig) -> dict[int, int]:
    """ff48 code (1..48, 49 = Unknown) -> industry embedding row."""
    return {c: c - 1 for c in range(1, cfg.n_industries + 1)}


def planned_steps(cfg: FormaConfig, n_origins: int, world: int = 1) -> int:
    """Optimizer steps of a whole run (bucketed_order's batch count per epoch, per rank)."""
    n = min(cfg.origins_per_epoch or n_origins, n_origins)
    chunk = cfg.batch_size * max(1, cfg.bucket_chunk)
    per_epoch = (n // chunk) * (chunk // cfg.batch_size) + -(-(n % chunk) // cfg.batch_size)
    if world > 1:
        per_epoch //= world
    return per_epoch * cfg.epochs


def learning_rate(cfg: FormaConfig, step: int, total_steps: int) -> float:
    """Learning rate of optimizer step `step` (0-based): linear warm-up over
    `warmup_steps`, then constant or (lr_schedule "cosine") a cosine decay to
    `lr_min_ratio` x lr at the last planned step."""
    lr = cfg.lr * (min(1.0, (step + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0)
    if cfg.lr_schedule == "cosine":
        span = max(1, total_steps - 1 - cfg.warmup_steps)
        t = min(1.0, max(0, step - cfg.warmup_steps) / span)
        lr *= cfg.lr_min_ratio + (1 - cfg.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * t))
    return lr


def _query_cap(cfg: FormaConfig) -> int:
    return cfg.train_queries if cfg.query_attention == "context" else 0


def global_tokens(loss_mask: torch.Tensor, world: int) -> torch.Tensor:
    """The loss's denominator: eligible tokens of the whole global batch. Under DDP the
    ranks' counts are summed (one all-reduce) and divided by the world size, because DDP
    averages the ranks' gradients: sum_r grad(S_r / (N / world)) / world = grad(sum_r S_r) / N,
    so every token of the global batch weighs 1/N whichever rank holds it."""
    n = loss_mask.sum().to(torch.float32)
    if world > 1:
        torch.distributed.all_reduce(n)
        n = n / world
    return n.clamp(min=1)


def train_step(
    net: Callable[..., tuple[torch.Tensor, torch.Tensor]],
    model: nn.Module,
    opt: torch.optim.Optimizer,
    batch,
    cfg: FormaConfig,
    device: torch.device,
    world: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One optimizer step on one batch (this rank's share of the global batch under DDP,
    `net` wrapping `model`). The loss is token-weighted over the global batch
    (global_tokens). Returns this rank's summed loss and its token count, on the device."""
    with _autocast(cfg, device):
        mu, logvar = net(*batch.inputs(device))
    loss_mask = batch.loss_mask.to(device, non_blocking=True)
    denom = global_tokens(loss_mask, world)
    loss, n = masked_loss(
        cfg.family,
        batch.target.to(device, non_blocking=True),
        mu,
        logvar,
        loss_mask,
        cfg.beta,
        tokens=denom,
    )
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
    opt.step()
    return loss.detach() * denom, n


class EpochBatches(torch.utils.data.Dataset):
    """One epoch's batches: batch k holds the origins order[k], masked with a generator
    seeded by (seed, epoch, global batch number), so the batches are the same whether
    they are built here or in DataLoader worker processes, in any order."""

    def __init__(
        self,
        store: WindowStore,
        order: list[np.ndarray],
        keys: np.ndarray,
        horizon: int,
        account_map: np.ndarray,
        identities: Identities,
        cfg: FormaConfig,
        last_q: dict[str, int],
        seed: int,
        epoch: int,
    ):
        self.store, self.order, self.keys, self.horizon = store, order, keys, horizon
        self.account_map, self.identities, self.cfg, self.last_q = (
            account_map,
            identities,
            cfg,
            last_q,
        )
        self.seed, self.epoch = seed, epoch

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, k: int):
        rng = np.random.default_rng([self.seed, self.epoch, 1, int(self.keys[k])])
        return next(
            iter_batches(
                self.store,
                [self.order[k]],
                self.horizon,
                self.account_map,
                rng=rng,
                identities=self.identities,
                cfg=self.cfg,
                last_q=self.last_q,
                lookback=self.cfg.lookback,
            )
        )

    def iterate(self, workers: int = 0, pin_memory: bool = False):
        if workers <= 0:
            return (self[k] for k in range(len(self)))
        loader = torch.utils.data.DataLoader(
            self,
            batch_size=None,
            shuffle=False,
            num_workers=workers,
            prefetch_factor=4,
            pin_memory=pin_memory,
            persistent_workers=False,
        )
        return iter(loader)


def _dist() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def save_checkpoint(path: Path, payload: dict) -> None:
    """Atomic write (temp file, then rename) so an interrupted save never corrupts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path | str, device: str | torch.device = "cpu") -> tuple[Forma, dict]:
    """(model with the checkpoint's weights, in eval mode; the checkpoint dict)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"No Forma checkpoint at {path}. Train first: `proforma train forma`.")
    ckpt = torch.load(path, map_location=device, weights_only=False)
    if not isinstance(ckpt, dict) or ckpt.get("format") != CHECKPOINT_FORMAT:
        raise UserError(f"{path} is not a Forma checkpoint")
    cfg = FormaConfig.from_dict(ckpt["config"])
    model = build_model(cfg)
    model.load_state_dict(inference_weights(ckpt))
    model.to(device).eval()
    return model, ckpt


def inference_weights(ckpt: dict) -> dict:
    """The weights a forecast uses: the moving average when the run kept one (`ema`),
    else the last optimizer step's (`state_dict`, which resuming always continues from)."""
    if ckpt.get("ema"):
        return with_shadow(ckpt["state_dict"], ckpt["ema"]["shadow"])
    return ckpt["state_dict"]


def _averaged(model: nn.Module, ema: WeightAverage | None) -> nn.Module:
    """`model` itself, or a copy holding the moving average of its weights."""
    if ema is None:
        return model
    out = copy.deepcopy(model)
    out.load_state_dict(ema.weights(model))
    return out


def _autocast(cfg: FormaConfig, device: torch.device):
    """bf16 autocast when the config asks for it (meant for GPUs; CPU autocast works too,
    which the tests use, but is slower than fp32 on CPUs without bf16 matrix units)."""
    if cfg.bf16:
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def fit(
    store: WindowStore,
    identities: Identities,
    cfg: FormaConfig,
    *,
    seed: int = 60,
    checkpoint: Path | str | None = None,
    resume: bool = False,
    device: str | torch.device = "cpu",
    progress: bool = True,
    last_q: dict[str, int] | None = None,
    max_batches: int | None = None,
    log: Callable[[str], None] | None = None,
    trace: list | None = None,
    workers: int = 0,
    extra: dict | None = None,
    on_epoch: Callable[[dict, nn.Module], None] | None = None,
) -> FitResult:
    """Train one seed; returns the per-epoch history. Writes `checkpoint` after every epoch.
    `trace`, when given, receives (epoch, firm_ids, origin_qs) of every batch this rank trains.
    `workers` > 0 builds batches in that many DataLoader processes (a GPU outruns one
    Python thread building sets); the batches and their masks are the same either way.
    `extra` entries are stored in the checkpoint beside the weights (e.g. the panel's
    signature). `on_epoch(history_row, model)` runs after every epoch (learning curves)."""
    from proforma.models.progress import progress_bar

    if len(store) == 0:
        raise UserError("No training origins: the tuple windows are empty. Run `proforma build`.")
    max_item = int(store.item_id.max()) if len(store.item_id) else 0
    if max_item >= cfg.n_accounts:
        raise UserError(
            f"item_id {max_item} does not fit the {cfg.n_accounts}-row account table of preset "
            f"{cfg.name!r}"
        )
    device = torch.device(device)
    rank, world = _dist()
    torch.manual_seed(seed)
    model = build_model(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    ema = WeightAverage(model, cfg.ema_decay) if cfg.ema_decay else None
    account_map = default_account_map(cfg.n_accounts)
    history: list[dict] = []
    start = 0
    ckpt_path = Path(checkpoint) if checkpoint else None
    if resume and ckpt_path and ckpt_path.exists():
        _, ck = load_checkpoint(ckpt_path)
        if FormaConfig.from_dict(ck["config"]) != cfg or ck["seed"] != seed:
            raise UserError(f"{ckpt_path} was trained with another configuration or seed")
        model.load_state_dict(ck["state_dict"])
        if "optimizer" in ck:  # shipped checkpoints keep only what inference needs
            opt.load_state_dict(ck["optimizer"])
        if ema is not None and ck.get("ema"):
            ema.load_state_dict(ck["ema"])
        start, history = int(ck["epoch"]), list(ck["history"])
    net: nn.Module = model
    if world > 1:
        net = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    # dynamic shapes: bucketed batches vary in set length, avoid one recompile per length
    step_fn: Callable[..., tuple[torch.Tensor, torch.Tensor]] = (
        torch.compile(net, dynamic=True) if cfg.compile else net
    )
    schedule = curriculum(cfg)
    total_steps = planned_steps(cfg, len(store), world)
    step = int(sum(h.get("batches", 0) for h in history))  # optimizer steps so far (resume)
    for epoch in range(start, cfg.epochs):
        horizon = schedule[epoch]
        rng = np.random.default_rng([seed, epoch])
        torch.manual_seed(seed * 1009 + epoch)
        idx = np.arange(len(store))
        if cfg.origins_per_epoch and cfg.origins_per_epoch < len(store):
            idx = np.sort(rng.choice(len(store), cfg.origins_per_epoch, replace=False))
        sub = store.take(idx) if len(idx) < len(store) else store
        sizes = sub.size_estimates(horizon, last_q, cfg.lookback, _query_cap(cfg))
        order = bucketed_order(sizes, cfg.batch_size, rng, cfg.bucket_chunk)
        keys = np.arange(len(order))  # global batch numbers: masks do not depend on the world size
        if world > 1:  # equal batch counts per rank keep the collective calls in step
            n = len(order) // world * world
            order, keys = order[rank:n:world], keys[rank:n:world]
        if max_batches:
            order, keys = order[:max_batches], keys[:max_batches]
        model.train()
        t0 = time.perf_counter()
        total = torch.zeros((), device=device)
        tokens = torch.zeros((), dtype=torch.long, device=device)
        pad_slots, slots = 0, 0
        bar = progress_bar(
            total=len(order),
            desc=f"forma seed {seed} epoch {epoch + 1}/{cfg.epochs} H={horizon}",
            disable=not progress or rank != 0,
            leave=False,
            unit="batch",
        )
        plan = EpochBatches(
            sub,
            order,
            keys,
            horizon,
            account_map,
            identities,
            cfg,
            last_q or SPLIT_LAST_Q,
            seed,
            epoch,
        )
        for batch in plan.iterate(workers, pin_memory=device.type == "cuda"):
            if trace is not None:
                trace.append((epoch, batch.firm_id.tolist(), batch.origin_q.tolist()))
            if cfg.warmup_steps or cfg.lr_schedule != "constant":
                for g in opt.param_groups:
                    g["lr"] = learning_rate(cfg, step, total_steps)
            step += 1
            # the backward pass and the step run outside forward(): the same precision
            with float32_matmul(cfg.matmul_precision):
                loss_sum, n_batch = train_step(step_fn, model, opt, batch, cfg, device, world)
            if ema is not None:
                ema.update(model)
            # this rank's summed loss, kept on the device (no per-step host sync)
            total = total + loss_sum
            tokens = tokens + n_batch
            pad_slots += int(batch.pad.sum())
            slots += batch.pad.numel()
            bar.update(1)
            if step % 50 == 0:  # reading the loss waits for the device: not every step
                # refresh=False: the bar redraws at its own interval (30 s in a log file)
                bar.set_postfix(loss=f"{float(total) / max(int(tokens), 1):.4f}", refresh=False)
        bar.close()
        loss_total, n_tokens = float(total), int(tokens)
        seconds = time.perf_counter() - t0
        history.append(
            {
                "epoch": epoch + 1,
                "horizon": horizon,
                "loss": loss_total / max(n_tokens, 1),
                "tokens": n_tokens,
                "origins": int(sum(len(o) for o in order)),
                "batches": len(order),
                "padding_share": pad_slots / max(slots, 1),
                "seconds": round(seconds, 3),
            }
        )
        if log and rank == 0:
            h = history[-1]
            log(
                f"seed {seed} epoch {h['epoch']}/{cfg.epochs} H={horizon} loss {h['loss']:.4f} "
                f"({h['origins']} origins, {seconds:.1f}s, padding {h['padding_share']:.1%})"
            )
        if ckpt_path and rank == 0:
            save_checkpoint(
                ckpt_path,
                {
                    "format": CHECKPOINT_FORMAT,
                    "config": cfg.to_dict(),
                    "seed": seed,
                    "epoch": epoch + 1,
                    "complete": epoch + 1 == cfg.epochs,
                    "state_dict": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "ema": ema.state_dict() if ema is not None else None,
                    "account_map": account_map.tolist(),
                    "industry_map": industry_map(cfg),
                    "identities": identities.to_dict(),
                    "history": history,
                    "parameters": count_parameters(model),
                    "torch": torch.__version__,
                    "numerics": numerics_record(cfg.matmul_precision, str(device)),
                    "saved_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    **(extra or {}),
                },
            )
        if on_epoch is not None and rank == 0:
            on_epoch(history[-1], _averaged(model, ema))
            model.train()
    return FitResult(
        ckpt_path, seed, cfg.epochs - start, history, count_parameters(model), _averaged(model, ema)
    )


def main(argv: list[str] | None = None) -> None:
    """torchrun entry point: train one seed from exported Arrow IPC files."""
    import pyarrow as pa

    ap = argparse.ArgumentParser(description="Train Forma from exported tuple windows (DDP-ready).")
    ap.add_argument("--windows", nargs="+", required=True, help="Arrow IPC files of tuple windows")
    ap.add_argument("--identities", required=True, help="Arrow IPC file of ref.identities")
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--family", default="gaussian")
    ap.add_argument("--seed", type=int, default=60)
    ap.add_argument("--out", required=True)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--origins-per-epoch", type=int, default=None)
    ap.add_argument("--epochs", type=int, default=None)
    ap.add_argument(
        "--workers",
        type=int,
        default=0,
        help="DataLoader processes building batches per rank (a GPU outruns one)",
    )
    ap.add_argument(
        "--rank-report",
        default=None,
        help="folder for one JSON per rank: the (firm, origin) keys it trained per "
        "epoch and a SHA-256 of its final weights (checks the DDP sharding)",
    )
    args = ap.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        torch.distributed.init_process_group(backend)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    batches = []
    for f in args.windows:
        with pa.memory_map(f) as src:
            batches.extend(pa.ipc.open_file(src).read_all().to_batches())
    store = WindowStore.from_batches(batches)
    with pa.memory_map(args.identities) as src:
        ids = Identities.from_arrow(pa.ipc.open_file(src).read_all())
    overrides = {"family": args.family, "bf16": args.bf16, "compile": args.compile}
    if args.origins_per_epoch:
        overrides["origins_per_epoch"] = args.origins_per_epoch
    if args.epochs:
        overrides["epochs"] = args.epochs
    cfg = preset(args.preset, **overrides)
    trace: list | None = [] if args.rank_report else None
    res = fit(
        store,
        ids,
        cfg,
        seed=args.seed,
        checkpoint=args.out,
        resume=args.resume,
        device=device,
        log=print,
        progress=False,
        trace=trace,
        workers=args.workers,
    )
    if args.rank_report and res.model is not None and trace is not None:
        import hashlib
        import json

        rank, world_now = _dist()
        weights = hashlib.sha256()
        for v in res.model.state_dict().values():
            weights.update(v.detach().cpu().contiguous().numpy().tobytes())
        out = Path(args.rank_report)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"rank{rank}.json").write_text(
            json.dumps(
                {
                    "rank": rank,
                    "world": world_now,
                    "weights_sha256": weights.hexdigest(),
                    "batches": [[e, list(zip(f, q))] for e, f, q in trace],
                }
            )
        )
    if _dist()[0] == 0:
        print(
            f"done: seed {res.seed}, {res.epochs_run} epochs, final loss {res.final_loss:.4f}, "
            f"{res.parameters:,} parameters -> {res.checkpoint}"
        )
    if world > 1:
        # every rank tears down together: one closing its gloo pairs while another still
        # uses them aborts that one ("terminate called without an active exception")
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
