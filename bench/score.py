"""Benchmark: ingest and score a synthetic N-row submission (default 50M rows).

    .venv/bin/python bench/score.py --rows 50000000 [--dir /tmp/bench_score] [--memory 3GB]
    .venv/bin/python bench/score.py --rows 21000000 --levels 21   # a quantile forecast

A synthetic panel (panel.firms, panel.truth) and a submission parquet (gvkey strings,
item names, dates, horizons, predictions, sigma) are generated with DuckDB in a child
process, so the measured process starts clean. Then ingest_parquet (validation in SQL,
integer coding, duplicate check) and score (common sample, all metrics at every level,
PIT, DM quarter means) run in this process. Prints rows/second per stage and end to
end, and peak resident memory (sampled every 50 ms, and the kernel's high-water mark).
With --levels K the submission is a quantile forecast (K rows per cell: the Chronos-2 grid
for K = 21, else K evenly spaced levels), --rows rows in all.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _cpu_seconds() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _hwm_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


class PeakMemory:
    """Samples this process's RSS in a thread; .peak is the maximum seen."""

    def __init__(self, every: float = 0.05):
        self.every, self.peak, self._stop = every, 0, threading.Event()

    def __enter__(self):
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_bytes())
            time.sleep(self.every)

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, _rss_bytes())


def _grid(levels: int) -> list[float]:
    if levels == 21:
        return [0.01, *[round(0.05 * k, 2) for k in range(1, 20)], 0.99]
    return [(k + 1) / (levels + 1) for k in range(levels)]


def generate(folder: Path, rows: int, memory: str, threads: int, levels: int = 0) -> None:
    """Child process: migrated warehouse with a synthetic panel, and the submission file."""
    from proforma.app.flows.warehouse import prepare
    from proforma.app.store.settings import Settings
    from proforma.app.store.warehouse import connect

    settings = Settings(
        warehouse=folder / "wh.duckdb",
        temp_directory=folder / "tmp",
        memory_limit=memory,
        threads=threads,
        cache_dir=folder / "cache",
    )
    wh = connect(settings)
    prepare(wh)
    rows = rows // levels if levels else rows  # truth cells
    cells_per_origin = 78 * 20
    n_origins = -(-rows // cells_per_origin)
    n_quarters = 60
    n_firms = -(-n_origins // n_quarters)
    wh.execute("CREATE SCHEMA IF NOT EXISTS panel")
    wh.execute(f"""
        CREATE OR REPLACE TABLE panel.firms AS
        SELECT CAST(range + 1 AS INTEGER) AS firm_id, lpad(CAST(range + 1 AS VARCHAR), 6, '0')
               AS gvkey, 3000 AS sic, CAST(1 AS SMALLINT) AS ff48
        FROM range({n_firms})""")
    # 60 test quarters (2010-2024); truth for every item and horizon of each origin.
    wh.execute(f"""
        CREATE OR REPLACE TABLE panel.truth AS
        WITH o AS (
            SELECT CAST(1 + r // {n_quarters} AS INTEGER) AS firm_id,
                   CAST(8040 + r % {n_quarters} AS INTEGER) AS origin_q
            FROM range({n_origins}) t(r)
        ), c AS (
            SELECT o.firm_id, o.origin_q, CAST(i.item_id AS SMALLINT) AS item_id,
                   CAST(h.h AS TINYINT) AS horizon,
                   (hash(o.firm_id, o.origin_q, i.item_id) % 1000000) / 1e6 * 2 - 1 AS baseline,
                   (hash(o.firm_id, o.origin_q, i.item_id, h.h) % 1000000) / 1e6 - 0.5 AS noise
            FROM o, (SELECT item_id FROM ref.items WHERE is_target) i,
                 (SELECT unnest(range(1, 21)) AS h) h
        )
        SELECT firm_id, origin_q, item_id, horizon, 'test' AS split,
               -- FLOAT, as the build writes panel.truth
               CAST(baseline + noise AS FLOAT) AS actual, CAST(baseline AS FLOAT) AS baseline,
               CAST(baseline + noise AS FLOAT) - CAST(baseline AS FLOAT) AS change
        FROM c
        LIMIT {rows}""")
    if levels:
        from scipy import special

        grid = _grid(levels)
        wh.set_params({"levels": grid, "z": [float(special.ndtri(t)) for t in grid]})
        wh.execute(f"""
            COPY (
                SELECT f.gvkey AS firm, i.item AS target, qend(t.origin_q) AS origin,
                       CAST(t.horizon AS INTEGER) AS horizon, g.level AS quantile_level,
                       t.baseline + 0.5 * t.change + 0.1 + (0.3 + 0.1 * (t.horizon % 3)) * g.z
                           AS prediction
                FROM panel.truth t
                JOIN panel.firms f USING (firm_id)
                JOIN ref.items i USING (item_id),
                (SELECT unnest(getvariable('levels')) AS level,
                        unnest(getvariable('z')) AS z) g
            ) TO '{folder / "submission.parquet"}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)""")
    else:
        wh.execute(f"""
            COPY (
                SELECT f.gvkey AS firm, i.item AS target, qend(t.origin_q) AS origin,
                       CAST(t.horizon AS INTEGER) AS horizon,
                       t.baseline + 0.5 * t.change + 0.1 AS prediction,
                       0.3 + 0.1 * (t.horizon % 3) AS sigma
                FROM panel.truth t
                JOIN panel.firms f USING (firm_id)
                JOIN ref.items i USING (item_id)
            ) TO '{folder / "submission.parquet"}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)""")
    # The origins (the submission checks accept forecasts at eligible origins only) and
    # an empty panel.values: the LLM protocol's sample, one of the standard footprints,
    # draws from firms' reported quarters and is empty here (the bench scores `full`).
    wh.execute(
        "CREATE OR REPLACE TABLE panel.origins AS SELECT DISTINCT firm_id, origin_q, "
        "'test' AS split, 1.0 AS z, CAST(1 AS SMALLINT) AS ff48 FROM panel.truth "
        "ORDER BY origin_q, firm_id"
    )
    wh.execute(
        f"CREATE OR REPLACE TABLE panel.splits AS SELECT 'test' AS split, "
        f"8040 AS first_q, {8040 + n_quarters - 1} AS last_q"
    )
    wh.execute(
        "CREATE OR REPLACE TABLE panel.values (firm_id INTEGER, q INTEGER, "
        "item_id SMALLINT, v DOUBLE)"
    )
    # A build record, as `proforma build` writes one; footprints are made once per build.
    wh.execute(
        "INSERT INTO meta.builds (status, sql_checksum, parameters, reg_stats, "
        "started_at, finished_at) VALUES ('succeeded', 'bench', '{}', 'synthetic bench', "
        "now()::TIMESTAMP, now()::TIMESTAMP)"
    )
    from proforma.app.scoring import ensure_standard_footprints

    ensure_standard_footprints(wh)
    wh.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/bench_score"))
    ap.add_argument("--memory", default="3GB", help="DuckDB memory_limit")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", action="store_true", help="reuse an existing generated folder")
    ap.add_argument("--levels", type=int, default=0, help="a quantile forecast of this many levels")
    ap.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    folder = args.dir
    if args.generate_only:
        generate(folder, args.rows, args.memory, args.threads, args.levels)
        return
    if not (args.keep and (folder / "submission.parquet").exists()):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        t = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--rows",
                str(args.rows),
                "--dir",
                str(folder),
                "--memory",
                args.memory,
                "--threads",
                str(args.threads),
                "--levels",
                str(args.levels),
                "--generate-only",
            ],
            check=True,
        )
        print(
            f"generated the panel and a {args.rows:,}-row submission in "
            f"{time.perf_counter() - t:.1f}s"
        )

    from proforma.app import scoring
    from proforma.app.store.settings import Settings
    from proforma.app.store.warehouse import connect

    settings = Settings(
        warehouse=folder / "wh.duckdb",
        temp_directory=folder / "tmp",
        memory_limit=args.memory,
        threads=args.threads,
        cache_dir=folder / "cache",
    )
    wh = connect(settings)
    wh.execute(
        "DELETE FROM eval.forecast_rows; DELETE FROM eval.forecast_points; DELETE FROM eval.metric_rows; "
        "DELETE FROM eval.quarter_loss_rows; DELETE FROM eval.pit_rows; DELETE FROM eval.coverage; "
        "DELETE FROM eval.run_results; DELETE FROM eval.dm_test_rows; DELETE FROM eval.run_dm_sources; "
        "DELETE FROM eval.cell_density_scores; DELETE FROM eval.cell_point_scores; "
        "DELETE FROM eval.cell_score_sets; "
        "DELETE FROM eval.footprint_coverage; DELETE FROM eval.sample_gaps"
    )
    wh.execute("CHECKPOINT")
    path = folder / "submission.parquet"
    size = path.stat().st_size
    results, cpu = {}, {}
    with PeakMemory() as mem_in:
        t, c = time.perf_counter(), _cpu_seconds()
        sid = scoring.ingest_parquet(wh, path, f"bench {time.time():.0f}", replace=True)
        results["ingest"], cpu["ingest"] = time.perf_counter() - t, _cpu_seconds() - c
    with PeakMemory() as mem_score:
        t, c = time.perf_counter(), _cpu_seconds()
        run = scoring.score(wh, "full", [sid], coherence=False, baselines=False)
        results["score"], cpu["score"] = time.perf_counter() - t, _cpu_seconds() - c
    n = wh.scalar("SELECT rows FROM eval.submissions WHERE submission_id = ?", [sid])
    cells = wh.scalar("SELECT n_cells FROM eval.score_runs WHERE score_run_id = ?", [run])
    r2 = wh.scalar("SELECT r2 FROM eval.metrics WHERE score_run_id = ? AND level = 'global'", [run])
    wh.close()
    total = results["ingest"] + results["score"]
    total_cpu = cpu["ingest"] + cpu["score"]
    gb = 1024**3
    kind = f"quantile forecast of {args.levels} levels" if args.levels else "mean and sigma"
    print(
        f"submission ({kind}): {n:,} rows, {size / gb:.2f} GiB parquet; scored on {cells:,} cells "
        f"(R2 {r2:.4f}); threads {args.threads}, DuckDB memory_limit {args.memory}"
    )
    print(f"  load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for stage in ("ingest", "score"):
        print(
            f"  {stage:7s} {results[stage]:7.1f}s wall {n / results[stage] / 1e6:6.2f}M rows/s;"
            f" {cpu[stage]:7.1f}s CPU {n / cpu[stage] / 1e6:6.2f}M rows per CPU-second"
        )
    print(
        f"  total   {total:7.1f}s wall {n / total / 1e6:6.2f}M rows/s end to end "
        f"({n / total / args.threads / 1e6:.2f}M rows/s per core); {total_cpu:.1f}s CPU "
        f"{n / total_cpu / 1e6:.2f}M rows per CPU-second"
    )
    print(
        f"  peak RSS: ingest {mem_in.peak / gb:.2f} GiB, score {mem_score.peak / gb:.2f} GiB, "
        f"process high-water mark {_hwm_bytes() / gb:.2f} GiB"
    )


if __name__ == "__main__":
    main()
