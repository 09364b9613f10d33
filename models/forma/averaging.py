"""An exponential moving average of the network's weights (Polyak averaging).

With batches of 4 origins the last optimizer steps leave the weights wherever the last
few noisy gradients put them, even under a cosine decay; the average over the last
~1/(1 - decay) steps is a better estimate of the minimum the run was circling. The
decay ramps up as (1 + t) / (10 + t) so the first steps' random weights do not linger.
"""

from __future__ import annotations

import torch
from torch import nn


class WeightAverage:
    """EMA of a module's floating-point parameters and buffers, kept in fp32."""

    def __init__(self, model: nn.Module, decay: float) -> None:
        if not 0.0 < decay < 1.0:
            raise ValueError(f"EMA decay must lie in (0, 1), got {decay}")
        self.decay = decay
        self.updates = 0
        self.shadow = {
            k: v.detach().clone().float()
            for k, v in model.state_dict().items()
            if v.is_floating_point()
        }

    def rate(self) -> float:
        """This update's decay: ramped, never above `decay`."""
        return min(self.decay, (1 + self.updates) / (10 + self.updates))

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        d = self.rate()
        state = model.state_dict()
        names = list(self.shadow)
        torch._foreach_lerp_(
            [self.shadow[k] for k in names], [state[k].detach().float() for k in names], 1.0 - d
        )
        self.updates += 1

    def state_dict(self) -> dict:
        return {"decay": self.decay, "updates": self.updates, "shadow": self.shadow}

    def load_state_dict(self, state: dict) -> None:
        self.decay, self.updates = float(state["decay"]), int(state["updates"])
        self.shadow = {k: v.float().clone() for k, v in state["shadow"].items()}

    def weights(self, model: nn.Module) -> dict:
        """`model`'s state dict with the averaged tensors in place of its own."""
        return with_shadow(model.state_dict(), self.shadow)


def with_shadow(state: dict, shadow: dict) -> dict:
    """`state` with each tensor that `shadow` averages replaced by the average, in the
    state's dtype (a live model's state dict, or a checkpoint's and its `ema` entry)."""
    return {k: shadow[k].to(v.dtype) if k in shadow else v for k, v in state.items()}
