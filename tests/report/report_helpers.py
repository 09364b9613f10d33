"""Helpers shared by the report tests (imported by name)."""

from __future__ import annotations

import torch

from proforma.app.flows.scenario import checkpoint_dir
from proforma.models.forma.presets import preset
from proforma.models.forma.train import CHECKPOINT_FORMAT, build_model


def save_checkpoint(seed: int, complete: bool = True, **config) -> None:
    """A Forma checkpoint with random weights (the small preset, narrowed by `config`)."""
    cfg = preset("small", **config)
    folder = checkpoint_dir("small", "gaussian")
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "format": CHECKPOINT_FORMAT,
            "config": cfg.to_dict(),
            "epoch": cfg.epochs,
            "state_dict": build_model(cfg).state_dict(),
            "complete": complete,
        },
        folder / f"seed{seed}.pt",
    )
