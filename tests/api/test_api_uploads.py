"""Malformed uploads: every one rejected with a specific 4xx message, leaving no file behind;
row-level problems come back in the job's validation report; limits (size, daily, names)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from service_helpers import Api, submission_bytes


def _leftovers(api: Api, wait_s: float = 0.0) -> list[Path]:
    """Files left in the upload folder (after up to `wait_s`: the worker removes a job's
    file just after it records the job's end, so a client can see the end first)."""
    folder = Path(api.client.app.state.settings.upload_dir)
    deadline = time.monotonic() + wait_s
    while True:
        found = sorted(folder.glob("*")) if folder.exists() else []
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def _parquet(**columns) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf)
    return buf.getvalue()


GOOD_FIELDS = {"name": "m", "training_cutoff": "2009Q4", "leakage_statement": "none"}


@pytest.mark.parametrize(
    ("content", "fields", "status", "message"),
    [
        (b"", {}, 422, "The uploaded file is empty"),
        (b"hello, this is a CSV file\n1,2,3\n", {}, 422, "not parquet (no PAR1 magic bytes)"),
        (b"PAR1" + b"\x00" * 64 + b"PAR1", {}, 422, "damaged"),
        ("TRUNCATED", {}, 422, "not parquet"),
        (
            _parquet(firm=["001000"], target=["atq"]),
            {},
            422,
            "lacks required column(s): origin, horizon, prediction",
        ),
        (
            _parquet(firm=pa.array([], pa.string()), target=pa.array([], pa.string())),
            {},
            422,
            "no rows",
        ),
        ("VALID", {"name": ""}, 422, "Invalid form field 'name'"),
        ("VALID", {"name": "<script>"}, 422, "Invalid form field 'name'"),
        ("VALID", {"training_cutoff": "last year"}, 422, "Invalid form field 'training_cutoff'"),
        ("VALID", {"training_cutoff": "2009-02-31"}, 422, "is not a calendar date"),
        ("VALID", {"leakage_statement": "  "}, 422, "leakage_statement"),
        ("VALID", {"family": "cauchy"}, 422, "must be gaussian, laplace, student_t or quantile"),
        ("VALID", {"family": "student_t"}, 422, "student_t needs df > 1"),
        ("VALID", {"family": "gaussian", "df": "5"}, 422, "df applies only to family student_t"),
        ("VALID", {"df": "many", "family": "student_t"}, 422, "Invalid form field 'df'"),
        ("VALID", {"code_url": "javascript:alert(1)"}, 422, "http:// or https://"),
        ("VALID", {"description": "x" * 70_000}, 422, "longer than 64 KiB"),
    ],
)
def test_malformed_uploads(api: Api, content, fields, status, message) -> None:
    if content == "VALID":
        content = submission_bytes(api.wh, limit=50)
    elif content == "TRUNCATED":
        content = submission_bytes(api.wh, limit=50)[:-200]
    form = {**GOOD_FIELDS, **fields}
    if "leakage_statement" in fields and not fields["leakage_statement"].strip():
        form["leakage_statement"] = fields["leakage_statement"]
    r = api.client.post(
        "/api/v1/submissions", headers=api.auth(), data=form, files={"file": ("f.parquet", content)}
    )
    assert r.status_code == status, r.text
    assert message in r.json()["detail"] + str(r.json().get("problems", "")), r.json()
    assert _leftovers(api) == []


def test_missing_fields_and_parts(api: Api) -> None:
    c = api.client
    data = submission_bytes(api.wh, limit=20)
    r = c.post(
        "/api/v1/submissions",
        headers=api.auth(),
        data={"training_cutoff": "2009Q4", "leakage_statement": "none"},
        files={"file": ("f.parquet", data)},
    )
    assert r.status_code == 422 and r.json()["detail"] == "The form field 'name' is required."
    r = c.post(
        "/api/v1/submissions", headers=api.auth(), data=GOOD_FIELDS, files={"other": ("x", b"1")}
    )
    assert r.status_code == 422 and "no 'file' part" in r.json()["detail"]
    r = c.post(
        "/api/v1/submissions",
        headers=api.auth(),
        data=GOOD_FIELDS,
        files=[("file", ("a.parquet", data)), ("file", ("b.parquet", data))],
    )
    assert r.status_code == 422 and "one file per upload" in r.json()["detail"]
    r = c.post("/api/v1/submissions", headers=api.auth(), json={"name": "m"})
    assert r.status_code == 415 and "multipart/form-data" in r.json()["detail"]
    r = c.post(
        "/api/v1/submissions",
        headers={**api.auth(), "Content-Type": "multipart/form-data; boundary=xyz"},
        content=b"--xyz\r\nnot a header line\r\n\r\nbody\r\n--xyz--\r\n",
    )
    assert r.status_code == 422 and r.json()["detail"]
    assert _leftovers(api) == []


def test_size_cap(api: Api) -> None:
    c = api.client
    cap = c.app.state.settings.upload_max_bytes
    big = b"PAR1" + b"\x01" * (cap + 10) + b"PAR1"
    # declared length over the cap: refused before reading
    r = c.post(
        "/api/v1/submissions",
        headers=api.auth(),
        data=GOOD_FIELDS,
        files={"file": ("f.parquet", big)},
    )
    assert r.status_code == 413 and "upload limit of 256.0 KiB" in r.json()["detail"]
    # no declared length (chunked): the stream is cut at the cap, the partial file removed
    boundary = "cap-test"

    def body():
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.parquet"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        for _ in range(40):
            yield b"\x02" * 16384
        yield f"\r\n--{boundary}--\r\n".encode()

    r = c.post(
        "/api/v1/submissions",
        headers={**api.auth(), "Content-Type": f"multipart/form-data; boundary={boundary}"},
        content=body(),
    )
    assert r.status_code == 413 and "larger than the upload limit" in r.json()["detail"]
    assert _leftovers(api) == []


def test_row_level_problems_fail_the_job_with_a_report(api: Api) -> None:
    data = submission_bytes(api.wh, limit=200)
    table = pq.read_table(io.BytesIO(data))
    horizons = table["horizon"].to_pylist()
    horizons[0] = 0
    targets = table["target"].to_pylist()
    targets[1] = "not_an_item"
    bad = table.set_column(table.schema.get_field_index("horizon"), "horizon", pa.array(horizons))
    bad = bad.set_column(bad.schema.get_field_index("target"), "target", pa.array(targets))
    bad = pa.concat_tables([bad, bad.slice(5, 1)])  # a duplicate key
    buf = io.BytesIO()
    pq.write_table(bad, buf)
    r = api.upload(buf.getvalue(), name="broken")
    assert r.status_code == 202
    job = api.wait(r.json()["job_id"])
    assert job["status"] == "failed" and job["submission_id"] is None
    problems = " | ".join(p["problem"] for p in job["report"]["problems"])
    assert "horizon outside 1..20" in problems and "unknown target item" in problems
    assert job["report"]["valid"] is False and job["message"]
    assert _leftovers(api, wait_s=5) == []  # the upload is removed once the job ends
    assert api.client.get("/api/v1/submissions").json()["rows"] == []


def test_daily_limit_and_name_conflicts(api: Api) -> None:
    from proforma.app.api.auth import add_user

    data = submission_bytes(api.wh, limit=300)
    _, limited = add_user(api.wh, "limited", daily_limit=1)
    assert api.upload(data, token=limited, name="lim-1").status_code == 202
    r = api.upload(data, token=limited, name="lim-2")
    assert r.status_code == 429 and "resets at 00:00 UTC" in r.json()["detail"]
    first = api.upload(data, name="same")
    assert first.status_code == 202
    clash = api.upload(data, name="same")
    assert clash.status_code == 409 and "same" in clash.json()["detail"]
    api.wait(first.json()["job_id"])
    clash = api.upload(data, name="same")
    assert clash.status_code == 409 and "exists already" in clash.json()["detail"]
    # alice's own jobs; the admin sees everyone's
    assert len(api.client.get("/api/v1/jobs", headers=api.auth()).json()) == 1
    admin_jobs = api.client.get("/api/v1/jobs", headers=api.auth(api.admin_token)).json()
    assert len(admin_jobs) == 2
    _, other = add_user(api.wh, "mallory")
    r = api.client.get(f"/api/v1/jobs/{first.json()['job_id']}", headers=api.auth(other))
    assert r.status_code == 403 and "another user" in r.json()["detail"]
    assert api.client.get("/api/v1/jobs/999", headers=api.auth()).status_code == 404
    for j in admin_jobs:
        api.wait(j["job_id"], token=api.admin_token)


def test_a_job_that_runs_out_of_memory_says_so(api: Api, monkeypatch) -> None:
    """DuckDB's memory limit is the server's problem, not the file's: the job fails with
    that message (not 'unreadable file', not an internal error) and stores nothing."""
    import duckdb

    from proforma.app import scoring

    def out_of_memory(*args, **kwargs):
        raise duckdb.OutOfMemoryException("failed to allocate data of size 64.0 MiB")

    monkeypatch.setattr(scoring, "ingest_parquet", out_of_memory)
    r = api.upload(submission_bytes(api.wh, limit=50), name="too big")
    assert r.status_code == 202
    job = api.wait(r.json()["job_id"])
    assert job["status"] == "failed" and job["submission_id"] is None
    assert "ran out of memory" in job["message"] and "PROFORMA_MEMORY_LIMIT" in job["message"]
    assert api.client.get("/api/v1/submissions").json()["rows"] == []


def test_a_job_that_fills_the_disk_says_so(api: Api, monkeypatch) -> None:
    """A full disk (DuckDB spilling, or writing the warehouse) is the server's problem too:
    the job says so instead of 'internal error', and stores nothing."""
    import duckdb

    from proforma.app import scoring

    def disk_full(*args, **kwargs):
        raise duckdb.IOException(
            'Could not write file "/tmp/duckdb_temp_storage-0.tmp": No space left on device'
        )

    monkeypatch.setattr(scoring, "ingest_parquet", disk_full)
    r = api.upload(submission_bytes(api.wh, limit=50), name="no room")
    assert r.status_code == 202
    job = api.wait(r.json()["job_id"])
    assert job["status"] == "failed" and job["submission_id"] is None
    assert "disk is full" in job["message"] and "Internal error" not in job["message"]
    assert api.client.get("/api/v1/submissions").json()["rows"] == []
