"""The raw tables' shape as every source writes it (migration V0001; docs/sources.md):
comp.fundq keys, comp.co_industry, and the CCM link filter."""

from __future__ import annotations

import pyarrow as pa

#: comp.fundq key columns and their Arrow types; item columns are float64.
FUNDQ_KEY_TYPES: dict[str, pa.DataType] = {
    "gvkey": pa.string(),
    "datadate": pa.date32(),
    "fyearq": pa.int32(),
    "fqtr": pa.int8(),
    "fyr": pa.int8(),
}
FUNDQ_KEYS = tuple(FUNDQ_KEY_TYPES)
#: What identifies a comp.fundq row (fyr is optional in a file).
FUNDQ_ROW_KEY = ("gvkey", "datadate", "fyearq", "fqtr")

INDUSTRY_SCHEMA = pa.schema(
    [
        ("gvkey", pa.string()),
        ("datadate", pa.date32()),
        ("sich", pa.int32()),
        ("naicsh", pa.int32()),
    ]
)
LINK_SCHEMA = pa.schema(
    [
        ("gvkey", pa.string()),
        ("lpermno", pa.int32()),
        ("linktype", pa.string()),
        ("linkprim", pa.string()),
        ("linkdt", pa.date32()),
        ("linkenddt", pa.date32()),
    ]
)

#: CRSP-Compustat links that count: link types and primary flags.
LINKTYPES = ("LU", "LC")
LINKPRIMS = ("P", "C")


def fundq_schema(columns: list[str]) -> pa.Schema:
    """Arrow schema of raw.fundq rows with these columns (keys typed, items float64)."""
    return pa.schema([(c, FUNDQ_KEY_TYPES.get(c, pa.float64())) for c in columns])
