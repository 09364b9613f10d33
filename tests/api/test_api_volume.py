"""Publishing stays flat as uploads accrue (issue 34, item 3): an upload rescores only the
footprints it enters, the snapshot holds each footprint's latest runs only (older ones
stay in the warehouse, readable by id), and the server answers before its first
publication. (Timings: bench/upload_volume.py.)"""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path

import duckdb
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient
from service_helpers import Api, submission_bytes

from proforma.app.read.snapshot import publish
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings, get_settings


@pytest.fixture
def short_history(panel: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("PROFORMA_PUBLIC_HISTORY_RUNS", "1")
    get_settings.cache_clear()
    return get_settings()


def _runs(api: Api) -> dict[str, int]:
    return dict(api.wh.fetchall("SELECT footprint_name, count(*) FROM eval.score_runs GROUP BY 1"))


def test_only_entered_footprints_are_rescored_and_history_is_bounded(
    short_history: Settings,
) -> None:
    with TestClient(create_app(short_history)) as client:
        api = Api(client)
        first = api.wait(api.upload(submission_bytes(api.wh), name="everything").json()["job_id"])
        assert first["status"] == "done"
        second = api.wait(
            api.upload(submission_bytes(api.wh, seed=1), name="again").json()["job_id"]
        )
        assert second["status"] == "done"
        before = _runs(api)
        table = pq.read_table(io.BytesIO(submission_bytes(api.wh, seed=2)))
        only_atq = table.filter(pc.equal(table["target"], "atq"))
        buf = io.BytesIO()
        pq.write_table(only_atq, buf)
        job = api.wait(api.upload(buf.getvalue(), name="atq-only").json()["job_id"])
        assert job["status"] == "done" and "Not on" in job["message"]
        after = _runs(api)
        skipped = set(job["report"]["footprints_skipped"])
        assert {"full", "geert"} <= skipped
        for footprint in skipped:  # no run where the board would not change
            assert after[footprint] == before[footprint], footprint
        # The snapshot holds the latest run of each footprint; older runs are read by id.
        body = client.post(
            "/api/v1/query",
            json={"sql": "SELECT footprint_name, count(*) AS n FROM score_runs GROUP BY 1"},
        ).json()
        assert {r[1] for r in body["rows"]} == {1}
        old = api.wh.scalar(
            "SELECT min(score_run_id) FROM eval.score_runs WHERE footprint_name = 'full'"
        )
        r = client.get(f"/api/v1/leaderboards/full?run={old}")
        assert r.status_code == 200 and r.json()["score_run"]["score_run_id"] == old
        assert "everything" in {row["model"] for row in r.json()["rows"]}
        assert client.get("/api/v1/leaderboards/full?run=999999").status_code == 404
        # Runs reference the results of submissions scored before (no copies), and the
        # snapshot holds each group's tests against its leader only (k - 1, not k^2 / 2).
        latest = api.wh.scalar(
            "SELECT max(score_run_id) FROM eval.score_runs WHERE footprint_name = 'full'"
        )
        members = api.wh.scalar(
            "SELECT len(submission_ids) FROM eval.score_runs WHERE score_run_id = ?", [latest]
        )
        assert members >= 3
        copied = api.wh.scalar(
            "SELECT count(*) FROM eval.run_results WHERE score_run_id = ? AND from_run <> ?",
            [latest, latest],
        )
        written = api.wh.scalar(
            "SELECT count(DISTINCT submission_id) FROM eval.metric_rows WHERE score_run_id = ?",
            [latest],
        )
        assert copied + written == members and copied >= 1
        body = client.post(
            "/api/v1/query",
            json={
                "sql": "SELECT loss, horizon, count(*) AS n FROM dm_tests "
                f"WHERE score_run_id = {latest} GROUP BY ALL"
            },
        ).json()
        assert body["rows"] and {r[2] for r in body["rows"]} == {members - 1}


_METRIC_KEY = "score_run_id, submission_id, level, horizon, item, statement"


def _snapshot_rows(path: Path, table: str, key: str) -> dict[tuple, tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        cols = [r[0] for r in con.execute(f"DESCRIBE {table}").fetchall()]
        n_key = len(key.split(","))
        rest = [c for c in cols if c not in {k.strip() for k in key.split(",")}]
        rows = con.execute(f"SELECT {key}, {', '.join(rest)} FROM {table}").fetchall()
    return {tuple(r[:n_key]): tuple(r[n_key:]) for r in rows}


def test_the_snapshot_keeps_detail_for_the_top_of_the_board_only(
    panel: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Per-item detail only for the in-house submissions and the top N of each track; every
    submission keeps its headline rows, with the numbers a wide publication gives."""
    monkeypatch.setenv("PROFORMA_PUBLIC_DETAIL_TOP", "1")
    get_settings.cache_clear()
    settings = get_settings()
    with TestClient(create_app(settings)) as client:
        api = Api(client)
        # (far apart: the public numbers carry the uploads' noise, and the ranking is theirs)
        for seed, noise in enumerate((0.1, 0.8, 1.5)):
            job = api.upload(submission_bytes(api.wh, seed=seed, noise=noise), name=f"u{seed}")
            assert api.wait(job.json()["job_id"])["status"] == "done"
        wh = api.wh
        narrow = Path(os.path.realpath(settings.public_snapshot))
        wide_settings = dataclasses.replace(
            settings, public_detail_top=1000, public_snapshot=tmp_path / "wide.duckdb"
        )
        wide = Path(os.path.realpath(publish(wh, wide_settings).version))
        run = wh.scalar(
            "SELECT max(score_run_id) FROM eval.score_runs WHERE footprint_name = 'full'"
        )
        uploads = {
            int(s)
            for (s,) in wh.fetchall(
                "SELECT submission_id FROM eval.submissions WHERE source = 'upload'"
            )
        }
        house = {
            int(s)
            for (s,) in wh.fetchall(
                "SELECT submission_id FROM eval.submissions WHERE source <> 'upload' "
                "AND list_contains((SELECT submission_ids FROM eval.score_runs "
                "WHERE score_run_id = ?), submission_id)",
                [run],
            )
        }
        assert len(uploads) == 3 and house
        # the uploads with detail are those at the top of a track's ranking (R2, MAE,
        # CRPS) by the published numbers (their exact ones, compared, would tell on their
        # truth), the others have none
        with duckdb.connect(str(narrow), read_only=True) as con:
            board = con.execute(
                "SELECT submission_id, r2, mae, crps FROM leaderboard WHERE footprint = 'full'"
            ).fetchall()
        tops = {
            max(board, key=lambda r: r[1])[0],
            min(board, key=lambda r: r[2])[0],
            min((r for r in board if r[3] is not None), key=lambda r: r[3])[0],
        }
        top_uploads = tops & uploads
        got, want = (_snapshot_rows(p, "metrics", _METRIC_KEY) for p in (narrow, wide))
        for key, values in got.items():  # every row kept has the wide publication's numbers
            assert values == want[key], key
        detailed = {k[1] for k in got if k[0] == run and k[2] == "item"}
        assert house <= detailed and top_uploads <= detailed
        missing = {k for k in want if k not in got}
        assert missing and all(k[2] in ("item", "statement", "item_horizon") for k in missing)
        assert {k[1] for k in missing} == uploads - top_uploads
        # every submission of the current board keeps its global and per-horizon rows
        for sid in house | uploads:
            assert (run, sid, "global", None, None, None) in got
            assert any(k[:3] == (run, sid, "horizon") for k in got)
        # the tests against the leaders: pooled for every member, per horizon for the
        # detail members only, each with the wide publication's numbers
        dm_key = "score_run_id, submission_a, submission_b, loss, horizon"
        got_dm, want_dm = (_snapshot_rows(p, "dm_tests", dm_key) for p in (narrow, wide))
        for key, values in got_dm.items():
            assert values == want_dm[key], key
        pooled = {k for k in want_dm if k[4] == 0}
        assert pooled and pooled <= set(got_dm)
        dm_missing = {k for k in want_dm if k not in got_dm}
        current = {
            int(r)
            for (r,) in wh.fetchall(
                "SELECT max(score_run_id) FROM eval.score_runs GROUP BY footprint_name"
            )
        }
        assert dm_missing and all(k[0] in current and k[4] > 0 for k in dm_missing)
        # on this run, a per-horizon test is kept exactly when the member tested against
        # the group's leader (the one submission in every test of its group) has detail
        groups: dict[tuple, list[tuple]] = {}
        for k in want_dm:
            if k[0] == run and k[4] > 0:
                groups.setdefault((k[3], k[4]), []).append(k)
        assert groups
        kept = set()
        for tests in groups.values():
            (leader,) = set.intersection(*({k[1], k[2]} for k in tests))
            for k in tests:
                (other,) = {k[1], k[2]} - {leader}
                assert (k in got_dm) == (other in detailed), k
                kept.add(k in got_dm)
        assert kept == {True, False}  # both kinds occur on this board
        # PIT histograms of the current runs only (older runs' stay in the warehouse)
        pit_key = "score_run_id, submission_id, bin"
        got_pit, want_pit = (_snapshot_rows(p, "pit", pit_key) for p in (narrow, wide))
        assert {k[0] for k in got_pit} <= current
        assert not {k[1] for k in want_pit} & uploads  # an upload's PIT is not public
        assert got_pit == {k: v for k, v in want_pit.items() if k[0] in current}
        # and the detail left out is read from the warehouse through the API
        left_out = next(iter(uploads - top_uploads - detailed))
        body = client.get("/api/v1/leaderboards/full", params={"by": "item"}).json()
        assert any(r["submission_id"] == left_out for r in body["rows"])
        body = client.get("/api/v1/leaderboards/full", params={"by": "horizon"}).json()
        mine = [r for r in body["rows"] if r["submission_id"] == left_out]
        assert mine and all(r.get("dm_vs_leader") is None for r in mine)  # tests withheld
        assert any(r.get("dm_vs_leader") is not None for r in body["rows"])  # house vs house


def test_a_publication_from_the_cache_equals_one_computed_afresh(
    panel: Settings, tmp_path: Path
) -> None:
    """The publisher's cache of public metric and PIT rows (computed once per run and
    submission) gives the snapshot a publication without it gives, and follows the board:
    a submission that leaves the top loses its cached detail."""
    settings = dataclasses.replace(panel, public_detail_top=1)
    with TestClient(create_app(settings)) as client:
        api = Api(client)
        for seed, noise in enumerate((0.9, 0.6, 0.1)):  # each upload leads the board
            job = api.upload(submission_bytes(api.wh, seed=seed, noise=noise), name=f"u{seed}")
            assert api.wait(job.json()["job_id"])["status"] == "done"
        wh = api.wh
        link = Path(settings.public_snapshot)
        caches = sorted(link.parent.glob(f".{link.stem}.cache-*.duckdb"))
        assert len(caches) == 1
        with duckdb.connect(str(caches[0]), read_only=True) as con:
            detail = {
                r[0]
                for r in con.execute(
                    "SELECT submission_id FROM store.metrics WHERE part = 'detail'"
                ).fetchall()
            }
            pit_cached = {
                r[0] for r in con.execute("SELECT submission_id FROM store.pit").fetchall()
            }
        uploads = dict(
            wh.fetchall("SELECT name, submission_id FROM eval.submissions WHERE source = 'upload'")
        )
        # the detail kept: the top of each track's ranking by the public numbers
        # (each footprint's current board)
        with duckdb.connect(str(Path(os.path.realpath(link))), read_only=True) as con:
            boards: dict[str, list] = {}
            for row in con.execute(
                "SELECT footprint, submission_id, r2, mae, crps FROM leaderboard"
            ).fetchall():
                boards.setdefault(row[0], []).append(row[1:])
        top = set()
        for board in boards.values():
            top |= {
                max(board, key=lambda r: r[1])[0],
                min(board, key=lambda r: r[2])[0],
                min((r for r in board if r[3] is not None), key=lambda r: r[3])[0],
            }
        assert detail & set(uploads.values()) == top & set(uploads.values())
        assert not set(uploads.values()) & pit_cached  # an upload's PIT is not public
        warm = Path(os.path.realpath(publish(wh, settings).version))
        # the snapshot starts as a copy of the store: its rows are there once each, all
        # publishable, without the store's bookkeeping
        with duckdb.connect(str(warm), read_only=True) as con:
            stored = {
                t
                for (t,) in con.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'store'"
                ).fetchall()
            }
            assert stored == {"metrics", "pit", "run_members"}
            small = con.execute(
                "SELECT count(*) FROM store.metrics WHERE n < ?", [settings.public_min_cells]
            ).fetchall()
            assert small == [(0,)]
            twice = con.execute(
                "SELECT count(*) FROM (SELECT score_run_id, submission_id, level, horizon, "
                "item_id, statement FROM store.metrics GROUP BY ALL HAVING count(*) > 1)"
            ).fetchall()
            assert twice == [(0,)]
        for path in caches:
            path.unlink()
        cold = Path(os.path.realpath(publish(wh, settings).version))
        for table, key in (
            ("metrics", _METRIC_KEY),
            ("pit", "score_run_id, submission_id, bin"),
            ("dm_tests", "score_run_id, submission_a, submission_b, loss, horizon"),
            ("leaderboard", "footprint, submission_id"),
        ):
            got, want = _snapshot_rows(warm, table, key), _snapshot_rows(cold, table, key)
            assert got == want and (got or table == "pit"), table  # pit: no upload's
