"""Uploads none of whose cells can be scored end `failed` with the specific reason in the
job's report, and no submission is stored; a partly usable one is scored with a warning
that names example cells."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from service_helpers import Api, submission_bytes


def _with(api: Api, column: str, values: list | None = None, **mutate) -> bytes:
    table = pq.read_table(io.BytesIO(submission_bytes(api.wh, limit=120, sigma=False)))
    if values is not None:
        table = table.set_column(
            table.schema.get_field_index(column),
            column,
            pa.array(values, table.schema.field(column).type),
        )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    "case,fragment",
    [
        ("nan", "no usable forecast: every prediction is null, NaN or infinite"),
        ("null", "no usable forecast: every prediction is null, NaN or infinite"),
        ("train", "no cell in the test split"),
        ("dollars", "raw reported units"),
    ],
)
def test_unusable_uploads_fail_and_store_nothing(api: Api, case: str, fragment: str) -> None:
    unusable: dict[str, list[float | None]] = {
        "nan": [float("nan")] * 120,
        "null": [None] * 120,
        "dollars": [2.5e6] * 120,
    }
    values = unusable.get(case)
    if case == "train":  # the same cells, eleven years earlier: training-period origins
        origins = pq.read_table(io.BytesIO(_with(api, "origin")))["origin"].to_pylist()
        data = _with(api, "origin", [f"{int(o[:4]) - 11}{o[4:]}" for o in origins])
    else:
        data = _with(api, "prediction", values)
    job = api.wait(api.upload(data, name=f"unusable-{case}").json()["job_id"])
    assert job["status"] == "failed" and job["submission_id"] is None
    assert fragment in job["message"]
    errors = [p for p in job["report"]["problems"] if p["severity"] == "error"]
    assert any(fragment in p["problem"] for p in errors)
    assert (
        api.wh.scalar("SELECT count(*) FROM eval.submissions WHERE name = ?", [f"unusable-{case}"])
        == 0
    )


def test_a_partly_usable_upload_is_scored_and_its_warning_names_cells(api: Api) -> None:
    table = pq.read_table(io.BytesIO(submission_bytes(api.wh, sigma=False)))
    predictions = table["prediction"].to_pylist()
    predictions[0] = float("nan")
    table = table.set_column(
        table.schema.get_field_index("prediction"), "prediction", pa.array(predictions)
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    job = api.wait(api.upload(buf.getvalue(), name="partly").json()["job_id"])
    assert job["status"] == "done", job["message"]
    (warning,) = job["report"]["warnings"]
    assert warning["count"] == 1 and warning["examples"][0].startswith("firm=")
