"""The Chronos-2 zero-shot arm: quantile forecasts of reported (dollar) values.

Per origin the firm's raw reported values on a contiguous quarter grid (up to 12 quarters
through the origin, gaps missing) go to the `chronos-forecasting` package's Chronos-2
pipeline as ONE multivariate group; it returns 21 quantiles per item and horizon 1..20.
The arm reads `proforma.app.model_inputs.views.raw_windows` batches and returns Arrow batches in
QUANTILE_SCHEMA; it never opens the warehouse (docs/baselines.md, "Chronos-2").
"""

from __future__ import annotations

import pyarrow as pa

#: The 21 native quantile levels of Chronos-2 that the benchmark scores.
QUANTILE_LEVELS: tuple[float, ...] = (
    0.01,
    0.05,
    0.10,
    0.15,
    0.20,
    0.25,
    0.30,
    0.35,
    0.40,
    0.45,
    0.50,
    0.55,
    0.60,
    0.65,
    0.70,
    0.75,
    0.80,
    0.85,
    0.90,
    0.95,
    0.99,
)
#: Quarters of context through the origin (rel_q -11..0) and quarters forecast.
HISTORY = 12
HORIZONS = 20

#: A quantile forecast in long form (the quantile-submission contract, docs/contracts.md):
#: one row per (cell, quantile level); `mu` is the quantile's value, here in reported units.
QUANTILE_SCHEMA = pa.schema(
    [
        pa.field("firm_id", pa.int32(), nullable=False),
        pa.field("origin_q", pa.int32(), nullable=False),
        pa.field("item_id", pa.int16(), nullable=False),
        pa.field("horizon", pa.int8(), nullable=False),
        pa.field("quantile_level", pa.float64(), nullable=False),
        pa.field("mu", pa.float64(), nullable=False),
    ]
)

#: The arm's compact form of the same forecast: one row per cell with its 21 quantiles in
#: level order, float32 as the model computes them (a sixth of the long form's bytes in
#: the run's cache). `proforma.models.chronos.forecast.long_form` turns it into QUANTILE_SCHEMA.
CELL_SCHEMA = pa.schema(
    [
        pa.field("firm_id", pa.int32(), nullable=False),
        pa.field("origin_q", pa.int32(), nullable=False),
        pa.field("item_id", pa.int16(), nullable=False),
        pa.field("horizon", pa.int8(), nullable=False),
        pa.field("quantiles", pa.list_(pa.float32(), len(QUANTILE_LEVELS)), nullable=False),
    ]
)
