"""Benchmark: the demo's scoring from scratch, step by step (issue 48).

    .venv/bin/python bench/score_footprints.py --workdir /tmp/demo28 [--copy /tmp/score-fp]

--workdir is a finished demo (bench/demo_stages.py). Its warehouse is copied into --copy
(the original is never written), and every footprint the demo scores (full, geert, llm,
oracle) is scored as on the demo's first run: the first with full=True (each
submission's cell scores and coverage are computed again), and no run reuses another's
results (the copy holds the demo's runs, whose common samples are the same): the
aggregates, metrics and tests of every submission on every footprint are computed. Prints
each footprint's wall and CPU seconds and, summed over the runs, the sql/ steps that took
longest (065/066 the run aggregates, 050/053 the cell scores with 054/057's terms, 055
the coverage). Identity checks are left out (`--no-coherence`'s cost is its own). CPU
seconds are this process's, all DuckDB threads together: the figure to compare on a
loaded machine; the load average is printed beside it.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

FOOTPRINTS = ("full", "geert", "llm", "oracle")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--copy", type=Path, default=Path("/tmp/score-footprints"))
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()

    from published_tools import copied_warehouse

    source = args.workdir / "warehouse.duckdb"
    os.environ.update(copied_warehouse(source, args.copy, "warehouse.duckdb", None, None))
    os.environ["PROFORMA_CACHE_DIR"] = str(args.workdir / "cache")

    from proforma.app import scoring
    from proforma.app.scoring import runs
    from proforma.app.store import warehouse as store

    runs._reusable = lambda *_, **__: {}  # every run aggregates all its submissions

    steps: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    run_step = store.Warehouse.run_step

    def timed(self, step, params=None, identifiers=None):
        wall, cpu = time.perf_counter(), _cpu()
        try:
            return run_step(self, step, params, identifiers)
        finally:
            steps[str(step)][0] += time.perf_counter() - wall
            steps[str(step)][1] += _cpu() - cpu

    store.Warehouse.run_step = timed  # type: ignore[method-assign]
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs; {source}")
    total_wall, total_cpu = time.perf_counter(), _cpu()
    with store.connect() as wh:
        names = {r[0] for r in wh.fetchall("SELECT name FROM eval.footprints")}
        for k, footprint in enumerate(f for f in FOOTPRINTS if f in names):
            wall, cpu = time.perf_counter(), _cpu()
            run = scoring.score(wh, footprint, full=k == 0, coherence=False)
            print(
                f"{footprint:<8} run {run:>3}: {time.perf_counter() - wall:6.1f} s wall "
                f"{_cpu() - cpu:7.1f} CPU-s",
                flush=True,
            )
    print(
        f"{'total':<16}: {time.perf_counter() - total_wall:6.1f} s wall "
        f"{_cpu() - total_cpu:7.1f} CPU-s (load average {os.getloadavg()[0]:.1f})"
    )
    print(f"\nsteps, summed over the runs (top {args.top}):")
    for step, (wall, cpu) in sorted(steps.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"  {step:<40} {wall:6.1f} s wall {cpu:7.1f} CPU-s")


if __name__ == "__main__":
    main()
