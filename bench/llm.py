"""Figures for the LLM panel on the current warehouse (PROFORMA_WAREHOUSE, built):
the sampler's time and counts, and the offline per-origin cost of the LLM path
(reported histories -> prompt -> fake answer -> strict parse -> rebuild -> forecast
rows). Provider latency and price are not here: they are the vendors'.

    .venv/bin/python bench/llm.py [--origins 500] [--threads 2]

The sampler draws a throwaway footprint named `bench-llm` and deletes it afterwards;
nothing else is written.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--origins", type=int, default=500, help="origins for the offline path")
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads")
    args = parser.parse_args()
    os.environ["PROFORMA_THREADS"] = str(args.threads)

    from proforma.app.flows.llm import origin_histories, run_origins
    from proforma.app.flows.warehouse import prepare
    from proforma.app.scoring.footprints.llm import create_llm_footprint, sample_counts
    from proforma.app.store.warehouse import connect
    from proforma.models.llm.cache import ResponseCache
    from proforma.models.llm.fake import FakeProvider
    from proforma.models.llm.prices import load_prices
    from proforma.models.llm.runner import LlmForecaster, forecast_table

    with connect() as wh:
        prepare(wh)
        panel = wh.one(
            "SELECT count(*), count(DISTINCT firm_id) FROM panel.origins WHERE split = 'test'"
        )
        print(f"warehouse {wh.path}: {panel[0]:,} test origins of {panel[1]:,} firms")

        wall, cpu = time.perf_counter(), cpu_s()
        fid = create_llm_footprint(wh, "bench-llm")
        wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
        try:
            c = sample_counts(wh, fid)
        finally:
            wh.execute("DELETE FROM eval.footprint_origins WHERE footprint_id = ?", [fid])
            wh.execute("DELETE FROM eval.footprints WHERE footprint_id = ?", [fid])
        print(
            f"sampler: pool {c['pool_origins']:,} origins / {c['pool_firms']:,} firms -> "
            f"{c['origins']:,} origins / {c['firms']:,} firms in {wall:.1f} s wall, "
            f"{cpu:.1f} CPU-s (paper: 321,892 / 12,230 -> 2,103 / 133)"
        )
        print("  per year: " + ", ".join(f"{y} {n}" for y, n in c["by_year"].items()))

        wall, cpu = time.perf_counter(), cpu_s()
        origins, _ = run_origins(wh, limit=args.origins)
        histories = origin_histories(wh, origins)
        read_wall, read_cpu = time.perf_counter() - wall, cpu_s() - cpu
        item_ids = {i: int(n) for n, i in wh.fetchall("SELECT item_id, item FROM ref.items")}

    with tempfile.TemporaryDirectory() as cache_dir:
        forecaster = LlmForecaster(
            FakeProvider(), "unstructured", ResponseCache(Path(cache_dir)), load_prices()
        )
        wall, cpu = time.perf_counter(), cpu_s()
        results = forecaster.forecast_many(histories, concurrency=1)
        table = forecast_table(results, item_ids)
        path_wall, path_cpu = time.perf_counter() - wall, cpu_s() - cpu
    n = len(histories)
    print(
        f"offline path, {n:,} origins: read histories {read_wall:.2f} s wall / "
        f"{read_cpu:.2f} CPU-s; prompt + fake answer + parse + rebuild + rows "
        f"{path_wall:.2f} s wall / {path_cpu:.2f} CPU-s = {1000 * path_cpu / max(n, 1):.1f} "
        f"CPU-ms per origin; {table.num_rows:,} forecast rows"
    )
    print(f"load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    main()
