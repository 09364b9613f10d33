"""One row must not stop scoring for everyone (issue 34, item 1): a sigma no 32-bit float
holds is refused at validation; a submission whose scoring fails all the same fails its
own job only (retired, not listed, its name free), health says `degraded` until a clean
pass, and the next good upload is scored."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from fastapi.testclient import TestClient
from service_helpers import Api, submission_bytes

from proforma.app.api.job_queue import Scorer
from proforma.app.scoring.submissions.store import forecast_relation, stored_file
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse


def _published_rules(wh: Warehouse) -> None:
    """A build with the published rules: sigma is scored as a 32-bit float (sql/eval/050)."""
    wh.execute(
        "INSERT INTO meta.builds (status, sql_checksum, parameters, reg_stats, started_at) "
        "VALUES ('succeeded', 'test', '{\"rules\": \"published\"}', 'estimate', now())"
    )


def test_a_sigma_beyond_float_range_is_refused(api: Api) -> None:
    table = pq.read_table(io.BytesIO(submission_bytes(api.wh)))
    sigma = table["sigma"].to_pylist()
    sigma[0] = 1e39
    buf = io.BytesIO()
    pq.write_table(table.set_column(5, "sigma", pa.array(sigma)), buf)
    job = api.wait(api.upload(buf.getvalue(), name="poison").json()["job_id"])
    assert job["status"] == "failed"
    assert "outside [1.2e-38, 3.4e38]" in job["message"]
    assert api.wh.scalar("SELECT count(*) FROM eval.submissions") == 0


class _GapInTheChecks(Scorer):
    """Ingests as the service does, then stores one value the scoring SQL cannot hold in
    the submission named 'poison' (as a gap in the checks, or an older release, would)."""

    def ingest_parquet(self, wh: Warehouse, path: Path, name: str, **kw: Any) -> int:
        sid = super().ingest_parquet(wh, path, name, **kw)
        if name == "poison":
            _poison_stored(wh, sid)
        return sid


def _poison_stored(wh: Warehouse, sid: int) -> None:
    """A sigma of 1e39 in the first row of the upload's file in the upload store (issue
    31: a density upload is a file there), its record updated so the file reads intact."""
    rec = stored_file(wh, sid)
    assert rec is not None, "the upload is not kept in the upload store"
    table = pq.read_table(rec["path"])
    sigma = table["sigma"].to_pylist()
    sigma[0] = 1e39
    at = table.schema.get_field_index("sigma")
    pq.write_table(table.set_column(at, "sigma", pa.array(sigma, pa.float64())), rec["path"])
    wh.execute(
        "UPDATE eval.submission_files SET bytes = ? WHERE submission_id = ?",
        [Path(rec["path"]).stat().st_size, sid],
    )


def test_a_submission_that_cannot_be_scored_fails_alone(panel: Settings) -> None:
    with TestClient(create_app(panel, scorer=_GapInTheChecks())) as client:
        api = Api(client)
        _published_rules(api.wh)
        first = api.wait(api.upload(submission_bytes(api.wh), name="first").json()["job_id"])
        assert first["status"] == "done", first
        bad = api.wait(api.upload(submission_bytes(api.wh, seed=1), name="poison").json()["job_id"])
        assert bad["status"] == "failed"
        assert "could not be scored" in bad["message"] and "Conversion" in bad["message"]
        health = client.get("/api/v1/health").json()
        assert health["status"] == "degraded" and health["scoring"]["status"] == "failing"
        assert (
            health["scoring"]["last_failure"]["failures"][0]["submission_id"]
            == bad["submission_id"]
        )
        # No active submission is left behind, nor a public record; the name is free.
        wh = api.wh
        assert wh.scalar(
            "SELECT retired_at IS NOT NULL FROM eval.submissions WHERE submission_id = ?",
            [bad["submission_id"]],
        )
        assert (
            wh.scalar(
                "SELECT count(*) FROM eval.forecasts WHERE submission_id = ?",
                [bad["submission_id"]],
            )
            == 0
        )
        names = {s["name"] for s in client.get("/api/v1/submissions").json()["rows"]}
        assert "poison" not in names and "first" in names
        # The next good upload is scored, and the pass is clean again.
        good = api.wait(
            api.upload(submission_bytes(api.wh, seed=2), name="second").json()["job_id"]
        )
        assert good["status"] == "done", good
        board = {r["model"] for r in client.get("/api/v1/leaderboards/full").json()["rows"]}
        assert {"first", "second"} <= board and "poison" not in board
        assert client.get("/api/v1/health").json()["status"] == "ok"
        again = api.wait(
            api.upload(submission_bytes(api.wh, seed=3), name="poison").json()["job_id"]
        )
        assert again["status"] == "failed"  # (the same gap again; the name was free)


def test_a_stored_poison_row_does_not_stop_later_uploads(panel: Settings) -> None:
    """A poisoned submission already in the warehouse (not an upload: no job to fail) is
    left out of every run; uploads keep scoring, and a restart changes nothing."""
    with TestClient(create_app(panel)) as client:
        api = Api(client)
        _published_rules(api.wh)
        first = api.wait(api.upload(submission_bytes(api.wh), name="first").json()["job_id"])
        assert first["status"] == "done"
        wh = api.wh
        poison = wh.scalar(
            "INSERT INTO eval.submissions SELECT * REPLACE (999 AS submission_id, "
            "'stored poison' AS name, 'model' AS source) FROM eval.submissions "
            "WHERE submission_id = ? RETURNING submission_id",
            [first["submission_id"]],
        )
        # the first upload's rows (a file in the upload store) as a model's table rows
        source = forecast_relation(wh, first["submission_id"])
        wh.execute(
            f"INSERT INTO eval.forecast_rows SELECT * REPLACE (? AS submission_id) FROM {source}",
            [poison],
        )
        wh.execute(
            "UPDATE eval.forecast_rows SET sigma = 1e39 WHERE submission_id = ? AND "
            "rowid = (SELECT min(rowid) FROM eval.forecast_rows WHERE submission_id = ?)",
            [poison, poison],
        )
    with TestClient(create_app(panel)) as client:
        api = Api.__new__(Api)
        api.client = client
        api.token = _token(api, "bob")
        job = api.wait(api.upload(submission_bytes(api.wh, seed=5), name="later").json()["job_id"])
        assert job["status"] == "done", job
        board = {r["model"] for r in client.get("/api/v1/leaderboards/full").json()["rows"]}
        assert "later" in board and "stored poison" not in board
        assert api.wh.scalar("SELECT list(submission_id) FROM eval.submission_failures") == [999]


def _token(api: Api, name: str) -> str:
    from proforma.app.api.auth import add_user

    wh = api.wh
    _, token = add_user(wh, name)
    wh.close()
    return token
