"""Loading a Chronos-2 pipeline from a local folder or the Hugging Face hub, and naming it.

These machines cannot download weights: a local copy of amazon/chronos-2 is passed as a
folder; a hub id is tried only where the network (or the hub's local cache) allows.
Every failure a user can cause is one UserError line saying how to get the weights.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from proforma.contracts.errors import UserError

DTYPES = ("float32", "bfloat16")
DEVICES = ("cpu", "cuda")
PUBLIC_CHECKPOINT = "amazon/chronos-2"
HOW_TO_GET = (
    f"download {PUBLIC_CHECKPOINT} on a machine with internet access "
    f"(`hf download {PUBLIC_CHECKPOINT} --local-dir chronos-2`), copy the folder here, "
    "then `proforma run chronos --model chronos-2` (docs/baselines.md)"
)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def _chronos() -> Any:
    try:
        import chronos
    except ImportError:
        raise UserError(
            "Chronos-2 needs the chronos-forecasting package: "
            "pip install '.[chronos]' (docs/baselines.md)"
        ) from None
    return chronos


def load_pipeline(model: str, device: str = "cpu", dtype: str = "float32") -> Any:
    """The `chronos.Chronos2Pipeline` of `model` (a checkpoint folder or a hub id) on `device`."""
    chronos = _chronos()
    import torch

    if dtype not in DTYPES:
        raise UserError(f"Unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    if device not in DEVICES:
        raise UserError(f"Unknown device {device!r}: use one of {', '.join(DEVICES)}")
    if device == "cuda" and not torch.cuda.is_available():
        raise UserError(
            "--device cuda: PyTorch sees no CUDA device here; use --device cpu "
            "or a PyTorch build with CUDA"
        )
    path = Path(model).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise UserError(
                f"{path} is not a Chronos-2 checkpoint folder (no config.json); {HOW_TO_GET}"
            )
        source, local = str(path), True
    elif _HUB_ID.match(model):
        source, local = model, False
    else:
        raise UserError(f"No Chronos-2 checkpoint folder {model!r}; {HOW_TO_GET}")
    from transformers.utils import logging as transformers_logging

    # The run shows its own progress; a weight-loading bar per run is noise in logs.
    transformers_logging.disable_progress_bar()
    try:
        pipeline = chronos.BaseChronosPipeline.from_pretrained(
            source, device_map=device, dtype=getattr(torch, dtype)
        )
    except OSError as exc:
        if local:
            first = (
                str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            )
            raise UserError(f"Cannot load the Chronos-2 checkpoint in {path}: {first}") from None
        raise UserError(
            f"The Chronos-2 weights {model!r} are not a local folder and the "
            f"Hugging Face hub cannot be reached from here; {HOW_TO_GET}"
        ) from None
    except (ValueError, AssertionError, KeyError, TypeError) as exc:
        raise UserError(
            f"{model} is not a Chronos-2 checkpoint ({str(exc)[:200] or type(exc).__name__})"
        ) from None
    if not isinstance(pipeline, chronos.Chronos2Pipeline):
        raise UserError(
            f"{model} holds a {type(pipeline).__name__}, not a Chronos-2 model; {HOW_TO_GET}"
        )
    pipeline.model.eval()
    return pipeline


def model_signature(pipeline: Any) -> str:
    """sha256 of the model's forecasting configuration and every weight (path-independent)."""
    import torch

    model = pipeline.model
    h = hashlib.sha256(
        json.dumps(dataclasses.asdict(model.chronos_config), sort_keys=True).encode()
    )
    with torch.no_grad():
        for name, tensor in sorted(model.state_dict().items()):
            t = tensor.detach().to("cpu").contiguous().reshape(-1)
            h.update(f"{name}:{t.dtype}:{t.numel()}".encode())
            h.update(memoryview(t.view(torch.uint8).numpy()))
    return h.hexdigest()


def describe(pipeline: Any) -> dict[str, Any]:
    """Size and forecasting configuration of a loaded model, for metadata and the bench."""
    model = pipeline.model
    cfg = model.config
    return {
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "d_model": cfg.d_model,
        "num_layers": cfg.num_layers,
        "num_heads": cfg.num_heads,
        "d_ff": cfg.d_ff,
        "dtype": str(model.dtype).removeprefix("torch."),
        "device": str(model.device),
        "quantile_levels": len(pipeline.quantiles),
        "output_patch_size": pipeline.model_output_patch_size,
        "prediction_length": pipeline.model_prediction_length,
    }
