"""The leaderboard's latency beside a hostile SQL console load, on loopback only.

    .venv/bin/python bench/console_load.py [--firms 20] [--heavy 40] [--light 16]
        [--requests 40] [--max-seconds 240] [--dir /tmp/proforma-console]
        [--distinct-clients]

Sets up a fresh warehouse (synthetic panel, the real build, the reference baselines
scored, so the leaderboard has rows), starts `proforma serve` on 127.0.0.1 (a free port;
nothing but loopback is contacted), then measures in two phases:

1. idle: --light clients each read the full leaderboard (GET /api/v1/leaderboards/full)
   --requests times, one request after another;
2. loaded: the same, while --heavy clients send a slow self-join to the SQL console in
   a loop (each bounded by --max-seconds; a refused query (429) is retried after 50 ms,
   so the load generator does not eat the CPU it measures).

All clients come from 127.0.0.1, i.e. one client to the console's per-client bounds;
--distinct-clients lifts those bounds in the server (PROFORMA_QUERY_PER_CLIENT and the
rate), which is what 40 clients from 40 addresses would meet: only the overall
concurrency then holds the console back. Prints each phase's leaderboard p50/p99/max,
the ratio loaded/idle, what the console answered (200/408/429 counts) and the longest
console request, i.e. whether the time limit holds.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import PROFORMA, _run, scratch_env, start_server, stop_server  # bench/load.py's helpers

HEAVY_SQL = "SELECT count(*) AS n FROM metrics a, metrics b, metrics c"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--firms", type=int, default=20)
    ap.add_argument("--heavy", type=int, default=40)
    ap.add_argument("--light", type=int, default=16)
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--max-seconds", type=float, default=240)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/proforma-console"))
    ap.add_argument("--distinct-clients", action="store_true")
    args = ap.parse_args()
    if args.heavy > 64 or args.light > 32 or args.requests > 500:
        raise SystemExit("Bounded load: at most 64 heavy and 32 light clients, 500 requests.")

    import httpx

    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    env = scratch_env(args.dir, PUBLIC_MIN_CELLS="1")
    if args.distinct_clients:
        env |= {
            "PROFORMA_QUERY_PER_CLIENT": "1000",
            "PROFORMA_QUERY_RATE_PER_MIN": "1000000",
            "PROFORMA_QUERY_BURST": "1000000",
        }
    proforma = PROFORMA
    t0 = time.perf_counter()
    _run([*proforma, "ingest", "synthetic", "--firms", str(args.firms)], env)
    _run([*proforma, "build"], env)
    _run([*proforma, "score"], env)
    print(f"setup: {args.firms} firms built and scored in {time.perf_counter() - t0:.0f} s")

    server, log, base = start_server(args.dir, env)
    try:
        rows = httpx.get(f"{base}/api/v1/leaderboards/full", timeout=30).json()["rows"]
        n_metrics = httpx.post(
            f"{base}/api/v1/query", json={"sql": "SELECT count(*) AS n FROM metrics"}, timeout=30
        ).json()["rows"][0][0]
        print(f"leaderboard full: {len(rows)} rows; public metrics: {n_metrics} rows")
        time.sleep(1.0)

        def light_phase(heavy: int) -> tuple[list[float], Counter, list[float]]:
            lat: list[float] = []
            console: Counter = Counter()
            console_s: list[float] = []
            lock = threading.Lock()
            stop = threading.Event()
            end_by = time.monotonic() + args.max_seconds

            def light() -> None:
                with httpx.Client(timeout=60) as c:
                    for _ in range(args.requests):
                        if time.monotonic() > end_by:
                            return
                        t = time.perf_counter()
                        r = c.get(f"{base}/api/v1/leaderboards/full")
                        dt = time.perf_counter() - t
                        with lock:
                            lat.append(dt if r.status_code == 200 else float("inf"))

            def hostile() -> None:
                with httpx.Client(timeout=60) as c:
                    while not stop.is_set() and time.monotonic() < end_by:
                        t = time.perf_counter()
                        r = c.post(f"{base}/api/v1/query", json={"sql": HEAVY_SQL})
                        dt = time.perf_counter() - t
                        with lock:
                            console[r.status_code] += 1
                            if r.status_code != 429:
                                console_s.append(dt)
                        if r.status_code == 429:
                            time.sleep(0.05)

            heavies = [threading.Thread(target=hostile) for _ in range(heavy)]
            for t in heavies:
                t.start()
            if heavy:
                time.sleep(2.0)  # the console is saturated before the first light request
            lights = [threading.Thread(target=light) for _ in range(args.light)]
            for t in lights:
                t.start()
            for t in lights:
                t.join()
            stop.set()
            for t in heavies:
                t.join()
            return lat, console, console_s

        results = {}
        for phase, heavy in (("idle", 0), ("loaded", args.heavy)):
            t = time.perf_counter()
            lat, console, console_s = light_phase(heavy)
            results[phase] = lat
            line = (
                f"{phase:6s} ({heavy} heavy, {args.light} light x {args.requests}): "
                f"leaderboard n={len(lat)} p50={statistics.median(lat) * 1000:.0f} ms "
                f"p99={_pct(lat, 0.99) * 1000:.0f} ms max={max(lat) * 1000:.0f} ms "
                f"({time.perf_counter() - t:.0f} s)"
            )
            if heavy:
                answered = console_s or [0.0]
                line += (
                    f"; console answers {dict(sorted(console.items()))}, answered queries "
                    f"p50 {statistics.median(answered):.2f} s, max {max(answered):.2f} s "
                    f"(client-side, request to answer)"
                )
            print(line, flush=True)
        ratio = _pct(results["loaded"], 0.99) / _pct(results["idle"], 0.99)
        print(f"leaderboard p99 loaded/idle: {ratio:.2f}x")
    finally:
        stop_server(server, log)


if __name__ == "__main__":
    main()
