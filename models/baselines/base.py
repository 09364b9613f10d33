"""What every tabular competitor returns, and how it becomes forecast batches."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.models.baselines.data import TabularData, forecast_batches, item_id


@dataclass
class Forecast:
    """Test-split forecasts: one (mu, sigma) cube per mixture component.

    Cubes are indexed [test_row, item_index, horizon-1] over all 78 items; NaN marks
    cells the model does not forecast (e.g. items outside the GBM chain).
    """

    test: TabularData
    components: list[tuple[np.ndarray, np.ndarray | None]]
    info: dict[str, Any] = field(default_factory=dict)

    def batches(self, scored_only: bool = True) -> Iterator[pa.RecordBatch]:
        """Forecast Arrow batches (docs/contracts.md); by default only cells with a
        realized target, the only ones scoring can use."""
        keep = np.isfinite(self.test.Y) if scored_only else None
        ids = [item_id(it) for it in self.test.items]
        for c, (mu, sigma) in enumerate(self.components):
            yield from forecast_batches(
                self.test.firm_id, self.test.origin_q, ids, mu, sigma, component=c, keep=keep
            )

    def cells(self) -> int:
        mu = self.components[0][0]
        return int(np.isfinite(mu).sum())
