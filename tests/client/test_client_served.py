"""The client against a real `proforma serve` (conftest.served): a checked upload
followed to its scores and ranks, a retry after a dropped connection that stores one
submission and costs one upload, the server's answer to a repeated idempotency key, a
round submission, every read, every error a user meets, the command line and the
example script of docs/client.md."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from proforma.client import (
    BadToken,
    Client,
    Conflict,
    FileRefused,
    Forbidden,
    LimitReached,
    ServerBusy,
    Unreachable,
    load_config,
)
from proforma.client.http import Http
from tests.client.conftest import ROOT, DroppingProxy, Served, free_port

FORM = {"training_cutoff": "2009Q4", "leakage_statement": "none"}


def _file(served: Served, name: str, **mutate: pa.Array) -> Path:
    """The test cells' forecast file (conftest.seed_submissions), columns replaced."""
    table = pq.read_table(served.folder / "cells.parquet")
    for column, values in mutate.items():
        table = table.set_column(table.column_names.index(column), column, values)
    path = served.folder / f"{name}.parquet"
    pq.write_table(table, path)
    return path


def _unknown_firms(served: Served, name: str) -> Path:
    rows = pq.read_metadata(served.folder / "cells.parquet").num_rows
    return _file(served, name, firm=pa.array(["999999"] * rows))


def _quick(client: Client) -> Client:
    client.retry_waits = (0.05, 0.1, 0.2)
    client.http.sleep = lambda s: None
    return client


def test_submit_checks_sends_follows_and_ranks(served: Served) -> None:
    events: list[str] = []
    progress: list[tuple[int, int]] = []
    path = _file(served, "alice")
    with Client(served.url, served.tokens["alice"]) as pf:
        report = pf.check(path)
        assert report.rows > 0 and report.family == "gaussian" and not report.warnings
        done = pf.submit(
            path,
            "alice-model",
            training_cutoff="2009Q4",
            leakage_statement="none",
            on_event=events.append,
            on_progress=lambda sent, total: progress.append((sent, total)),
        )
        assert done.job["status"] == "done" and not done.repeated
        assert done.submission_id is not None and "full" in done.scores
        assert done.scores["full"]["coverage"] == 1.0 and "r2" in done.scores["full"]
        rank, of = done.ranks["full"]["squared"]
        assert 1 <= rank <= of
        # the job's states as they came, and the bytes as they went
        assert events[0].startswith("checked alice.parquet")
        assert events[-1].startswith(f"job {done.job_id}: done (Scored on full")
        assert progress[-1] == (path.stat().st_size, path.stat().st_size)
        # reads of the scored submission: its record, its scores at every level
        record = pf.submission(done.submission_id)
        assert record["submission"]["name"] == "alice-model"
        by_horizon = pf.scores(done.submission_id, "horizon")
        horizons = set(pq.read_table(path, columns=["horizon"])["horizon"].to_pylist())
        assert set(by_horizon["horizon"].to_pylist()) == horizons
        # its forecasts back as the published submission file, with the family sidecar
        out = served.folder / "out" / "alice-back.parquet"
        out.parent.mkdir(exist_ok=True)
        pf.forecasts(done.submission_id, out)
        back = pq.read_table(out)
        assert back.column_names == ["firm", "target", "origin", "horizon", "prediction", "sigma"]
        assert back.num_rows == pq.read_metadata(path).num_rows
        assert pa.types.is_timestamp(back.schema.field("origin").type)
        assert out.with_name("alice-back.nll.json").read_text().strip() == '{"family": "gaussian"}'
        assert pf.check(out).rows == back.num_rows  # what comes out goes back in


def test_a_dropped_connection_is_retried_into_one_submission(served: Served) -> None:
    """The answer to the upload is lost after the server stored the file: the client
    finds the job by its key instead of sending again; one job, one upload counted."""
    proxy = DroppingProxy(int(served.url.rsplit(":", 1)[1]), drops=1)
    events: list[str] = []
    try:
        with _quick(Client(proxy.url, served.tokens["carol"])) as pf:
            done = pf.submit(
                _file(served, "carol"),
                "carol-model",
                training_cutoff="2009Q4",
                leakage_statement="none",
                on_event=events.append,
            )
            me = pf.me()
    finally:
        proxy.close()
    assert proxy.dropped == 1 and done.repeated and done.job["status"] == "done"
    assert any(e.startswith("network:") for e in events)
    assert me["uploads_today"] == 1 and me["uploads_left_today"] == 1
    with Client(served.url, served.tokens["carol"]) as pf:
        assert len(pf.jobs()) == 1
        names = pf.submissions()["name"].to_pylist()
    assert names.count("carol-model") == 1


def test_the_server_answers_a_repeated_key_with_its_job(served: Served) -> None:
    """A second POST with the key (the client's retry when the first got through
    unseen) gets the first job back, past the daily limit; another file under the key is
    refused; a new upload past the limit is refused with when it resets."""
    path = _file(served, "dave")
    auth = {"Authorization": f"Bearer {served.tokens['dave']}"}

    def post(data: bytes, key: str) -> httpx.Response:
        return httpx.post(
            f"{served.url}/api/v1/submissions",
            headers={**auth, "Idempotency-Key": key},
            data={"name": "dave-model", **FORM},
            files={"file": ("f.parquet", data, "application/octet-stream")},
            timeout=60,
        )

    first = post(path.read_bytes(), "dave-upload-0001")
    again = post(path.read_bytes(), "dave-upload-0001")
    assert first.status_code == again.status_code == 202, again.text
    assert again.json()["job_id"] == first.json()["job_id"] and again.json()["repeated"]
    assert again.json()["status"] in ("queued", "validating", "scoring", "done")
    other = pq.read_table(path).slice(0, 10)
    buf = io.BytesIO()
    pq.write_table(other, buf)
    taken = post(buf.getvalue(), "dave-upload-0001")
    assert taken.status_code == 409 and "another file" in taken.json()["detail"]
    assert post(path.read_bytes(), "bad key!").status_code == 400
    with Client(served.url, served.tokens["dave"]) as pf:
        assert pf.me()["uploads_today"] == 1
        with pytest.raises(LimitReached) as limit:
            pf.submit(
                path, "dave-other", training_cutoff="2009Q4", leakage_statement="none", check=False
            )
        pf.follow(first.json()["job_id"])
    assert "resets at 00:00 UTC" in str(limit.value) and limit.value.resets_at.hour == 0
    assert not list((served.folder / "uploads").glob("upload-*"))  # no file left behind


def test_racing_repeats_of_a_key_make_one_job(served: Served) -> None:
    """Four requests with one key at once (a client and its retries racing): one job,
    one upload counted (erin may make one a day), every answer that job or a 409, never
    a 500 nor a second job."""
    from concurrent.futures import ThreadPoolExecutor

    data = _file(served, "erin").read_bytes()

    def post(_: int) -> httpx.Response:
        return httpx.post(
            f"{served.url}/api/v1/submissions",
            headers={
                "Authorization": f"Bearer {served.tokens['erin']}",
                "Idempotency-Key": "erin-race-0001",
            },
            data={"name": "erin-model", **FORM},
            files={"file": ("f.parquet", data, "application/octet-stream")},
            timeout=60,
        )

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(post, range(4)))
    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) <= {202, 409} and statuses[0] == 202, [a.text for a in answers]
    assert len({a.json()["job_id"] for a in answers if a.status_code == 202}) == 1
    with Client(served.url, served.tokens["erin"]) as pf:
        assert len(pf.jobs()) == 1 and pf.me()["uploads_today"] == 1


def test_a_round_submission_and_the_round_reads(served: Served) -> None:
    cells = pq.read_table(served.folder / "rounds" / "2010Q4" / "cells__2010Q4.parquet")
    path = served.folder / "round.parquet"
    pq.write_table(cells.append_column("prediction", pa.array([0.0] * cells.num_rows)), path)
    with Client(served.url, served.tokens["alice"]) as pf:
        used = pf.me()["uploads_today"]
        key = "alice-round-0001"
        done = pf.submit_round("2010Q4", path, "alice-round", idempotency_key=key)
        assert done.record is not None and done.record["rows"] == cells.num_rows
        # the same upload again (a retry): its job and record, nothing counted twice
        again = pf.submit_round("2010Q4", path, "alice-round", idempotency_key=key)
        assert (again.job_id, again.record) == (done.job_id, done.record)
        assert pf.me()["uploads_today"] == used + 1
        with pytest.raises(Conflict):  # a new upload under the name
            pf.submit_round("2010Q4", path, "alice-round")
        rounds = pf.rounds()
        assert rounds["name"].to_pylist() == ["2010Q4"]
        one = pf.round("2010Q4")
        assert one["round"]["state"] == "open"
        assert "alice-round" in {m["name"] for m in one["models"]}
        assert isinstance(pf.live(), pa.Table)


def test_every_read(served: Served, tmp_path: Path) -> None:
    with Client(served.url) as pf:  # public reads need no token
        index = pf.leaderboards()
        assert {t["name"] for t in index["tracks"]} >= {"squared", "absolute", "density"}
        board = pf.leaderboard("full", "absolute", "horizon")
        assert {"rank", "model", "submission_id"} <= set(board.column_names)
        assert pf.footprints().num_rows >= 1
        assert "items" in pf.tables()
        keys = pf.keys()
        assert len(keys["items"]) == 78 and keys["test_origins"] and "firms" in keys
        sql = "SELECT statement, count(*) AS n FROM items GROUP BY ALL ORDER BY ALL"
        answer = pf.query(sql)
        local = pf.snapshot(tmp_path / "public.duckdb")
    # the console's answer and the same SQL on the downloaded snapshot agree
    with duckdb.connect(str(local), read_only=True) as con:
        assert con.sql(sql).to_arrow_table().to_pylist() == answer.to_pylist()
    assert sum(r["n"] for r in answer.to_pylist()) >= 78
    assert pd_or_none(answer)


def pd_or_none(table: pa.Table) -> bool:
    """Arrow tables turn into pandas frames where pandas is installed."""
    try:
        import pandas  # noqa: F401
    except ImportError:
        return True
    return list(table.to_pandas().columns) == table.column_names


def test_every_error_a_user_meets(served: Served) -> None:
    bad = _unknown_firms(served, "bad")
    nowhere = _quick(Client(f"http://127.0.0.1:{free_port()}", "x"))
    with nowhere as pf, pytest.raises(Unreachable, match="Cannot reach the server"):
        pf.me()
    with Client(served.url, "not-a-token") as pf, pytest.raises(BadToken, match="refused"):
        pf.me()
    with Client(served.url) as pf, pytest.raises(BadToken, match="needs a token"):
        pf.me()
    with Client(served.url, served.tokens["alice"]) as pf:
        # refused here, by the server's own checks, and there, for the same reason
        with pytest.raises(FileRefused) as here:
            pf.check(bad)
        with pytest.raises(FileRefused) as there:
            pf.submit(
                bad, "alice-bad", training_cutoff="2009Q4", leakage_statement="none", check=False
            )
        assert [p["problem"] for p in here.value.problems if p["severity"] == "error"] == [
            p["problem"] for p in there.value.problems if p["severity"] == "error"
        ]
        assert "unknown firm" in here.value.problems[0]["problem"]
        with pytest.raises(FileRefused, match="training_cutoff"):
            pf.check(bad, form={"name": "x", "training_cutoff": "soon", "leakage_statement": "n"})
        # forecasts: another user's upload, an in-house model's (not shared here)
        ids = {r["name"]: r["submission_id"] for r in pf.submissions().to_pylist()}
        with pytest.raises(Forbidden, match="another user"):
            pf.forecasts(ids["bob-model"], served.folder / "nope.parquet")
        with pytest.raises(Forbidden, match="SHARE_INHOUSE"):
            pf.forecasts(ids["house-model"], served.folder / "nope.parquet")
    # the SQL console's bounds (bursts of 3, then 1 a minute per client address): the busy
    # server, met from an address of its own (127.0.0.2), so other tests' queries pass
    own_address = httpx.HTTPTransport(local_address="127.0.0.2")
    http = Http(load_config(served.url), transport=own_address)
    with Client(http=http) as pf, pytest.raises(ServerBusy) as busy:
        for _ in range(5):
            pf.query("SELECT 1")
    assert busy.value.retry_after_s and busy.value.retry_after_s > 0


def _cli(served: Served, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PROFORMA_")},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "COLUMNS": "200",
    }
    return subprocess.run(
        [sys.executable, "-m", "proforma.app.cli", "remote", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_line(served: Served, tmp_path: Path) -> None:
    token = served.tokens["alice"]
    login = _cli(served, tmp_path, "login", "--server", served.url, "--token", token)
    assert login.returncode == 0, login.stderr
    config = tmp_path / ".config" / "proforma" / "client.json"
    assert config.stat().st_mode & 0o777 == 0o600
    assert token not in login.stdout + login.stderr
    board = _cli(served, tmp_path, "board", "full", "--format", "csv")
    assert board.returncode == 0 and board.stdout.splitlines()[0].startswith('"rank"')
    assert "bob-model" in board.stdout
    checked = _cli(served, tmp_path, "check", str(served.folder / "cells.parquet"))
    assert checked.returncode == 0 and "passes the server's checks" in checked.stderr
    refused = _cli(served, tmp_path, "check", str(_unknown_firms(served, "cli-bad")))
    assert refused.returncode == 2 and "unknown firm" in refused.stderr
    submitted = _cli(
        served,
        tmp_path,
        "submit",
        str(served.folder / "cells.parquet"),
        *("--name", "alice-cli", "--training-cutoff", "2009Q4", "--leakage-statement", "none"),
    )
    assert submitted.returncode == 0, submitted.stderr
    assert "rank squared" in submitted.stdout and "scored (job" in submitted.stderr
    jobs = _cli(served, tmp_path, "jobs", "--format", "csv")  # a job's report is nested
    assert jobs.returncode == 0 and jobs.stdout.startswith('"job_id"'), jobs.stderr
    config.chmod(0o644)
    loose = _cli(served, tmp_path, "me")
    assert loose.returncode == 2 and "chmod 600" in loose.stderr


def test_the_example_script_scores_a_submission(served: Served) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PROFORMA_")},
        "PROFORMA_SERVER": served.url,
        "PROFORMA_TOKEN": served.tokens["admin"],
    }
    run = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "examples" / "client_quickstart.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "full squared: rank" in run.stdout
