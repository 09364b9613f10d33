"""Benchmark: `proforma demo` from an empty warehouse, stage by stage (issue 48).

    .venv/bin/python bench/demo_stages.py --workdir /tmp/demo-bench [--busy 0] [--firms N]

Runs `proforma demo --fresh --no-serve` with every path (warehouse, models, report,
uploads, caches) inside --workdir, so the shipped Forma checkpoint is installed as on a
fresh clone, and prints the demo's own closing table (demo_stages.json: wall and CPU
seconds per stage) with the load average before and after. --busy N starts N competing
CPU-bound processes for the whole run (a machine shared with other jobs): with 2 cores
and --busy 1 a stage that uses both cores should take about twice as long, not several
times as long. The set-up (`make setup`) is not included: run it first.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

from proforma.app.store.settings import paths_under

ROOT = Path(__file__).resolve().parent.parent


def demo_env(work: Path) -> dict[str, str]:
    """Every path the demo writes, inside `work` (bench/demo_screenshots.py serves it)."""
    return paths_under(work)


def load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def _spin(stop_at: float) -> None:
    x = 0
    while time.time() < stop_at:
        x = (x * 1103515245 + 12345) % 2**31


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--busy", type=int, default=0, help="competing CPU-bound processes")
    ap.add_argument("--firms", type=int, default=None)
    ap.add_argument("--limit-s", type=float, default=3600, help="stop the demo after this")
    args = ap.parse_args()
    work = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **demo_env(work)}
    cmd = [str(ROOT / ".venv" / "bin" / "proforma"), "demo", "--fresh", "--no-serve"]
    if args.firms:
        cmd += ["--firms", str(args.firms)]
    hogs = [
        multiprocessing.Process(target=_spin, args=(time.time() + args.limit_s,), daemon=True)
        for _ in range(args.busy)
    ]
    for hog in hogs:
        hog.start()
    print(f"load before: {load()}; competing processes: {args.busy}; cores: {os.cpu_count()}")
    started = time.perf_counter()
    log = work / "demo.log"
    try:
        with open(log, "w") as out:
            rc = subprocess.call(
                cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=args.limit_s
            )
    finally:
        for hog in hogs:
            hog.terminate()
    wall = time.perf_counter() - started
    print(f"load after: {load()}; demo exit {rc} after {wall:.0f} s (log {log})")
    stages = work / "demo_stages.json"
    if not stages.exists():
        print("no demo_stages.json: the demo did not finish", file=sys.stderr)
        sys.exit(1)
    table = json.loads(stages.read_text())
    width = max(len(r["stage"]) for r in table["stages"])
    print(f"{'stage':<{width}}  {'start s':>7}  {'wall s':>7}  {'CPU s':>7}")
    for r in table["stages"]:
        start = f"{r['start_s']:>7.0f}" if "start_s" in r else " " * 7
        print(f"{r['stage']:<{width}}  {start}  {r['wall_s']:>7.0f}  {r['cpu_s']:>7.0f}")
    cpu = sum(r["cpu_s"] for r in table["stages"])
    print(f"{'total':<{width}}  {'':>7}  {table['total_wall_s']:>7.0f}  {cpu:>7.0f}")
    sys.exit(rc)


if __name__ == "__main__":
    main()
