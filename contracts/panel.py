"""The panel's fixed vocabulary: splits, horizons and the build's rule sets
(docs/contracts.md, "Keys" and "Rule sets")."""

from __future__ import annotations

import pyarrow as pa

#: Origin splits by calendar year: train 1971-2001, val 2002-2009, test 2010-2024.
SPLITS = ("train", "val", "test")

#: Forecast horizons in quarters.
HORIZONS = range(1, 21)

#: The build's rule sets, the default first: `published` follows the published benchmark
#: package where it and the paper differ, `paper` the paper's literal text. A build that
#: records none was made under `paper`.
RULE_SETS = ("published", "paper")
DEFAULT_RULES = RULE_SETS[0]
UNRECORDED_RULES = "paper"

#: One record per origin of the tuple view (proforma.app.views.tuple_windows, read by Forma): the
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
