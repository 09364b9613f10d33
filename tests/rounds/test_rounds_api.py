"""Rounds through the service: the API lists and shows rounds, takes submissions to an
open round (token) and refuses duplicates, changes and other rounds' files; the pages list
rounds and show one; the public snapshot (and so the SQL console) carries them, an
upload's numbers coarsened."""

from __future__ import annotations

import io
import json
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from rounds_helpers import grow

from proforma.app.api.auth import add_user
from proforma.app.rounds import resolve
from proforma.app.rounds.store import close_round
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import connect


def _file(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def test_rounds_api_pages_and_snapshot(served: Settings) -> None:
    cells = pq.read_table(served.warehouse.parent / "rounds" / "2010Q4" / "cells__2010Q4.parquet")
    good = cells.append_column("prediction", pa.array([0.0] * cells.num_rows))
    with TestClient(create_app(served)) as client:
        app_wh = client.app.state.wh.cursor()  # type: ignore[attr-defined]
        _, token = add_user(app_wh, "alice")
        auth = {"Authorization": f"Bearer {token}"}
        listed = client.get("/api/v1/rounds").json()["rounds"]
        assert [r["name"] for r in listed] == ["2010Q4"] and listed[0]["state"] == "open"

        def post(data: bytes, name: str, headers: dict | None = None):
            return client.post(
                "/api/v1/rounds/2010Q4/submissions",
                headers=auth if headers is None else headers,
                data={"name": name},
                files={"file": ("f.parquet", data, "application/octet-stream")},
            )

        assert post(_file(good), "alice-zero", headers={}).status_code == 401
        ok = post(_file(good), "alice-zero")
        assert ok.status_code == 201, ok.text
        assert ok.json()["rows"] == cells.num_rows
        assert post(_file(good), "alice-zero").status_code == 409
        changed = good.set_column(4, "prediction", pa.array([0.5] * good.num_rows))
        refused = post(_file(changed), "alice-zero")
        assert refused.status_code == 409 and "immutable" in refused.json()["detail"]
        wrong = good.set_column(2, "origin", pa.array(["2010Q2"] * good.num_rows))
        assert post(_file(wrong), "alice-other").status_code == 422
        assert client.get("/api/v1/rounds/nope").status_code == 404
        assert app_wh.scalar("SELECT count(*) FROM rounds.submissions WHERE kind = 'upload'") == 1
        # a Student-t file takes its df from the form
        t_file = _file(good.append_column("sigma", pa.array([1.0] * good.num_rows)))

        def post_t(name: str, df: str | None):
            return client.post(
                "/api/v1/rounds/2010Q4/submissions",
                headers=auth,
                data={"name": name, "family": "student_t", **({"df": df} if df else {})},
                files={"file": ("t.parquet", t_file, "application/octet-stream")},
            )

        no_df, bad_df = post_t("alice-t", None), post_t("alice-t", "many")
        assert no_df.status_code == 400 and "needs --df" in no_df.json()["detail"]
        assert bad_df.status_code in (400, 422) and "number" in bad_df.json()["detail"]
        t_ok = post_t("alice-t", "4")
        assert t_ok.status_code == 201, t_ok.text
        assert t_ok.json()["family"] == "student_t" and t_ok.json()["df"] == 4.0
        assert app_wh.scalar("SELECT count(*) FROM rounds.submissions WHERE kind = 'upload'") == 2

        page = client.get("/rounds")
        assert page.status_code == 200 and "2010Q4" in page.text
        one = client.get("/rounds/2010Q4")
        assert (
            one.status_code == 200
            and "round-form" in one.text
            and "Seasonal random walk" in one.text
        )
        assert client.post("/api/v1/rounds/resolve", headers=auth).status_code == 403
        app_wh.close()

    # the quarters arrive (the server stopped: one writer), the round resolves
    wh = connect(served)
    close_round(wh, "2010Q4")
    grow(wh, "2011Q2")
    assert resolve(wh)["cells_new"] > 0
    exact = wh.fetchall(
        "SELECT s.name, m.mse FROM rounds.metrics m JOIN rounds.submissions s USING "
        "(submission_id) WHERE m.horizon IS NULL"
    )
    wh.close()
    with TestClient(create_app(served)) as client:
        # the server publishes on start; wait for that publication (it holds the metrics)
        deadline = time.monotonic() + 60
        while (
            not client.post("/api/v1/query", json={"sql": "SELECT * FROM round_metrics"})
            .json()
            .get("rows")
        ):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        board = client.get("/api/v1/rounds/2010Q4").json()
        assert board["round"]["state"] == "resolving"
        models = {m["name"]: m for m in board["models"]}
        assert set(models) == {
            "Seasonal random walk",
            "Fade / AR(1)",
            "oracle",
            "alice-zero",
            "alice-t",
        }
        exact_mse = dict(exact)
        assert models["Fade / AR(1)"]["mse"] == pytest.approx(exact_mse["Fade / AR(1)"], rel=1e-12)
        # the upload's numbers are coarsened (a dither moves them), the baselines' exact
        assert models["alice-zero"]["mse"] != exact_mse["alice-zero"]
        # the noise of its grant: sigma x 144 / n (app/read/disclosure.py), within 6 sd
        cur = client.app.state.wh.cursor()  # type: ignore[attr-defined]
        try:
            sigma = cur.scalar(
                "SELECT g.sigma FROM service.upload_noise g JOIN rounds.submissions s "
                "ON g.door = 'round' AND g.submission_id = s.submission_id "
                "WHERE s.name = 'alice-zero'"
            )
        finally:
            cur.close()
        scale = sigma * 144.0 / models["alice-zero"]["n"]
        assert abs(models["alice-zero"]["mse"] - exact_mse["alice-zero"]) <= 6 * scale
        live = client.get("/api/v1/rounds/live").json()["models"]
        assert {m["name"] for m in live} >= {"Fade / AR(1)", "alice-zero"}

        def sql(text: str) -> dict:
            out = client.post("/api/v1/query", json={"sql": text})
            assert out.status_code == 200, out.text
            return out.json()

        public = dict(
            map(tuple, sql("SELECT model, mse FROM round_metrics WHERE horizon IS NULL")["rows"])
        )
        assert public["Fade / AR(1)"] == pytest.approx(exact_mse["Fade / AR(1)"], rel=1e-12)
        assert public["alice-zero"] == models["alice-zero"]["mse"]
        assert sql("SELECT count(*) FROM rounds")["rows"] == [[1]]
        columns = set()
        for table in ("rounds", "round_resolution", "round_entries", "round_metrics"):
            columns |= set(sql(f"SELECT * FROM {table} LIMIT 1")["columns"])
        assert "checksum" in columns
        assert not columns & {"actual", "baseline", "mu", "sigma", "gvkey"}
    assert json.dumps(board)  # plain JSON
