"""Bounded loopback load on the service: parallel uploads plus leaderboard readers.

    .venv/bin/python bench/load.py [--firms 80] [--uploads 8] [--uploaders 2]
                                   [--readers 4] [--max-seconds 900] [--dir /tmp/proforma-load]

Sets up a fresh warehouse (synthetic panel of --firms firms, the real build), writes the
submission files while the warehouse is still free, then starts `proforma serve` on
127.0.0.1 (a free port; nothing but loopback is ever contacted). --uploaders threads
upload --uploads files in total while --readers threads read the leaderboard (JSON, CSV
and page), the submissions list and the public SQL endpoint until every job has ended or
--max-seconds pass. Prints p50/p99/max latency per request kind and confirms nothing was
lost: every accepted upload's job is done, its submission is listed once, and it is on
the full leaderboard. Jobs still running at the time bound are reported as unfinished
(they resume when the server starts again). Exits 1 if anything was lost or unfinished,
or any request failed.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HOST = "127.0.0.1"  # loopback only, by construction
PROFORMA = [sys.executable, "-c", "from proforma.app.cli import main; main()"]


def _run(cmd: list[str], env: dict[str, str]) -> str:
    out = subprocess.run(cmd, check=False, env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def scratch_env(folder: Path, **extra: str) -> dict[str, str]:
    """The environment of a `proforma` whose warehouse, caches, uploads and snapshot all
    live in `folder` (PROFORMA_* overrides in `extra`)."""
    names = {
        "WAREHOUSE": "warehouse.duckdb",
        "TEMP_DIRECTORY": "tmp",
        "CACHE_DIR": "cache",
        "MODELS_DIR": "models",
        "UPLOAD_DIR": "uploads",
        "PUBLIC_SNAPSHOT": "public.duckdb",
    }
    env = {**os.environ, **{f"PROFORMA_{k}": str(folder / v) for k, v in names.items()}}
    return env | {f"PROFORMA_{k}": v for k, v in extra.items()}


def start_server(folder: Path, env: dict[str, str]) -> tuple[subprocess.Popen, IO[bytes], str]:
    """`proforma serve` on a free loopback port, logging to folder/server.log, once its
    health answers: (process, log, base URL)."""
    import httpx

    port = _free_port()
    base = f"http://{HOST}:{port}"
    log = open(folder / "server.log", "wb")  # noqa: SIM115 - closed by stop_server
    server = subprocess.Popen(
        [*PROFORMA, "serve", "--host", HOST, "--port", str(port), "--log-level", "warning"],
        env=env,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200:
                return server, log, base
        except httpx.HTTPError:
            time.sleep(0.2)
    stop_server(server, log)
    raise SystemExit(f"the server did not start; see {folder / 'server.log'}")


def stop_server(server: subprocess.Popen, log: IO[bytes]) -> None:
    """SIGTERM to the server's process group, SIGKILL after 60 s."""
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
    log.close()


def test_cells(env: dict[str, str]):
    """The built panel's test truth cells in the submission file's keys, with baseline and
    actual (read-only, while no server holds the warehouse)."""
    from proforma.app.store.settings import Settings
    from proforma.app.store.warehouse import connect

    settings = Settings(
        warehouse=Path(env["PROFORMA_WAREHOUSE"]),
        temp_directory=Path(env["PROFORMA_TEMP_DIRECTORY"]),
    )
    with connect(settings, read_only=True) as wh:
        return wh.arrow(
            "SELECT f.gvkey AS firm, i.item AS target, qlabel(t.origin_q) AS origin, "
            "CAST(t.horizon AS INTEGER) AS horizon, t.baseline, t.actual "
            "FROM panel.truth t JOIN panel.firms f USING (firm_id) "
            "JOIN ref.items i USING (item_id) WHERE t.split = 'test'"
        )


def _submission_files(env: dict[str, str], n: int) -> list[bytes]:
    """n submission files from the built panel's test cells (baseline + shrunk change + noise)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    cells = test_cells(env)
    base = cells["baseline"].to_numpy()
    change = cells["actual"].to_numpy() - base
    files = []
    for k in range(n):
        rng = np.random.default_rng(k)
        pred = base + rng.uniform(0.2, 0.8) * change + rng.normal(0, 0.3, len(base))
        table = pa.table(
            {
                "firm": cells["firm"],
                "target": cells["target"],
                "origin": cells["origin"],
                "horizon": cells["horizon"],
                "prediction": pred,
                "sigma": np.full(len(base), 0.4 + 0.05 * k),
            }
        )
        buf = io.BytesIO()
        pq.write_table(table, buf)
        files.append(buf.getvalue())
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--firms", type=int, default=80)
    ap.add_argument("--uploads", type=int, default=8)
    ap.add_argument("--uploaders", type=int, default=2)
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/proforma-load"))
    args = ap.parse_args()
    if args.uploads > 200 or args.readers > 32 or args.uploaders > 16:
        raise SystemExit("Bounded load: at most 200 uploads, 16 uploaders and 32 readers.")

    import httpx

    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    # The readers share one address: the console's per-client limits (bench/console_load.py
    # measures those) are lifted so that this measures uploads beside reads.
    env = scratch_env(
        args.dir,
        UPLOADS_PER_DAY=str(args.uploads + 1),
        QUERY_PER_CLIENT="1000",
        QUERY_RATE_PER_MIN="1000000",
        QUERY_BURST="1000000",
    )
    proforma = PROFORMA
    t0 = time.perf_counter()
    _run([*proforma, "ingest", "synthetic", "--firms", str(args.firms)], env)
    _run([*proforma, "build"], env)
    _run([*proforma, "score"], env)  # the reference baselines: a leaderboard from the start
    added = re.search(
        r"(pf_[0-9a-f]{12}\.[A-Za-z0-9_-]+)", _run([*proforma, "users", "add", "loadtest"], env)
    )
    assert added is not None, "`proforma users add` printed no token"
    token = added.group(1)
    files = _submission_files(env, args.uploads)
    print(
        f"setup: {args.firms} firms built, {args.uploads} files of {len(files[0]) / 1e6:.1f} MB "
        f"in {time.perf_counter() - t0:.0f} s"
    )

    server, log, base = start_server(args.dir, env)
    lat: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    lock = threading.Lock()
    accepted: dict[str, int] = {}
    try:
        auth = {"Authorization": f"Bearer {token}"}
        stop = threading.Event()
        end_by = time.monotonic() + args.max_seconds

        def timed(kind: str, fn, *a, **kw):
            started = time.perf_counter()
            try:
                r = fn(*a, timeout=60, **kw)
            except httpx.HTTPError as exc:
                with lock:
                    errors.append(f"{kind}: {type(exc).__name__}")
                return None
            with lock:
                lat[kind].append((time.perf_counter() - started) * 1000)
                if r.status_code >= 400:
                    errors.append(f"{kind}: HTTP {r.status_code} {r.text[:120]}")
            return r

        def uploader(worker: int) -> None:
            with httpx.Client() as c:
                for k in range(worker, args.uploads, args.uploaders):
                    if time.monotonic() > end_by:
                        return
                    name = f"load-{k:03d}"
                    r = timed(
                        "upload",
                        c.post,
                        f"{base}/api/v1/submissions",
                        headers=auth,
                        data={
                            "name": name,
                            "training_cutoff": "2009Q4",
                            "leakage_statement": "none (load test)",
                        },
                        files={"file": (f"{name}.parquet", files[k])},
                    )
                    if r is not None and r.status_code == 202:
                        with lock:
                            accepted[name] = r.json()["job_id"]

        def reader() -> None:
            with httpx.Client() as c:
                while not stop.is_set() and time.monotonic() < end_by:
                    timed("leaderboard json", c.get, f"{base}/api/v1/leaderboards/full")
                    timed(
                        "leaderboard csv",
                        c.get,
                        f"{base}/api/v1/leaderboards/full",
                        params={"format": "csv", "by": "horizon"},
                    )
                    timed("leaderboard page", c.get, f"{base}/")
                    timed("submissions", c.get, f"{base}/api/v1/submissions")
                    timed(
                        "public sql",
                        c.post,
                        f"{base}/api/v1/query",
                        json={
                            "sql": "SELECT model, avg(r2) FROM metrics WHERE level = 'horizon' GROUP BY ALL"
                        },
                    )

        readers = [threading.Thread(target=reader) for _ in range(args.readers)]
        uploaders = [threading.Thread(target=uploader, args=(w,)) for w in range(args.uploaders)]
        t_load = time.perf_counter()
        for t in readers + uploaders:
            t.start()
        for t in uploaders:
            t.join()
        # keep reading until every accepted job has ended (or time is up)
        with httpx.Client() as c:
            while time.monotonic() < end_by:
                states = [
                    c.get(f"{base}/api/v1/jobs/{j}", headers=auth, timeout=30).json()["status"]
                    for j in accepted.values()
                ]
                if all(s in ("done", "failed") for s in states):
                    break
                time.sleep(0.5)
        stop.set()
        for t in readers:
            t.join()
        wall = time.perf_counter() - t_load

        with httpx.Client() as c:
            jobs = {
                n: c.get(f"{base}/api/v1/jobs/{j}", headers=auth, timeout=30).json()
                for n, j in accepted.items()
            }
            listed = [
                s["name"] for s in c.get(f"{base}/api/v1/submissions", timeout=30).json()["rows"]
            ]
            board = {
                r["model"]
                for r in c.get(f"{base}/api/v1/leaderboards/full", timeout=30).json()["rows"]
            }
    finally:
        stop_server(server, log)

    print(
        f"\nload: {args.uploaders} uploaders x {args.uploads} uploads, {args.readers} readers, "
        f"{wall:.1f} s on {base}"
    )
    print(f"{'request':<18}{'n':>6}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for kind in sorted(lat):
        xs = sorted(lat[kind])
        p99 = xs[min(len(xs) - 1, round(0.99 * (len(xs) - 1)))]
        print(f"{kind:<18}{len(xs):>6}{statistics.median(xs):>10.1f}{p99:>10.1f}{xs[-1]:>10.1f}")
    done = [n for n, j in jobs.items() if j["status"] == "done"]
    unfinished = [n for n, j in jobs.items() if j["status"] not in ("done", "failed")]
    lost = [
        n
        for n in accepted
        if n not in unfinished and (n not in done or listed.count(n) != 1 or n not in board)
    ]
    print(
        f"\nuploads accepted {len(accepted)}/{args.uploads}; jobs done {len(done)} "
        f"(unfinished at the time bound: {len(unfinished)}); "
        f"listed once {sum(listed.count(n) == 1 for n in accepted)}; on the full leaderboard "
        f"{len(set(accepted) & board)}; request errors {len(errors)}"
    )
    for e in errors[:10]:
        print("  error:", e)
    if lost or unfinished or errors or len(accepted) != args.uploads:
        print(
            f"NOT OK: lost {lost}, unfinished {unfinished} (they resume on the next start), "
            f"{len(errors)} request error(s), {len(accepted)}/{args.uploads} uploads accepted"
        )
        sys.exit(1)
    print("nothing lost: every upload was validated, scored, listed once and ranked.")


if __name__ == "__main__":
    main()
