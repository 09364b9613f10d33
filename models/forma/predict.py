"""Inference: every future token hidden, one forward pass, (mu, sigma) per (item, horizon).

Several checkpoints (seeds 60-64) are run on the same collated batch and written as
mixture components 0..K-1 (the contract's `component`); metadata records the seeds.
Rows follow the forecast contract: firm_id int32, origin_q int32, item_id int16,
horizon int8, component int16, mu float64 (standardized level), sigma float64.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import torch

from proforma.contracts import families
from proforma.contracts.errors import UserError
from proforma.models import FORECAST_SCHEMA
from proforma.models.forma.batching import (
    Batch,
    WindowStore,
    build_example,
    collate,
    sequential_order,
)
from proforma.models.forma.network import Forma

#: Origins per forward pass on a CPU when the caller does not choose: small batches keep a
#: layer's activations in the core's caches. With one thread per process and two processes
#: side by side (the demo's forecasts), 8 origins take about 39 ms an origin against 62
#: for 64, the same forecasts to float32 rounding (bench/forma_batch_size.py).
CPU_BATCH_SIZE = 8
#: ... and on a GPU, where large batches fill the device.
GPU_BATCH_SIZE = 64


def default_batch_size(device: str | torch.device) -> int:
    """Origins per forward pass on `device` when the caller gives none (0 or None)."""
    return CPU_BATCH_SIZE if torch.device(device).type == "cpu" else GPU_BATCH_SIZE


def _autocast(device: torch.device, bf16: bool):
    """bf16 autocast when asked (a GPU switch; on CPUs it runs, slower than fp32)."""
    if bf16:
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return torch.autocast(device.type, enabled=False)


def run_batch(
    model: Forma, batch: Batch, device: str | torch.device = "cpu", bf16: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) arrays [B, T] in fp32 for every token (bf16 autocast only if asked)."""
    model.eval()
    dev = torch.device(device)
    with torch.inference_mode(), _autocast(dev, bf16):
        mu, logvar = model(*batch.inputs(dev))
        sigma = torch.exp(0.5 * logvar.float())
    return mu.float().cpu().numpy(), sigma.cpu().numpy()


def slot_index(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Positions of each row's query slots, [B, Q] (Q = most slots in a row), in token
    order, and a [B, Q] mask of which entries are real (rows with fewer slots repeat
    position 0 there)."""
    slot = batch.slot.numpy()
    counts = slot.sum(1)
    q = max(int(counts.max()) if len(counts) else 0, 1)
    index = np.argsort(~slot, axis=1, kind="stable")[:, :q]
    valid = np.arange(q)[None, :] < counts[:, None]
    return np.where(valid, index, 0).astype(np.int64), valid


def run_slots(
    model: Forma,
    batch: Batch,
    index: np.ndarray,
    device: str | torch.device = "cpu",
    bf16: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) [B, Q] at the positions `index` only: the last encoder layer and the
    heads skip every other token (equal to run_batch at those positions)."""
    model.eval()
    dev = torch.device(device)
    with torch.inference_mode(), _autocast(dev, bf16):
        mu, logvar = model(*batch.inputs(dev), query_index=torch.from_numpy(index).to(dev))
        sigma = torch.exp(0.5 * logvar.float())
    return mu.float().cpu().numpy(), sigma.cpu().numpy()


def batch_rows(
    batch: Batch,
    mu: np.ndarray,
    sigma: np.ndarray,
    component: int,
    index: np.ndarray | None = None,
    valid: np.ndarray | None = None,
) -> pa.RecordBatch:
    """Forecast rows of the batch's query slots; mu, sigma are [B, T], or [B, Q] at
    `index` (with `valid`) as run_slots returns them."""
    if index is None:
        r, c = np.nonzero(batch.slot.numpy())
        rc = (r, c)
    else:
        if valid is None:
            raise ValueError("batch_rows needs `valid` with `index`")
        r, k = np.nonzero(valid)
        c = index[r, k]
        rc = (r, k)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(batch.firm_id[r], pa.int32()),
            pa.array(batch.origin_q[r], pa.int32()),
            pa.array(batch.item_id[r, c], pa.int16()),
            pa.array(batch.rel_q.numpy()[r, c].astype(np.int8), pa.int8()),
            pa.array(np.full(len(r), component, np.int16), pa.int16()),
            pa.array(mu[rc].astype(np.float64), pa.float64()),
            pa.array(sigma[rc].astype(np.float64), pa.float64()),
        ],
        schema=FORECAST_SCHEMA,
    )


def predict(
    models: Sequence[Forma],
    store: WindowStore,
    *,
    batch_size: int | None = None,
    max_horizon: int = 20,
    device: str | torch.device = "cpu",
    account_map: np.ndarray | None = None,
    last_q: dict[str, int] | None = None,
    bucket: bool = True,
    bf16: bool = False,
    progress: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Forecast batches for every origin of `store`, `batch_size` origins a pass (default:
    default_batch_size of the device); model k is component k."""
    from proforma.models.progress import progress_bar

    batch_size = batch_size or default_batch_size(device)
    if account_map is None:
        account_map = np.arange(models[0].embed.account.num_embeddings, dtype=np.int64)
    lookback = getattr(models[0], "lookback", 12)
    sizes = store.size_estimates(max_horizon, last_q, lookback)
    order = sequential_order(sizes, batch_size, bucket)
    for m in models:
        m.to(device).eval()
    for idx in progress_bar(
        order, desc="forma predict", unit="batch", disable=not progress, leave=False
    ):
        batch = collate(
            [
                build_example(store, int(i), max_horizon, last_q=last_q, lookback=lookback)
                for i in idx
            ],
            account_map,
        )
        index, valid = slot_index(batch)
        for k, m in enumerate(models):
            mu, sigma = run_slots(m, batch, index, device, bf16)
            rows = batch_rows(batch, mu, sigma, k, index, valid)
            if rows.num_rows:
                yield rows


def mixture_moments(
    mu: np.ndarray, sigma: np.ndarray, axis: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Equal-weight mixture point and moment-matched sigma over `axis` (the components):
    point = mean_k mu_k, sigma = sqrt(mean_k sigma_k^2 + var_k mu_k) (population variance)."""
    point = mu.mean(axis=axis)
    return point, np.sqrt((sigma**2).mean(axis=axis) + mu.var(axis=axis))


def mixture_quantile(
    mu: np.ndarray,
    sigma: np.ndarray,
    p: float,
    family: str = "gaussian",
    axis: int = 0,
    iters: int = 60,
) -> np.ndarray:
    """Quantile p of the equal-weight mixture over `axis`, by bisection on its CDF (each
    component's the family registry's, contracts/families.py)."""
    standard = families.FAMILIES[family].standard_cdf
    if standard is None:
        raise UserError(f"Family {family} has no standard CDF for a mixture's quantile")
    mu = np.moveaxis(np.asarray(mu, float), axis, 0)
    sigma = np.moveaxis(np.asarray(sigma, float), axis, 0)

    def cdf(y: np.ndarray) -> np.ndarray:
        return np.asarray(standard((y - mu) / sigma)).mean(0)

    lo = (mu - 40 * sigma).min(0)
    hi = (mu + 40 * sigma).max(0)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        below = cdf(mid) < p
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)
