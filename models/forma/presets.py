"""Forma configurations. `paper` is the paper's canonical model (docs/forma.md,
"Model" and "Parameter accounting"); `small` and `mid` are the CPU models for the demo
panel on 2 cores (docs/forma.md, "Presets").

Parameter accounting of `paper` (d=128, 4 layers, 4 heads, ff 512, 82 accounts, 49 industries):
  encoder layer  = attention in-proj 3*128*128+384 (49,536) + out-proj 16,512
                   + ff 128*512+512 (66,048) + 512*128+128 (65,664) + 2 LayerNorms 512
                 = 198,272; x 4 layers = 793,088
  heads          = 2 x [256*256+256 (65,792) + 256+1 (257)] = 132,098
  embeddings     = (82 accounts + 49 industries + w_x + e_mask) x 128 = 133 x 128 = 17,024
  total          = 942,210
The 82-row account table is the published release's vocabulary size; this build's tuple
view uses 79 of its rows (the 78 items and the scale pseudo-item, row = item_id), and
rows 79-81 are reserved (never looked up; weight decay keeps them at zero drift).
The 49 industry rows are the Fama-French 48 industries plus Unknown (ff48 = 49).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from proforma.contracts import families
from proforma.contracts.errors import UserError
from proforma.models.numerics import MATMUL_PRECISIONS


@dataclass(frozen=True)
class FormaConfig:
    """Everything that defines a Forma run; stored inside every checkpoint."""

    name: str = "paper"
    # architecture
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    d_ff: int = 512
    dropout: float = 0.2
    n_accounts: int = 82  # at least max item_id + 1; see module docstring
    n_industries: int = 49
    # "full": every token attends to every token (the paper); "context": query tokens
    # attend to the context only and nothing attends to them (network.py)
    query_attention: str = "full"
    anchor: bool = False  # future tokens see their item's origin value; mu is a change from it
    seasonal: bool = False  # future tokens see their item's latest value of the same season
    year_ago: bool = False  # future tokens see their item's value at rel_q -4
    # optimisation
    epochs: int = 12
    batch_size: int = 32
    lr: float = 1e-4
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    warmup_steps: int = 0  # linear learning-rate warm-up over the first N optimizer steps
    lr_schedule: str = "constant"  # or "cosine": decay to lr_min_ratio x lr by the last step
    lr_min_ratio: float = 0.1
    beta: float = 0.5
    # exponential moving average of the weights (models/forma/averaging.py); 0 = off,
    # the final weights are the model
    ema_decay: float = 0.0
    family: str = families.DEFAULT_FAMILY  # or laplace: a family with a loss in losses.py
    # curriculum: max horizon 4, 4, 8, 12, ... capped at max_horizon
    horizon_start: int = 4
    horizon_step: int = 4
    horizon_hold: int = 2  # epochs at the start horizon before the first expansion
    max_horizon: int = 20
    lookback: int = 12
    # masking probabilities
    p_mask_future_block: float = 0.5
    p_mask_future_tuple: float = 0.95
    p_select_instance: float = 0.1
    p_mask_ungrouped: float = 0.05
    # data
    # "context" attention only: at most this many realized hidden future slots per
    # training set (a seeded sample; 0 = all); unrealized slots are dropped there, since
    # a query without a target changes nothing else in the set
    train_queries: int = 0
    origins_per_epoch: int | None = None  # None = every origin; else a seeded subsample
    # validation origins held out of training to calibrate the intervals at prediction
    # time (models/forma/calibration.py); 0 = none, sigma as the head gives it
    calibration_origins: int = 0
    bucket_chunk: int = 64  # batches per length-sorted chunk (bucketing window)
    # speed switches (GPU)
    bf16: bool = False
    compile: bool = False
    # float32 matmul precision (models/numerics.py), applied around the model's own passes
    # and steps and recorded with its checkpoints and forecasts. "highest" computes in
    # float32 on every CPU. "medium" is bfloat16 wherever the hardware has it, CPUs with
    # AMX-BF16 or AVX512-BF16 included, so the same run gives other numbers there.
    matmul_precision: str = "highest"
    extra: dict = field(default_factory=dict)

    def replace(self, **changes) -> FormaConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> FormaConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


PRESETS: dict[str, FormaConfig] = {
    # TF32 matmuls on GPUs that have them (the paper's model is trained on one); float32
    # on CPUs
    "paper": FormaConfig(matmul_precision="high"),
    # The CPU model (docs/forma.md, "Presets"): the paper's tokens, masking, loss,
    # curriculum and inference, sized for the 2-core machine. Cost on a CPU is attention,
    # and the fused kernel is bound by its softmax (heads x layers x tokens^2), hence one
    # head of width 32 and two layers. Query tokens read the context without being read
    # (`query_attention="context"`): history self-attention plus queries x history instead
    # of (history + queries)^2, and only 256 sampled realized targets per training set
    # (`train_queries`), 3.2x the origins per CPU-second of full attention over the whole
    # grid. `anchor`: the mean head predicts the change from the item's origin value, which
    # the full-attention model had to learn to copy through attention first (R2 0.24 ->
    # 0.29 at 12,288 origins). Batch 4 with lr 5e-3 after a 50-step warm-up: in a fixed
    # CPU budget learning comes from optimizer steps; a cosine decay to 2% of it by the
    # last step, because at a constant 5e-3 the test R2 stalled at the noise of batch-4
    # steps (0.31 after 49,152 origins; one annealed epoch from there: 0.36). 16 epochs
    # of 6,144 origins (3.7 passes over the demo's 26,407 train+val origins). No
    # dropout: on a CPU attention dropout forces PyTorch's unfused attention path.
    # `seasonal`: future tokens also see the item's latest value of their season; the
    # elastic net reads it as a lagged level and beat Forma on the seasonal items at
    # h1-h3 (0.36 vs 0.13 on revenue at h1); the demo's short run gained 0.019 / 0.008 in
    # R2 over two seeds (docs/forma.md, "Short horizons").
    "small": FormaConfig(
        name="small",
        d_model=32,
        n_layers=2,
        n_heads=1,
        d_ff=64,
        dropout=0.0,
        n_accounts=79,
        query_attention="context",
        anchor=True,
        seasonal=True,
        train_queries=256,
        epochs=16,
        batch_size=4,
        lr=5e-3,
        warmup_steps=50,
        lr_schedule="cosine",
        lr_min_ratio=0.02,
        weight_decay=0.01,
        origins_per_epoch=6144,
    ),
    # The mid-size CPU model of the learning curve: `small` with width 64, two heads of
    # 32 and three layers (4.8x the parameters, 2.4x the CPU seconds per origin), a
    # smaller learning rate with a longer warm-up and a cosine decay to 10%; two passes.
    # With the seasonal lag, as `small`: on its full schedule (seed 60) it lifted the
    # test sample's R2 from 0.371 to 0.381 and the oracle origins' from 0.370 to 0.395.
    # 12 epochs of 2,816 origins: two seeds side by side (`--jobs 2`, one thread each)
    # train inside the time budget of the 2-core demo machine, where 4,096 per epoch
    # took as long for one seed on two threads (docs/forma.md, "Presets", has the times). 1,536 validation
    # origins (whole firms) are held out to check, and if need be widen, the intervals
    # (models/forma/calibration.py).
    "mid": FormaConfig(
        name="mid",
        d_model=64,
        n_layers=3,
        n_heads=2,
        d_ff=128,
        dropout=0.0,
        n_accounts=79,
        query_attention="context",
        anchor=True,
        seasonal=True,
        train_queries=256,
        epochs=12,
        batch_size=4,
        lr=2e-3,
        warmup_steps=100,
        lr_schedule="cosine",
        weight_decay=0.01,
        origins_per_epoch=2816,
        calibration_origins=1536,
    ),
}


def preset(name: str, **overrides) -> FormaConfig:
    """A named configuration, optionally with fields replaced."""
    if name not in PRESETS:
        raise UserError(f"Unknown Forma preset {name!r}; choose one of {sorted(PRESETS)}")
    cfg = PRESETS[name]
    if overrides:
        unknown = set(overrides) - set(cfg.to_dict())
        if unknown:
            raise UserError(f"Unknown Forma setting(s): {sorted(unknown)}")
        cfg = cfg.replace(**overrides)
    if cfg.lr_schedule not in ("constant", "cosine"):
        raise UserError(f"Unknown lr_schedule {cfg.lr_schedule!r}; use constant or cosine")
    if cfg.query_attention not in ("full", "context"):
        raise UserError(f"Unknown query_attention {cfg.query_attention!r}; use full or context")
    if cfg.train_queries and cfg.query_attention != "context":
        raise UserError(
            "train_queries needs query_attention='context' (with full attention "
            "every query changes every other token)"
        )
    if not 0.0 <= cfg.ema_decay < 1.0:
        raise UserError(f"ema_decay must lie in [0, 1), got {cfg.ema_decay}")
    if cfg.matmul_precision not in MATMUL_PRECISIONS:
        raise UserError(
            f"Unknown matmul_precision {cfg.matmul_precision!r}; use one of "
            f"{', '.join(MATMUL_PRECISIONS)}"
        )
    # a family of the registry whose CDF the calibration reads (contracts/families.py);
    # its loss is in losses.py
    spec = families.FAMILIES.get(cfg.family)
    if spec is None or spec.standard_cdf is None:
        trained = [f.name for f in families.FAMILIES.values() if f.standard_cdf is not None]
        raise UserError(f"Unknown family {cfg.family!r}; use {' or '.join(trained)}")
    return cfg


def curriculum(cfg: FormaConfig) -> list[int]:
    """Max queried horizon per epoch: 4, 4, 8, 12, 16, 20, 20, ... (paper schedule)."""
    out = []
    for epoch in range(cfg.epochs):
        steps = max(0, epoch - (cfg.horizon_hold - 1))
        out.append(min(cfg.max_horizon, cfg.horizon_start + cfg.horizon_step * steps))
    return out
