"""The model-card filters of GET /api/v1/submissions (issue 49, item 4): the records
(sql/service/submission_records.sql) narrowed by their card columns."""

from __future__ import annotations

from typing import Any

import pyarrow as pa


def filter_records(
    table: pa.Table,
    *,
    model_family: str | None = None,
    uploaded_by: str | None = None,
    source: str | None = None,
    max_parameters: int | None = None,
    has_code: bool | None = None,
) -> pa.Table:
    """The records that match every filter given: family and uploader (case-insensitive),
    source ('upload' or an in-house kind), declared parameters at most `max_parameters`,
    a code link or not."""

    def keep(r: dict[str, Any]) -> bool:
        if model_family and str(r.get("model_family") or "").lower() != model_family.lower():
            return False
        if uploaded_by and str(r.get("uploaded_by") or "").lower() != uploaded_by.lower():
            return False
        if source and r.get("source") != source:
            return False
        if max_parameters is not None and not (
            r.get("parameters") is not None and r["parameters"] <= max_parameters
        ):
            return False
        return has_code is None or bool(r.get("code_url")) == has_code

    rows = table.to_pylist()
    return pa.Table.from_pylist([r for r in rows if keep(r)], schema=table.schema)
