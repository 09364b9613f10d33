"""The panel's fixed vocabulary: splits, horizons and the tuple view's schema
(docs/contracts.md, "Keys"). The build's rule sets are contracts/rules.py's."""

from __future__ import annotations

import pyarrow as pa

#: Origin splits by calendar year: train 1971-2001, val 2002-2009, test 2010-2024.
SPLITS = ("train", "val", "test")

#: Forecast horizons in quarters.
HORIZONS = range(1, 21)


#: One record per origin of the tuple view (proforma.app.model_inputs.views.tuple_windows, read by Forma): the
#: firm's reported tuples (quarter relative to the origin, item, standardized value).
TUPLE_WINDOW_SCHEMA = pa.schema(
    [
        pa.field("firm_id", pa.int32()),
        pa.field("origin_q", pa.int32()),
        pa.field("split", pa.string()),
        pa.field("ff48", pa.int16()),
        pa.field("rel_q", pa.list_(pa.int8())),
        pa.field("item_id", pa.list_(pa.int16())),
        pa.field("x", pa.list_(pa.float32())),
    ]
)
