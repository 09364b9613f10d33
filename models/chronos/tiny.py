"""Random-weight Chronos-2 checkpoints of the real class, for tests and the bench.

`save_checkpoint` writes a folder that `load_pipeline` (and the chronos-forecasting
package itself) loads like the public amazon/chronos-2: same model class, same native
quantile forecast, patch size and pipeline class; only the width, depth and weights differ.
`FULL_SIZE` has the public checkpoint's parameter count (119.5M; its model card says
120M), so the bench measures the real model's arithmetic without its weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from proforma.models.chronos import QUANTILE_LEVELS

TINY = {"d_model": 16, "d_kv": 4, "d_ff": 32, "num_layers": 2, "num_heads": 2}
FULL_SIZE = {"d_model": 768, "d_kv": 64, "d_ff": 3072, "num_layers": 12, "num_heads": 12}


def _config(size: dict[str, int]) -> Any:
    from chronos.chronos2 import Chronos2CoreConfig

    return Chronos2CoreConfig(
        **size,
        chronos_config={
            "context_length": 8192,
            "input_patch_size": 16,
            "input_patch_stride": 16,
            "output_patch_size": 16,
            "max_output_patches": 64,
            "quantiles": list(QUANTILE_LEVELS),
            "use_reg_token": True,
            "use_arcsinh": True,
        },
        chronos_pipeline_class="Chronos2Pipeline",
    )


def save_checkpoint(
    folder: str | Path, *, size: dict[str, int] | None = None, seed: int = 0
) -> Path:
    """A Chronos-2 of `size` (TINY by default) with seeded random weights, saved in `folder`."""
    import torch
    from chronos.chronos2 import Chronos2Model

    torch.manual_seed(seed)
    model = Chronos2Model(_config(size or TINY))
    folder = Path(folder)
    model.save_pretrained(folder)
    return folder


def parameter_count(size: dict[str, int]) -> int:
    """Parameters of a Chronos-2 of this size (built on the meta device: no memory)."""
    import torch
    from chronos.chronos2 import Chronos2Model

    with torch.device("meta"):
        model = Chronos2Model(_config(size))
    return int(sum(p.numel() for p in model.parameters()))
