"""What a forecast is, wherever it comes from (docs/contracts.md, "Forecasts"; the
submission file of docs/scoring.md).

Models return Arrow batches in FORECAST_SCHEMA (a mean, an optional sigma, a mixture
component) or QUANTILE_SCHEMA (one row per cell and quantile level); uploads are parquet
files with the columns below. Both go through the same checks and scoring. What a
sigma means, family by family, is contracts/families.py.
"""

from __future__ import annotations

import pyarrow as pa

#: The forecast batches every point, density or mixture model returns.
FORECAST_SCHEMA = pa.schema(
    [
        pa.field("firm_id", pa.int32(), nullable=False),
        pa.field("origin_q", pa.int32(), nullable=False),
        pa.field("item_id", pa.int16(), nullable=False),
        pa.field("horizon", pa.int8(), nullable=False),
        pa.field("component", pa.int16(), nullable=False),
        pa.field("mu", pa.float64(), nullable=False),
        pa.field("sigma", pa.float64(), nullable=True),
    ]
)

#: The column that carries a quantile forecast's level.
LEVEL_COLUMN = "quantile_level"

#: The batches a quantile forecaster returns: one row per (cell, level), mu the
#: quantile's value.
QUANTILE_SCHEMA = pa.schema(
    [
        pa.field("firm_id", pa.int32()),
        pa.field("origin_q", pa.int32()),
        pa.field("item_id", pa.int16()),
        pa.field("horizon", pa.int8()),
        pa.field(LEVEL_COLUMN, pa.float64()),
        pa.field("mu", pa.float64()),
    ]
)

#: What a model's `mu` is in: the benchmark's standardized space, or reported dollars.
SPACES = ("standardized", "dollars")

#: Key and value columns of a submission file, and the aliases accepted for them.
SUBMISSION_COLUMNS = ("firm", "target", "origin", "horizon", "prediction")
OPTIONAL_COLUMNS = ("sigma", "component")
COLUMN_ALIASES = {"firm_id": "firm", "quarter": "origin", "forecast_horizon": "horizon"}


def accepted_names(column: str) -> tuple[str, ...]:
    """A submission column's own name followed by its aliases."""
    return (column, *(alias for alias, canonical in COLUMN_ALIASES.items() if canonical == column))
