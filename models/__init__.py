"""Forecasters. Each reads the warehouse's Arrow views (handed to it by the CLI layer)
and returns forecasts as Arrow batches in the contract's schema (docs/contracts.md).
Models never open the database themselves."""

import pyarrow as pa

#: The forecast batches every model returns (docs/contracts.md, "Forecasts").
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
