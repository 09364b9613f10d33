"""Benchmark `proforma build`: wall time and peak memory at demo and full scale.

    .venv/bin/python bench/build.py --scale demo|full [--source synthetic|generated]

`synthetic` ingests the synthetic source (`proforma ingest synthetic --scale S`, another
part of the project) when it is installed; `generated` (the fallback, and the default
when the synthetic source is not there) writes a Compustat-shaped raw panel of the
right size with random values directly in DuckDB SQL (below), so the figure exists.
The build runs in this process; peak memory is the process's RSS high-water mark
(VmHWM from /proc, which includes DuckDB's buffers), sampled per step too.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

SCALES = {"demo": 1_600, "full": 33_000}  # firms; full gives about 1.2M firm-quarters


def _hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s() -> float:
    """CPU seconds (user + system) of this process, DuckDB's threads included."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def generated_raw_sql(items: list[str], ytd: list[str], firms: int, seed: float = 0.42) -> str:
    """SQL that fills raw.* with a random Compustat-shaped panel of `firms` firms."""
    cols = []
    for n, col in enumerate(items + ytd):
        # Availability differs by item (30%..98%); a few items carry negative values.
        avail = 0.30 + 0.68 * ((n * 37) % 71) / 70
        sign = "CASE WHEN random() < 0.15 THEN -1 ELSE 1 END" if n % 5 == 0 else "1"
        cols.append(
            f"CASE WHEN random() < {avail:.3f} THEN {sign} * s * (0.02 + {((n * 13) % 29) / 29:.3f})"
            f" * exp(0.6 * sqrt(-2 * ln(random() + 1e-12)) * cos(6.283185307 * random())) END AS {col}"
        )
    flows = ", ".join(f"sum({c}) OVER fy AS {c}" for c in ytd)
    keep = ", ".join(items)
    return f"""
SELECT setseed({seed});
CREATE OR REPLACE TEMP TABLE gen_firms AS
SELECT i AS fid, lpad(CAST(i + 1000 AS VARCHAR), 6, '0') AS gvkey,
       (7880 + floor(random() * 200))::INTEGER AS start_q,
       (1 + floor(-ln(random() + 1e-12) * 40))::INTEGER AS len,
       [3, 6, 9, 12, 12, 12, 12][1 + floor(random() * 7)::INTEGER] AS fyr,
       exp(4 + 2 * sqrt(-2 * ln(random() + 1e-12)) * cos(6.283185307 * random())) AS size0,
       CASE WHEN random() < 0.1 THEN 6000 + floor(random() * 1000) ELSE 100 + floor(random() * 9800) END::INTEGER AS sich
FROM range({firms}) t(i);
CREATE OR REPLACE TEMP TABLE gen_rows AS
SELECT f.gvkey, f.fyr, qend(f.start_q + j) AS datadate, f.start_q + j AS q,
       f.size0 * exp(0.01 * j + 0.1 * sqrt(-2 * ln(random() + 1e-12)) * cos(6.283185307 * random())) AS s
FROM gen_firms f, range(400) r(j)
WHERE j < f.len AND f.start_q + j <= 8099 AND random() > 0.03;
CREATE OR REPLACE TEMP TABLE gen_wide AS
SELECT gvkey, datadate, fyr,
       (year(datadate) + CASE WHEN month(datadate) > fyr THEN 1 ELSE 0 END)::INTEGER AS fyearq,
       (((month(datadate) - fyr + 11) % 12) // 3 + 1)::TINYINT AS fqtr,
       {", ".join(cols)}
FROM gen_rows;
INSERT INTO raw.fundq BY NAME
SELECT gvkey, datadate, fyearq, fqtr, fyr, {keep}, {flows}
FROM gen_wide
WINDOW fy AS (PARTITION BY gvkey, fyearq ORDER BY fqtr);
INSERT INTO raw.company_industry SELECT gvkey, qend(start_q), sich, NULL FROM gen_firms;
INSERT INTO raw.ccm_link
SELECT gvkey, fid, 'LU', 'P', qend(start_q + 2), CASE WHEN random() < 0.5 THEN NULL ELSE qend(start_q + len - 3) END
FROM gen_firms WHERE random() < 0.6;
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="demo")
    parser.add_argument("--source", choices=["synthetic", "generated"], default="synthetic")
    parser.add_argument(
        "--workdir", default=None, help="Folder for the warehouse (default: a temp dir)"
    )
    parser.add_argument("--memory-limit", default="5GB", help="DuckDB memory_limit for the build")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--firms",
        type=int,
        default=None,
        help="Firms for the synthetic source (default: the scale's own)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="Keep the raw panel already in --workdir (skip the ingest)",
    )
    args = parser.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench_build_"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["PROFORMA_WAREHOUSE"] = str(work / "warehouse.duckdb")
    os.environ["PROFORMA_TEMP_DIRECTORY"] = str(work / "tmp")
    os.environ["PROFORMA_MEMORY_LIMIT"] = args.memory_limit
    os.environ["PROFORMA_THREADS"] = str(args.threads)
    import subprocess
    import sys

    from proforma.app.flows.build import run_build
    from proforma.app.flows.warehouse import prepare
    from proforma.app.store.reference import raw_item_columns
    from proforma.app.store.settings import get_settings
    from proforma.app.store.warehouse import connect

    get_settings.cache_clear()
    source = args.source
    t0 = time.perf_counter()
    if source == "synthetic":
        have = False
        if args.reuse and Path(os.environ["PROFORMA_WAREHOUSE"]).exists():
            with connect() as probe:
                have = probe.table_exists("raw.fundq") and bool(
                    probe.scalar("SELECT count(*) FROM raw.fundq")
                )
        proc = (
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    "from proforma.app.cli import main; main()",
                    "ingest",
                    "synthetic",
                    "--scale",
                    args.scale,
                    *(["--firms", str(args.firms)] if args.firms else []),
                ],
                check=False,
                capture_output=True,
                text=True,
            )
            if not have
            else subprocess.CompletedProcess([], 0)
        )
        if proc.returncode != 0:
            print(
                f"synthetic source unavailable ({proc.stderr.strip().splitlines()[-1:]}); "
                "generating a Compustat-shaped panel in SQL instead"
            )
            source = "generated"
    wh = connect()
    prepare(wh)
    if source == "generated" and not (args.reuse and wh.scalar("SELECT count(*) FROM raw.fundq")):
        cols = raw_item_columns(wh)
        ytd = [c for c in cols if c.endswith("y")]
        items = [c for c in cols if c not in ytd]
        wh.execute(
            "DELETE FROM raw.fundq; DELETE FROM raw.company_industry; DELETE FROM raw.ccm_link;"
        )
        wh.execute(generated_raw_sql(items, ytd, SCALES[args.scale]))
    raw_rows = wh.scalar("SELECT count(*) FROM raw.fundq")
    print(
        f"raw panel ({source}, {args.scale}): {raw_rows:,} raw.fundq rows in "
        f"{time.perf_counter() - t0:.1f}s; process RSS high-water so far {_hwm_mb():,.0f} MB"
    )
    marks: list[tuple[str, float, float, float]] = []
    t_step = [time.perf_counter(), 0.0]

    def on_step(i, n, step, phase):
        if phase == "start":
            t_step[:] = [time.perf_counter(), _cpu_s()]
        else:
            marks.append(
                (step.name, time.perf_counter() - t_step[0], _cpu_s() - t_step[1], _hwm_mb())
            )
            print(
                f"  {step.name:<28} {marks[-1][1]:7.1f}s wall {marks[-1][2]:7.1f}s CPU  "
                f"hwm {marks[-1][3]:8,.0f} MB  load {os.getloadavg()[0]:.1f}",
                flush=True,
            )

    t1 = time.perf_counter()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    result = run_build(wh, "estimate", on_step=on_step)
    elapsed = time.perf_counter() - t1
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    fq = wh.scalar("SELECT count(*) FROM stage.fq")
    cells = result.row_counts.get("panel.truth_cells", {}).get("total", 0)
    size = sum(p.stat().st_size for p in work.glob("warehouse.duckdb*"))
    wh.close()
    print(
        f"build ({args.scale}, {source}, threads={args.threads}, memory_limit={args.memory_limit}): "
        f"{elapsed:.1f}s, peak RSS {_hwm_mb():,.0f} MB, {fq:,} scale-valid firm-quarters, "
        f"{cells:,} truth cells, warehouse {size / 2**30:.2f} GiB; CPU {cpu:.0f}s "
        f"(= {cpu / args.threads:.0f}s wall on {args.threads} idle cores); load average at end "
        f"{os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
