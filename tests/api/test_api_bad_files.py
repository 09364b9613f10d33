"""Bad files at the door (issue 34, item 5): duplicate or ambiguous column names are a 422
before queueing, with nothing left on disk; an unknown column is accepted with a warning
naming a close match, in the 202 and in the job's report."""

from __future__ import annotations

import io
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from service_helpers import Api, submission_bytes


def _with_column(api: Api, name: str, source: str) -> bytes:
    table = pq.read_table(io.BytesIO(submission_bytes(api.wh, limit=200)))
    table = pa.Table.from_arrays([*table.columns, table[source]], names=[*table.column_names, name])
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("name", "source", "message"),
    [
        ("prediction", "prediction", "duplicate column name 'prediction'"),
        ("Prediction", "prediction", "ambiguous columns 'prediction' and 'Prediction'"),
        ("firm_id", "firm", "ambiguous columns 'firm' and 'firm_id'"),
    ],
)
def test_ambiguous_columns_are_refused_before_queueing(api: Api, name, source, message) -> None:
    r = api.upload(_with_column(api, name, source))
    assert r.status_code == 422 and message in r.json()["detail"], r.text
    folder = Path(api.client.app.state.settings.upload_dir)
    assert not any(folder.glob("*"))
    assert api.client.get("/api/v1/jobs", headers=api.auth()).json() == []


def test_unknown_column_is_warned_with_a_close_match(api: Api) -> None:
    r = api.upload(_with_column(api, "sigme", "sigma"))
    assert r.status_code == 202, r.text
    hint = "unknown column 'sigme' ignored"
    assert r.json()["warnings"] == [hint]  # (sigma is there too: no 'did you mean')
    job = api.wait(r.json()["job_id"])
    assert job["status"] == "done"
    assert hint in [w["problem"] for w in job["report"]["warnings"]]
