"""Where one upload's time goes on a board of k submissions, stage by stage and SQL
statement by statement, in one process (no HTTP).

    .venv/bin/python bench/upload_profile.py --from DIR [--uploads 3] [--top 15]
        [--work /tmp/proforma-upload-profile]

DIR is a folder `bench/upload_volume.py --dir DIR` left behind (its warehouse, upload
store and snapshot); it is copied to --work, so DIR is never written. On the copy:
  1. the code's migrations and one publication (they bring the copy's warehouse and
     snapshot up to the code under test; not counted);
  2. --uploads uploads, each made of the queue's own calls (`Scorer.ingest_parquet`, per
     footprint `Scorer.shares` and `Scorer.score` where the file enters it, then
     `publish`), each stage timed (wall and this process's CPU seconds);
  3. the statements of sql/ steps that took the most time over the uploads (summed; each
     step file split into its statements and each timed on its own);
  4. with --calls, every SQL call the code makes through the Warehouse (steps, look-ups,
     catalog queries), per upload, keyed by the calling function and the SQL's start:
     where small statements made many times add up.
Prints the board's size k, every stage per upload, and the statements.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load import scratch_env  # bench/load.py's helper
from upload_volume import _file  # the bench's own submission files

STATEMENTS: dict[str, list[float]] = defaultdict(list)
CALLS: dict[str, list[float]] = defaultdict(list)


def _patch_run_step() -> None:
    """Time each statement of every sql/ step (keyed by file and the statement's start)."""
    from proforma.app.store.sqlfiles import SqlFile, sql_file
    from proforma.app.store.warehouse import Warehouse

    def run_step(self, step, params=None, identifiers=None):
        f = step if isinstance(step, SqlFile) else sql_file(step)
        sql = f.render(identifiers)
        self.set_params(params)
        for stmt in self.con.extract_statements(sql):
            text = stmt.query.strip()
            head = " ".join(
                line for line in text.splitlines() if line and not line.lstrip().startswith("--")
            )[:90]
            t = time.perf_counter()
            self.execute(stmt.query)
            STATEMENTS[f"{f.path.parent.name}/{f.path.name[:3]}: {head}"].append(
                time.perf_counter() - t
            )

    Warehouse.run_step = run_step  # type: ignore[method-assign]


def _patch_calls() -> None:
    """Time every SQL call of the Warehouse (the outermost one: scalar calls fetchone calls
    fetchall), keyed by the first caller outside the Warehouse and the SQL's start."""
    import threading

    from proforma.app.store.warehouse import Warehouse

    inside = threading.local()
    here = (Path(__file__).name, "warehouse.py")

    def timed(name: str):
        original = getattr(Warehouse, name)

        def call(self, sql, *args, **kwargs):
            if getattr(inside, "busy", False):
                return original(self, sql, *args, **kwargs)
            inside.busy = True
            t = time.perf_counter()
            try:
                return original(self, sql, *args, **kwargs)
            finally:
                inside.busy = False
                frame: FrameType | None = sys._getframe(1)
                while frame and frame.f_code.co_filename.endswith(here):
                    frame = frame.f_back
                caller = (
                    f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"
                    if frame
                    else "?"
                )
                head = " ".join(str(sql).split())[:70]
                CALLS[f"{caller} | {head}"].append(time.perf_counter() - t)

        setattr(Warehouse, name, call)

    for name in ("execute", "fetchall", "fetchone", "scalar", "one", "arrow"):
        timed(name)


class Clock:
    def __init__(self) -> None:
        self.rows: dict[str, tuple[float, float]] = {}

    def __call__(self, name: str):
        clock = self

        class _Span:
            def __enter__(self) -> None:
                self.t, self.c = time.perf_counter(), time.process_time()

            def __exit__(self, *exc: object) -> None:
                wall, cpu = time.perf_counter() - self.t, time.process_time() - self.c
                old = clock.rows.get(name, (0.0, 0.0))
                clock.rows[name] = (old[0] + wall, old[1] + cpu)

        return _Span()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="source", type=Path, required=True)
    ap.add_argument("--uploads", type=int, default=3)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--work", type=Path, default=Path("/tmp/proforma-upload-profile"))
    ap.add_argument(
        "--calls", action="store_true", help="also every SQL call by caller, per upload"
    )
    args = ap.parse_args()
    if args.uploads > 20:
        raise SystemExit("Bounded: at most 20 uploads.")
    shutil.rmtree(args.work, ignore_errors=True)
    shutil.copytree(args.source, args.work, ignore=shutil.ignore_patterns("tmp", "server.log"))
    os.environ.update(scratch_env(args.work, PUBLIC_MIN_CELLS="1"))

    import pyarrow as pa
    from load import test_cells

    from proforma.app.api.job_queue import Scorer
    from proforma.app.flows.warehouse import prepare
    from proforma.app.read.snapshot import publish
    from proforma.app.scoring.runs import MIN_COVERAGE
    from proforma.app.store.settings import get_settings
    from proforma.app.store.warehouse import connect

    cells = test_cells(dict(os.environ))
    settings = get_settings()
    scorer = Scorer()
    _patch_run_step()
    if args.calls:
        _patch_calls()
    with connect(settings) as wh:
        prepare(wh)  # the code under test's migrations, as the server runs them at start
        k = int(wh.scalar("SELECT count(*) FROM eval.submissions"))
        first = publish(wh, settings)
        print(f"board: {k} submissions; catch-up publication {first.elapsed_ms:.0f} ms")
        STATEMENTS.clear()
        CALLS.clear()
        per_upload: list[dict[str, tuple[float, float]]] = []
        for j in range(args.uploads):
            clock = Clock()
            path = args.work / "profile.parquet"
            path.write_bytes(_file(cells, pa, 100_000 + j))
            with clock("ingest"):
                sid = scorer.ingest_parquet(
                    wh,
                    path,
                    f"profile{k + j + 1}",
                    family="gaussian",
                    df=None,
                    metadata={"training_cutoff": "2009Q4", "leakage_statement": "none"},
                )
            for footprint in scorer.footprints(wh):
                with clock(f"shares {footprint}"):
                    shares = scorer.shares(wh, footprint, [sid])
                if shares.get(sid, 0.0) < MIN_COVERAGE:
                    continue
                with clock(f"score {footprint}"):
                    scorer.score(wh, footprint)
            with clock("publish"):
                pub = publish(wh, settings)
            per_upload.append(clock.rows)
            total = sum(w for w, _ in clock.rows.values())
            cpu = sum(c for _, c in clock.rows.values())
            print(
                f"upload {k + j + 1}: {total:.2f} s wall, {cpu:.2f} CPU-s; snapshot "
                f"{pub.version.stat().st_size / 1e6:.1f} MB"
            )
            for name, (wall, c) in clock.rows.items():
                print(f"    {name:34s} {wall:6.3f} s  {c:6.3f} CPU-s")
        names = list(per_upload[0]) if per_upload else []
        print("median over the uploads:")
        for name in names:
            walls = [u[name][0] for u in per_upload if name in u]
            cpus = [u[name][1] for u in per_upload if name in u]
            print(
                f"    {name:34s} {statistics.median(walls):6.3f} s  "
                f"{statistics.median(cpus):6.3f} CPU-s"
            )
    print(f"slowest statements (sum over {args.uploads} uploads):")
    ranked = sorted(STATEMENTS.items(), key=lambda kv: -sum(kv[1]))[: args.top]
    for head, times in ranked:
        print(f"  {sum(times):7.3f} s  x{len(times):<3d} {head}")
    if args.calls and args.uploads:
        total = sum(sum(t) for t in CALLS.values()) / args.uploads
        print(f"every SQL call, per upload ({total:.3f} s in all):")
        ranked_calls = sorted(CALLS.items(), key=lambda kv: -sum(kv[1]))[: args.top]
        for head, times in ranked_calls:
            print(
                f"  {sum(times) / args.uploads:7.3f} s  x{len(times) / args.uploads:<5.0f} {head}"
            )
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
