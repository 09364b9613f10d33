"""The k-th upload end to end, and the public snapshot's size, as uploads accrue.

    .venv/bin/python bench/upload_volume.py [--firms 4] [--uploads 500]
        [--report 1,10,50,100,250,500] [--max-seconds 3000] [--dir /tmp/proforma-volume]

Sets up a fresh warehouse (synthetic panel of --firms firms, the real build, the reference
baselines scored), starts `proforma serve` on 127.0.0.1 (loopback only) and uploads
--uploads files one after another through the API, each waited for until its job is done
(upload, validation, scoring on the footprints it enters, publication of the snapshot).
Prints, at each --report point, the upload's end-to-end seconds (and the median of the
five around it), the snapshot file's size and the warehouse's, then the ratio of the
last reported upload to the first. Stops early at --max-seconds (reporting how far it
got). Every file predicts the full footprint's test cells with its own noise.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import (  # bench/load.py's helpers
    PROFORMA,
    _run,
    scratch_env,
    start_server,
    stop_server,
    test_cells,
)


def _files_base(env: dict[str, str]):
    import pyarrow as pa

    cells = test_cells(env)
    return cells, pa


def _file(cells, pa, k: int, point: bool = False) -> bytes:
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(k)
    base = cells["baseline"].to_numpy()
    change = cells["actual"].to_numpy() - base
    pred = base + rng.uniform(0.2, 0.8) * change + rng.normal(0, 0.3, len(base))
    table = pa.table(
        {
            "firm": cells["firm"],
            "target": cells["target"],
            "origin": cells["origin"],
            "horizon": cells["horizon"],
            "prediction": pa.array(pred),
            "sigma": pa.array(np.full(len(base), 0.5)),
        }
    )
    if point:  # a point file: kept in the upload store, scanned in place
        table = table.drop_columns(["sigma"])
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--firms", type=int, default=4)
    ap.add_argument("--uploads", type=int, default=500)
    ap.add_argument("--report", default="1,10,50,100,250,500")
    ap.add_argument("--max-seconds", type=float, default=3000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/proforma-volume"))
    ap.add_argument(
        "--point", action="store_true", help="point files (no sigma): the upload store's path"
    )
    args = ap.parse_args()
    if args.uploads > 1000:
        raise SystemExit("Bounded: at most 1,000 uploads.")
    report = sorted({int(x) for x in args.report.split(",")})

    import httpx

    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    env = scratch_env(args.dir, UPLOADS_PER_DAY=str(args.uploads + 1), PUBLIC_MIN_CELLS="1")
    proforma = PROFORMA
    t0 = time.perf_counter()
    _run([*proforma, "ingest", "synthetic", "--firms", str(args.firms)], env)
    _run([*proforma, "build"], env)
    _run([*proforma, "score"], env)
    added = re.search(
        r"(pf_[0-9a-f]{12}\.[A-Za-z0-9_-]+)", _run([*proforma, "users", "add", "volume"], env)
    )
    assert added is not None
    auth = {"Authorization": f"Bearer {added.group(1)}"}
    cells, pa = _files_base(env)
    print(
        f"setup: {args.firms} firms, {cells.num_rows:,} test cells per file, "
        f"{time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    started = time.monotonic()
    server, log, base = start_server(args.dir, env)
    times: list[float] = []
    try:
        with httpx.Client(timeout=300) as c:
            while True:
                try:
                    if c.get(f"{base}/api/v1/health").status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            print(f"server answered {time.monotonic() - started:.1f} s after start", flush=True)
            for k in range(1, args.uploads + 1):
                if time.monotonic() - started > args.max_seconds:
                    print(f"stopped at the time bound after {k - 1} uploads")
                    break
                data = _file(cells, pa, k, args.point)
                t = time.perf_counter()
                r = c.post(
                    f"{base}/api/v1/submissions",
                    headers=auth,
                    data={
                        "name": f"m{k}",
                        "training_cutoff": "2009Q4",
                        "leakage_statement": "none",
                    },
                    files={"file": ("f.parquet", data)},
                )
                if r.status_code != 202:
                    raise SystemExit(f"upload {k}: {r.status_code} {r.text}")
                job_url = f"{base}{r.json()['status_url']}"
                while True:
                    job = c.get(job_url, headers=auth).json()
                    if job["status"] in ("done", "failed"):
                        break
                    time.sleep(0.02)
                if job["status"] != "done":
                    raise SystemExit(f"upload {k} failed: {job['message']}")
                times.append(time.perf_counter() - t)
                if k in report:
                    near = times[max(0, k - 5) : k]
                    snap = (args.dir / "public.duckdb").resolve()
                    print(
                        f"upload {k:4d}: {times[-1]:.2f} s (median of the last {len(near)}: "
                        f"{statistics.median(near):.2f} s); snapshot "
                        f"{snap.stat().st_size / 1e6:.1f} MB; warehouse "
                        f"{(args.dir / 'warehouse.duckdb').stat().st_size / 1e6:.1f} MB",
                        flush=True,
                    )
        if times and len(times) not in report:
            snap = (args.dir / "public.duckdb").resolve()
            print(
                f"upload {len(times):4d} (the last): {times[-1]:.2f} s (median of the last "
                f"{len(times[-5:])}: {statistics.median(times[-5:]):.2f} s); snapshot "
                f"{snap.stat().st_size / 1e6:.1f} MB; warehouse "
                f"{(args.dir / 'warehouse.duckdb').stat().st_size / 1e6:.1f} MB",
                flush=True,
            )
        if len(times) >= 10:
            first = statistics.median(times[:5])
            last = statistics.median(times[-5:])
            print(
                f"median of uploads 1-5 {first:.2f} s, of the last 5 ({len(times) - 4}-"
                f"{len(times)}) {last:.2f} s: {last / first:.2f}x"
            )
    finally:
        stop_server(server, log)


if __name__ == "__main__":
    main()
