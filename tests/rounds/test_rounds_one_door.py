"""A round file comes in by the uploads' door (issue 47): the same file checks (ranges,
columns, aliases, time zones), the same daily limit, the same job worker (so concurrent
submissions under one name answer 409, never 500), error messages without the server's
paths, and nothing left in the upload folder by a stopped server."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import io
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from proforma.app.api.auth import add_user
from proforma.app.api.job_store import sweep_upload_dir
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings


def _bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _cells(served: Settings) -> pa.Table:
    return pq.read_table(served.warehouse.parent / "rounds" / "2010Q4" / "cells__2010Q4.parquet")


def _gaussian(served: Settings, prediction: float = 0.0, sigma: float = 1.0) -> pa.Table:
    cells = _cells(served)
    n = cells.num_rows
    return cells.append_column("prediction", pa.array([prediction] * n)).append_column(
        "sigma", pa.array([sigma] * n)
    )


def _with(table: pa.Table, column: str, values: list) -> pa.Table:
    i = table.schema.get_field_index(column)
    return table.set_column(i, column, pa.array(values))


class Door:
    def __init__(self, client: TestClient, token: str):
        self.client, self.auth = client, {"Authorization": f"Bearer {token}"}

    def post(self, table: pa.Table | bytes, name: str, **fields: str):
        data = table if isinstance(table, bytes) else _bytes(table)
        return self.client.post(
            "/api/v1/rounds/2010Q4/submissions",
            headers=self.auth,
            data={"name": name, **fields},
            files={"file": ("f.parquet", data, "application/octet-stream")},
        )


def _door(client: TestClient, user: str, daily_limit: int | None = None) -> Door:
    cur = client.app.state.wh.cursor()  # type: ignore[attr-defined]
    try:
        _, token = add_user(cur, user, daily_limit=daily_limit)
    finally:
        cur.close()
    return Door(client, token)


def _stored(client: TestClient) -> int:
    cur = client.app.state.wh.cursor()  # type: ignore[attr-defined]
    try:
        return int(cur.scalar("SELECT count(*) FROM rounds.submissions WHERE kind = 'upload'"))
    finally:
        cur.close()


def test_round_files_meet_the_static_checks(served: Settings) -> None:
    with TestClient(create_app(served)) as client:
        door = _door(client, "mallory")
        good = _gaussian(served)
        n = good.num_rows
        refused = {
            "a sigma past the 32-bit float range": (_with(good, "sigma", [1e39] * n), {}),
            "a sigma below it": (_with(good, "sigma", [1e-45] * n), {}),
            "a huge prediction": (_with(good, "prediction", [1e39] * n), {}),
            "an infinite prediction beside a huge one": (
                _with(good, "prediction", [float("inf")] + [1e6] * (n - 1)),
                {},
            ),
            "Student-t with df 0.5": (good, {"family": "student_t", "df": "0.5"}),
            "a family that needs sigma without one": (good.drop(["sigma"]), {"family": "laplace"}),
        }
        for what, (table, fields) in refused.items():
            r = door.post(table, f"m-{len(what)}", **fields)
            assert 400 <= r.status_code < 500, (what, r.status_code, r.text)
        # two columns that mean the same, a column twice: refused, never a 500
        dup = pa.Table.from_arrays(
            [good.column("firm"), *good.columns], names=["firm", *good.column_names]
        )
        assert door.post(dup, "dup-col").status_code == 422
        alias = good.append_column("firm_id", good.column("firm"))
        r = door.post(alias, "alias-col")
        assert r.status_code == 422 and "ambiguous" in r.text
        assert _stored(client) == 0

        # `Sigma` is sigma; `sigme` is a warning and the file a point forecast
        upper = good.rename_columns([c if c != "sigma" else "Sigma" for c in good.column_names])
        r = door.post(upper, "upper-sigma")
        assert r.status_code == 201, r.text
        assert r.json()["family"] == "gaussian"
        typo = good.rename_columns([c if c != "sigma" else "sigme" for c in good.column_names])
        r = door.post(typo, "typo-sigma")
        assert r.status_code == 201, r.text
        assert r.json()["family"] == "point"
        assert any("did you mean 'sigma'" in w for w in r.json()["warnings"])

        # a NaN prediction leaves that cell out of this entry only, with a warning
        nan = _with(good, "prediction", [float("nan")] + [0.0] * (n - 1))
        r = door.post(nan, "one-nan")
        assert r.status_code == 201 and r.json()["rows"] == n - 1
        assert any("prediction is null, NaN or infinite" in w for w in r.json()["warnings"])

        # a time-zone-aware origin counts in the quarter of its own local date
        local = dt.datetime(2010, 12, 31, 23, 0)
        stamps = pa.array([local] * n, pa.timestamp("us", tz="America/New_York"))
        aware = good.set_column(good.schema.get_field_index("origin"), "origin", stamps)
        r = door.post(aware, "aware-origin")
        assert r.status_code == 201, r.text

        # a body that is not parquet: a 4xx that names no server path
        r = door.post(b"not parquet at all", "junk")
        assert r.status_code in (400, 422)
        assert str(served.upload_dir) not in r.text and "/tmp" not in r.text
        assert _stored(client) == 4


def test_round_files_count_against_the_daily_limit(served: Settings) -> None:
    with TestClient(create_app(served)) as client:
        door = _door(client, "capped", daily_limit=2)
        good = _gaussian(served)
        assert door.post(good, "first").status_code == 201
        upload = client.post(
            "/api/v1/submissions",
            headers=door.auth,
            data={
                "name": "static-one",
                "training_cutoff": "2009Q4",
                "leakage_statement": "none",
            },
            files={"file": ("f.parquet", _bytes(good), "application/octet-stream")},
        )
        assert upload.status_code == 202, upload.text  # the second of the day
        over = door.post(_with(good, "prediction", [0.5] * good.num_rows), "third")
        assert over.status_code == 429 and "rounds count too" in over.json()["detail"]
        assert _stored(client) == 1


def test_concurrent_submissions_under_one_name_answer_409_never_500(served: Settings) -> None:
    with TestClient(create_app(served)) as client:
        door = _door(client, "racer")
        good = _gaussian(served)
        files = [_with(good, "prediction", [0.1 * k] * good.num_rows) for k in range(6)]
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            codes = sorted(r.status_code for r in pool.map(lambda t: door.post(t, "same"), files))
        assert codes == [201, 409, 409, 409, 409, 409], codes
        assert _stored(client) == 1


def test_a_stopped_servers_leftovers_are_swept_at_start(served: Settings) -> None:
    folder = Path(served.upload_dir)
    folder.mkdir(parents=True, exist_ok=True)
    left = [folder / "upload-0123456789abcdef.partial", folder / "upload-feed-0000.parquet"]
    for path in left:
        path.write_bytes(os.urandom(64))
    other = folder / "notes.txt"  # not the server's: never touched
    other.write_text("keep")
    with TestClient(create_app(served)):
        assert not any(p.exists() for p in left)
        assert other.exists()


def test_the_sweep_keeps_the_files_of_unfinished_jobs(wh, tmp_path: Path) -> None:
    from proforma.app.api.job_store import NewJob, insert_job

    folder = tmp_path / "uploads"
    folder.mkdir()
    queued = folder / "upload-aaaa-1111.parquet"
    queued.write_bytes(b"PAR1")
    orphan = folder / "upload-bbbb-2222.parquet"
    orphan.write_bytes(b"PAR1")
    user, _ = add_user(wh, "keeper")
    insert_job(wh, NewJob(user.user_id, "m", "gaussian", None, {}, queued, 4, "x" * 64))
    removed = sweep_upload_dir(wh, folder)
    assert removed == [orphan] and queued.exists()
    assert np.array_equal(sorted(p.name for p in folder.iterdir()), [queued.name])


def test_a_file_damaged_past_its_footer_is_refused_and_writes_nothing(wh, tmp_path: Path) -> None:
    from rounds_helpers import open_tiny_round

    from proforma.app.rounds import submit_file
    from proforma.contracts.errors import ValidationError

    rnd = open_tiny_round(wh, tmp_path / "rounds")
    cells = pq.read_table(tmp_path / "rounds" / rnd["name"] / f"cells__{rnd['name']}.parquet")
    n = cells.num_rows
    table = cells.append_column("prediction", pa.array(np.linspace(-1, 1, n))).append_column(
        "sigma", pa.array(np.linspace(0.5, 1.5, n))
    )
    path = tmp_path / "damaged.parquet"
    pq.write_table(table, path, row_group_size=n // 4, compression="snappy")
    raw = bytearray(path.read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little") + 8  # the footer and its length stay
    end = len(raw) - footer
    raw[4:end] = os.urandom(end - 4)  # every data page after the magic bytes
    path.write_bytes(bytes(raw))
    before = wh.scalar("SELECT count(*) FROM rounds.submissions")
    with pytest.raises(ValidationError, match="not a readable parquet file") as refused:
        submit_file(wh, rnd["name"], path, "damaged")
    assert str(tmp_path) not in str(refused.value)
    assert wh.scalar("SELECT count(*) FROM rounds.submissions") == before
