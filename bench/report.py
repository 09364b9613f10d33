"""Benchmark: reconciliation (both weights) and the report on a built, scored warehouse.

    .venv/bin/python bench/report.py [--warehouse data/warehouse.duckdb] [--submission forma-small-gaussian]
                                     [--oracle-origins 256] [--threads 2]

The warehouse is copied to a temporary folder first (the reconciled submissions are
written there, never into the original). Prints, per stage, wall seconds, CPU seconds of
this process, statements and cells, the peak resident memory so far, and the load
average: on a shared machine CPU seconds are the figure to compare.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def line(stage: str, wall: float, cpu: float, extra: str = "") -> None:
    print(
        f"{stage:<28} {wall:7.1f} s wall  {cpu:7.1f} CPU-s  peak RSS {peak_gib():.2f} GiB  "
        f"load {load()}{'  ' + extra if extra else ''}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warehouse", type=Path, default=None, help="default: PROFORMA_WAREHOUSE")
    ap.add_argument("--submission", default="forma-small-gaussian")
    ap.add_argument("--oracle-origins", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2, help="DuckDB and PyTorch threads")
    args = ap.parse_args()

    os.environ["PROFORMA_THREADS"] = str(args.threads)
    from proforma.app.store.settings import get_settings

    source = args.warehouse or get_settings().warehouse
    tmp = Path(tempfile.mkdtemp(prefix="bench_report_"))
    try:
        copy = tmp / "warehouse.duckdb"
        shutil.copyfile(source, copy)
        os.environ.update(
            {"PROFORMA_WAREHOUSE": str(copy), "PROFORMA_TEMP_DIRECTORY": str(tmp / "t")}
        )
        get_settings.cache_clear()
        import torch

        torch.set_num_threads(args.threads)
        from proforma.app.flows.reconcile import reconcile
        from proforma.app.flows.warehouse import prepare
        from proforma.app.report import write_report
        from proforma.app.store.warehouse import connect

        print(
            f"warehouse {source} ({source.stat().st_size / 2**20:.0f} MiB), copied to {copy}; "
            f"{args.threads} threads"
        )
        with connect() as wh:
            prepare(wh)
            cells = wh.scalar(
                "SELECT rows FROM eval.submissions WHERE name = ? AND retired_at IS NULL",
                [args.submission],
            )
            for weights in ("variance", "equal"):
                w0, c0 = time.perf_counter(), cpu_seconds()
                res = reconcile(
                    wh, args.submission, weights, name=f"bench {weights}", progress=False
                )
                line(
                    f"reconcile {weights}",
                    time.perf_counter() - w0,
                    cpu_seconds() - c0,
                    f"{cells:,} parent rows, {res.statements:,} statements, "
                    f"{res.cells_changed:,} cells changed, max residual {res.max_residual:.1e}",
                )
        with connect(read_only=True) as wh:
            for figure2 in (False, True):
                w0, c0 = time.perf_counter(), cpu_seconds()
                out = write_report(
                    wh,
                    tmp / f"report-{figure2}",
                    oracle_origins=args.oracle_origins,
                    figure2=figure2,
                    log=lambda _: None,
                )
                line(
                    "report"
                    + (
                        f" (figure 2, {args.oracle_origins} origins)"
                        if figure2
                        else " (without figure 2)"
                    ),
                    time.perf_counter() - w0,
                    cpu_seconds() - c0,
                    f"{len(out.exhibits)} exhibits, {len(out.files)} files",
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
