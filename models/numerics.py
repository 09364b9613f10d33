"""Process-wide numeric settings (PyTorch's, BLAS threads), applied for one call and
restored after it.

`torch.set_float32_matmul_precision` and `torch.set_num_threads` change the whole
process. Set once and left, they leak into whatever runs next: on a CPU with bfloat16
matrix units (AMX-BF16, AVX512-BF16) precision "medium" makes oneDNN run every float32
matmul in bfloat16 (2.6e-3 relative on a 256 x 256 product), so a model trained with it
changed the numbers of every later model, test and scoring step in that process. Here
each setting is a context: the model's own calls enter it, and leaving it puts back
exactly what was there, including settings made through PyTorch's newer per-backend API.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

#: float32 matmul precisions PyTorch accepts, and what each computes in by device kind.
MATMUL_PRECISIONS = ("highest", "high", "medium")

# PyTorch's per-backend switches behind `set_float32_matmul_precision` (2.9 and later).
_BACKEND_SWITCHES = (
    ("fp32_precision",),
    ("mkldnn", "matmul", "fp32_precision"),
    ("mkldnn", "conv", "fp32_precision"),
    ("mkldnn", "rnn", "fp32_precision"),
    ("cuda", "matmul", "fp32_precision"),
    ("cudnn", "conv", "fp32_precision"),
    ("cudnn", "rnn", "fp32_precision"),
)


def check_matmul_precision(name: str) -> str:
    if name not in MATMUL_PRECISIONS:
        raise ValueError(
            f"Unknown float32 matmul precision {name!r}; use one of {', '.join(MATMUL_PRECISIONS)}"
        )
    return name


def _switch(torch: Any, path: tuple[str, ...]) -> tuple[Any, str] | None:
    obj = torch.backends
    for part in path[:-1]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return (obj, path[-1]) if hasattr(obj, path[-1]) else None


def _snapshot(torch: Any) -> dict[tuple[str, ...], str]:
    out: dict[tuple[str, ...], str] = {}
    for path in _BACKEND_SWITCHES:
        found = _switch(torch, path)
        if found is not None:
            out[path] = getattr(*found)
    return out


def _restore(torch: Any, snapshot: dict[tuple[str, ...], str]) -> None:
    # the generic switch first: setting it can reset the per-backend ones
    for path, value in snapshot.items():
        found = _switch(torch, path)
        if found is not None and getattr(*found) != value:
            setattr(found[0], found[1], value)


@contextlib.contextmanager
def float32_matmul(precision: str) -> Iterator[None]:
    """float32 matmuls at `precision` inside the block; the process's settings after it,
    as they were (whether they were made through the legacy call or the per-backend one)."""
    import torch

    check_matmul_precision(precision)
    try:
        legacy: str | None = torch.get_float32_matmul_precision()
    except RuntimeError:  # someone used the per-backend API: the legacy getter refuses
        legacy = None
    before = _snapshot(torch)
    if legacy == precision:
        yield
        return
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        if legacy is not None:
            torch.set_float32_matmul_precision(legacy)
        _restore(torch, before)


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """`threads` intra-op threads inside the block (0: leave as is), the previous count
    after it."""
    if not threads:  # nothing to set: PyTorch need not even be imported
        yield
        return
    import torch

    before = torch.get_num_threads()
    if threads != before:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def one_blas_thread() -> Any:
    """A context with BLAS (numpy's, scipy's) on one thread. Work made of many small
    matrices (a quarter's imputation, a batch of statements' projections) gains nothing
    from threaded BLAS: its threads spin between the small calls, so the same work took
    2.6x the CPU (the demo's two reconciliations: 23.6 CPU-s for 12.9 s, against 9.1 for
    9.0 on one thread) and, on a loaded machine, 10-30x the wall time to contention.
    Entered once per job, not per call: the limit is global to the process, so threads
    entering and leaving it would undo each other's."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


@functools.cache
def cpu_has_bf16_matmul() -> bool:
    """Whether float32 matmuls run in bfloat16 on this CPU under "medium": measured, not
    read from the CPU's flags. oneDNN reports bfloat16 support on CPUs with AVX512-BF16
    alone (an AMD EPYC of Zen 4, say), yet there "medium" products stay float32 (6e-7
    relative); with AMX-BF16 they move by 2.6e-3. So one seeded 256 x 256 product is
    taken both ways, and a relative difference above 1e-4 means bfloat16."""
    import torch

    try:
        if not torch.backends.mkldnn.is_available():
            return False
        gen = torch.Generator().manual_seed(0)
        a = torch.randn(256, 256, generator=gen)
        b = torch.randn(256, 256, generator=gen)
        with float32_matmul("highest"):
            exact = a @ b
        with float32_matmul("medium"):
            reduced = a @ b
    except (AttributeError, RuntimeError):
        return False
    return bool((reduced - exact).abs().max() > 1e-4 * exact.abs().max())


def cpu_flags() -> list[str]:
    """The CPU's matrix-unit flags from /proc/cpuinfo (empty where it cannot be read)."""
    wanted = ("amx_bf16", "amx_tile", "amx_int8", "amx_fp16", "avx512_bf16", "avx512f")
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    return [w for w in wanted if w in have]
    except OSError:
        pass
    return []


def effective_matmul(precision: str, device: str = "cpu") -> str:
    """What a float32 matmul computes in at `precision` on this machine's `device`:
    "float32", "tf32" or "bfloat16" (recorded with checkpoints and forecasts)."""
    import torch

    check_matmul_precision(precision)
    if precision == "highest":
        return "float32"
    if str(device).startswith("cuda"):
        if not torch.cuda.is_available():
            return "float32"
        major, _ = torch.cuda.get_device_capability()
        if major < 8:
            return "float32"
        return "tf32" if precision == "high" else "bfloat16"
    if precision == "medium":
        return "bfloat16" if cpu_has_bf16_matmul() else "float32"
    # "high" on a CPU: oneDNN's TF32 mode, which only CPUs with TF32 matrix units run
    return "float32"


def numerics_record(precision: str, device: str = "cpu") -> dict[str, Any]:
    """The precision a model computed in, for its checkpoint and its forecasts."""
    import torch

    return {
        "matmul_precision": precision,
        "float32_matmul_in": effective_matmul(precision, device),
        "device": str(device),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_flags": cpu_flags(),
        "torch": torch.__version__,
    }
