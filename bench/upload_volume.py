"""The k-th upload end to end, and the public snapshot's size, as uploads accrue.

    .venv/bin/python bench/upload_volume.py [--firms 4] [--uploads 500]
        [--seed-board N] [--report 1,10,50,100,250,500] [--max-seconds 3000]
        [--dir /tmp/proforma-volume] [--resume | --against BOARD [--rounds 5]]

Sets up a fresh warehouse (synthetic panel of --firms firms, the real build, the reference
baselines scored), starts `proforma serve` on 127.0.0.1 (loopback only) and uploads
--uploads files one after another through the API, each waited for until its job is done
(upload, validation, scoring on the footprints it enters, publication of the snapshot).
Prints, at each --report point, the upload's end-to-end seconds (and the median of the
five around it), the snapshot file's size and the warehouse's, then the ratio of the
last reported upload to the first. Stops early at --max-seconds (reporting how far it
got). Every file predicts the full footprint's test cells with its own noise.

With --seed-board N the run has three phases, so that the board reaches hundreds of
submissions within a session:
  1. uploads 1..--uploads through the API, each timed end to end as above;
  2. the server stops and the board is filled to N submissions in a separate process,
     without HTTP but through the same code the upload queue runs: each file written to
     disk and ingested by `JobQueue.Scorer.ingest_parquet` (the upload's validation and
     storage), then, batch by batch (the queue's MAX_BATCH, as a burst of uploads is
     scored), every footprint the new submissions enter scored by `Scorer.score` and the
     snapshot published by `publish`; at each --report point inside the seeded range the
     snapshot's size is printed (these phase-2 times are not end-to-end upload times);
  3. the server starts again and uploads N+1..N+--uploads go through the API, each
     timed end to end as in phase 1.
The ratio printed at the end is the median of phase 3's uploads over phase 1's.

With --resume the folder --dir an earlier run left is used as it is (no setup, no
seeding): --uploads more uploads go through the API of a fresh server, timed as above
(phase 3 again, for instance with another version of the code on a copy of the folder).

With --against BOARD (a folder an earlier --seed-board run left, say at 520 submissions)
the 1st and the 500th upload are timed side by side: each of --rounds rounds sets up a
fresh board in --dir/fresh and a fresh copy of BOARD in --dir/board, serves both at once
and alternates their uploads (fresh 1, board k+1, board k+2, fresh 2, ...: which goes
first alternates), --uploads each, so both meet the same machine; this machine's speed
drifts by a third over minutes, more than the effect measured. Prints each round's
medians and their ratio, then the median of the rounds' ratios (the figure to read) and
the ratio of the pooled medians:

    .venv/bin/python bench/upload_volume.py --against /tmp/board --uploads 6 --rounds 5 \
        --dir /tmp/proforma-volume
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import statistics
import subprocess
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


def _sizes(folder: Path) -> str:
    snap = (folder / "public.duckdb").resolve()
    return (
        f"snapshot {snap.stat().st_size / 1e6:.1f} MB; warehouse "
        f"{(folder / 'warehouse.duckdb').stat().st_size / 1e6:.1f} MB"
    )


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of a process and its threads so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _post_and_wait(c, base: str, auth: dict[str, str], data: bytes, k: int, pid: int):
    """Upload k through the API and wait until its job is done: (end-to-end seconds, the
    server's CPU seconds meanwhile)."""
    t, c0 = time.perf_counter(), _cpu_s(pid)
    r = c.post(
        f"{base}/api/v1/submissions",
        headers=auth,
        data={"name": f"m{k}", "training_cutoff": "2009Q4", "leakage_statement": "none"},
        files={"file": ("f.parquet", data)},
    )
    if r.status_code != 202:
        raise SystemExit(f"upload {k}: {r.status_code} {r.text}")
    job_url = f"{base}{r.json()['status_url']}"
    while True:
        job = c.get(job_url, headers=auth).json()
        if job["status"] in ("done", "failed"):
            break
        time.sleep(0.05)
    if job["status"] != "done":
        raise SystemExit(f"upload {k} failed: {job['message']}")
    return time.perf_counter() - t, _cpu_s(pid) - c0


def _timed_uploads(
    folder: Path,
    env: dict[str, str],
    auth: dict[str, str],
    cells,
    pa,
    ks: range,
    report: list[int],
    point: bool,
    deadline: float,
    cpu: list[float],
) -> list[float]:
    """Uploads k in `ks` through the API of a fresh server, each timed end to end (post,
    validation, scoring, publication: until its job is done); the server's CPU seconds
    per upload are appended to `cpu` (a figure the machine's load moves less)."""
    import httpx

    started = time.monotonic()
    server, log, base = start_server(folder, env)
    times: list[float] = []
    try:
        with httpx.Client(timeout=600) as c:
            print(f"server answered {time.monotonic() - started:.1f} s after start", flush=True)
            for k in ks:
                if time.monotonic() > deadline:
                    print(f"stopped at the time bound before upload {k}")
                    break
                seconds, used = _post_and_wait(
                    c, base, auth, _file(cells, pa, k, point), k, server.pid
                )
                times.append(seconds)
                cpu.append(used)
                if k in report or k == ks[-1]:
                    near = times[-5:]
                    print(
                        f"upload {k:4d}: {times[-1]:.2f} s (median of the last {len(near)}: "
                        f"{statistics.median(near):.2f} s; server CPU {cpu[-1]:.2f} s, median "
                        f"{statistics.median(cpu[-5:]):.2f}); {_sizes(folder)}; "
                        f"load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
    finally:
        stop_server(server, log)
    return times


def _seed(folder: Path, first: int, last: int, report: list[int], point: bool) -> None:
    """Phase 2 (run in its own process, with the scratch environment): submissions
    first..last through the upload queue's own ingest and scoring calls, no HTTP."""
    from proforma.app.api.job_queue import MAX_BATCH, Scorer
    from proforma.app.read.snapshot import publish
    from proforma.app.scoring.runs import MIN_COVERAGE
    from proforma.app.store.settings import get_settings
    from proforma.app.store.warehouse import connect

    settings = get_settings()
    env = dict(os.environ)
    cells, pa = _files_base(env)
    scorer = Scorer()
    stops = sorted({k for k in report if first <= k <= last} | {last})
    t0 = time.perf_counter()
    with connect(settings) as wh:
        k = first
        while k <= last:
            end = min(last, k + MAX_BATCH - 1, next(s for s in stops if s >= k))
            new = []
            for j in range(k, end + 1):
                path = folder / "seed.parquet"
                path.write_bytes(_file(cells, pa, j, point))
                new.append(
                    scorer.ingest_parquet(
                        wh,
                        path,
                        f"m{j}",
                        family="gaussian",
                        df=None,
                        metadata={
                            "training_cutoff": "2009Q4",
                            "leakage_statement": "none",
                            "uploaded_by": "volume",
                        },
                    )
                )
            for footprint in scorer.footprints(wh):
                if scorer.has_run(wh, footprint):
                    shares = scorer.shares(wh, footprint, new)
                    if not any(v >= MIN_COVERAGE for v in shares.values()):
                        continue
                scorer.score(wh, footprint)
            publish(wh, settings)
            if end in report:
                print(
                    f"seeded {end:4d} ({time.perf_counter() - t0:.0f} s so far): {_sizes(folder)}",
                    flush=True,
                )
            k = end + 1
    print(f"seeded {first}..{last} in {time.perf_counter() - t0:.0f} s", flush=True)


def _board(folder: Path) -> tuple[dict[str, str], dict[str, str], int]:
    """An earlier run's board in `folder`: its environment, a new uploader's token, and how
    many uploads it holds."""
    import duckdb

    env = scratch_env(folder, UPLOADS_PER_DAY="100000", PUBLIC_MIN_CELLS="1")
    with duckdb.connect(str(folder / "warehouse.duckdb"), read_only=True) as con:
        row = con.execute(
            "SELECT count(*) FROM eval.submissions WHERE source = 'upload'"
        ).fetchall()
    done = int(row[0][0]) if row else 0
    auth = _new_user(env, f"resume{time.time_ns()}")
    return env, auth, done


def _new_user(env: dict[str, str], name: str) -> dict[str, str]:
    added = re.search(
        r"(pf_[0-9a-f]{12}\.[A-Za-z0-9_-]+)", _run([*PROFORMA, "users", "add", name], env)
    )
    assert added is not None
    return {"Authorization": f"Bearer {added.group(1)}"}


def _fresh(folder: Path, firms: int, per_day: int) -> tuple[dict[str, str], dict[str, str]]:
    """A fresh board in `folder`: a synthetic panel of `firms` firms, the real build, the
    reference baselines scored, and an uploader; (environment, its token)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = scratch_env(folder, UPLOADS_PER_DAY=str(per_day), PUBLIC_MIN_CELLS="1")
    _run([*PROFORMA, "ingest", "synthetic", "--firms", str(firms)], env)
    _run([*PROFORMA, "build"], env)
    _run([*PROFORMA, "score"], env)
    return env, _new_user(env, "volume")


def _resume(args: argparse.Namespace, report: list[int]) -> None:
    """--resume: --uploads more uploads through the API on the board in --dir."""
    env, auth, done = _board(args.dir)
    cells, pa = _files_base(env)
    cpu: list[float] = []
    times = _timed_uploads(
        args.dir,
        env,
        auth,
        cells,
        pa,
        range(done + 1, done + args.uploads + 1),
        report,
        args.point,
        time.monotonic() + args.max_seconds,
        cpu,
    )
    if times:
        print(
            f"median of uploads {done + 1}-{done + len(times)}: {statistics.median(times):.2f} s "
            f"(server CPU {statistics.median(cpu):.2f} s)"
        )


def _compared(
    name_a: str, a: list[float], cpu_a: list[float], name_b: str, b: list[float], cpu_b: list[float]
) -> str:
    """The medians of two sets of uploads' seconds and of the server's CPU, and their ratio."""
    ma, mb = statistics.median(a), statistics.median(b)
    ca, cb = statistics.median(cpu_a), statistics.median(cpu_b)
    return (
        f"median of {name_a} {ma:.2f} s, of {name_b} {mb:.2f} s: {mb / ma:.2f}x "
        f"(server CPU {ca:.2f} -> {cb:.2f} s: {cb / ca:.2f}x)"
    )


def _interleaved(args: argparse.Namespace) -> None:
    """--against BOARD: --rounds rounds, each on a fresh board and a fresh copy of BOARD,
    both served at once; uploads 1..--uploads of the fresh board and the next --uploads of
    the copy alternate (which goes first alternates too), so both meet the same machine."""
    import httpx

    fresh_all: list[float] = []
    board_all: list[float] = []
    cpu_f: list[float] = []
    cpu_b: list[float] = []
    ratios: list[float] = []
    for r in range(1, args.rounds + 1):
        fresh, board = args.dir / "fresh", args.dir / "board"
        env_f, auth_f = _fresh(fresh, args.firms, args.uploads + 1)
        shutil.rmtree(board, ignore_errors=True)
        shutil.copytree(args.against, board, ignore=shutil.ignore_patterns("tmp", "server.log"))
        env_b, auth_b, done = _board(board)
        sides = {
            "fresh": (fresh, env_f, auth_f, _files_base(env_f), 0),
            "board": (board, env_b, auth_b, _files_base(env_b), done),
        }
        servers = {name: start_server(side[0], side[1]) for name, side in sides.items()}
        times: dict[str, list[float]] = {"fresh": [], "board": []}
        cpus: dict[str, list[float]] = {"fresh": [], "board": []}
        try:
            with httpx.Client(timeout=600) as c:
                for i in range(1, args.uploads + 1):
                    for name in ("fresh", "board") if i % 2 else ("board", "fresh"):
                        _, _, auth, (cells, pa), offset = sides[name]
                        server, _, base = servers[name]
                        seconds, used = _post_and_wait(
                            c,
                            base,
                            auth,
                            _file(cells, pa, offset + i, args.point),
                            offset + i,
                            server.pid,
                        )
                        times[name].append(seconds)
                        cpus[name].append(used)
        finally:
            for server, log, _ in servers.values():
                stop_server(server, log)
        a, b = statistics.median(times["fresh"]), statistics.median(times["board"])
        ratios.append(b / a)
        fresh_all += times["fresh"]
        board_all += times["board"]
        cpu_f += cpus["fresh"]
        cpu_b += cpus["board"]
        print(
            f"round {r}: uploads 1-{args.uploads} of a fresh board, median {a:.2f} s "
            f"(server CPU {statistics.median(cpus['fresh']):.2f} s); uploads {done + 1}-"
            f"{done + args.uploads} of the board, median {b:.2f} s (server CPU "
            f"{statistics.median(cpus['board']):.2f} s): {b / a:.2f}x; snapshots "
            f"{_sizes(fresh).split(';')[0]} against {_sizes(board).split(';')[0]}; "
            f"load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    print(
        f"all rounds: per round {min(ratios):.2f}-{max(ratios):.2f}x, median "
        f"{statistics.median(ratios):.2f}x; pooled, "
        + _compared("the fresh boards' uploads", fresh_all, cpu_f, "the board's", board_all, cpu_b)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--firms", type=int, default=4)
    ap.add_argument("--uploads", type=int, default=500)
    ap.add_argument(
        "--seed-board",
        type=int,
        default=0,
        help="fill the board to N submissions without HTTP after the first --uploads, "
        "then time --uploads more through the API",
    )
    ap.add_argument("--report", default="1,10,50,100,250,500")
    ap.add_argument("--max-seconds", type=float, default=3000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/proforma-volume"))
    ap.add_argument(
        "--point", action="store_true", help="point files (no sigma): the upload store's path"
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help="time --uploads more uploads on the board an earlier run left in --dir",
    )
    ap.add_argument(
        "--against",
        type=Path,
        help="a board an earlier run left (a folder): alternate uploads to a fresh board "
        "and to a copy of it, --uploads each, --rounds times",
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed-range", help=argparse.SUPPRESS)  # phase 2's own process
    args = ap.parse_args()
    report = sorted({int(x) for x in args.report.split(",")})
    if args.seed_range:
        lo, hi = (int(x) for x in args.seed_range.split(":"))
        _seed(args.dir, lo, hi, report, args.point)
        return
    if args.resume:
        _resume(args, report)
        return
    if args.against:
        _interleaved(args)
        return
    if args.uploads + args.seed_board > 1000:
        raise SystemExit("Bounded: at most 1,000 submissions.")
    if args.seed_board and args.seed_board < args.uploads:
        raise SystemExit("--seed-board must be at least --uploads.")

    total = args.uploads + args.seed_board if args.seed_board else args.uploads
    t0 = time.perf_counter()
    env, auth = _fresh(args.dir, args.firms, total + 1)
    cells, pa = _files_base(env)
    print(
        f"setup: {args.firms} firms, {cells.num_rows:,} test cells per file, "
        f"{time.perf_counter() - t0:.0f} s",
        flush=True,
    )
    deadline = time.monotonic() + args.max_seconds
    cpu_first: list[float] = []
    first = _timed_uploads(
        args.dir,
        env,
        auth,
        cells,
        pa,
        range(1, args.uploads + 1),
        report,
        args.point,
        deadline,
        cpu_first,
    )
    cpu_last: list[float] = []
    times = first
    if args.seed_board and len(first) == args.uploads:
        if args.seed_board > args.uploads:
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--seed-range",
                    f"{args.uploads + 1}:{args.seed_board}",
                    "--report",
                    args.report,
                    "--dir",
                    str(args.dir),
                    *(["--point"] if args.point else []),
                ],
                env=env,
                check=True,
            )
            assert out.returncode == 0
        times = _timed_uploads(
            args.dir,
            env,
            auth,
            cells,
            pa,
            range(args.seed_board + 1, args.seed_board + args.uploads + 1),
            report,
            args.point,
            deadline + 10**6,  # phase 3 always runs to the end
            cpu_last,
        )
        if first and times:
            last = f"uploads {args.seed_board + 1}-{args.seed_board + len(times)}"
            print(_compared(f"uploads 1-{len(first)}", first, cpu_first, last, times, cpu_last))
        return
    if len(times) >= 10:
        a, b = statistics.median(times[:5]), statistics.median(times[-5:])
        print(
            f"median of uploads 1-5 {a:.2f} s, of the last 5 ({len(times) - 4}-"
            f"{len(times)}) {b:.2f} s: {b / a:.2f}x"
        )


if __name__ == "__main__":
    main()
