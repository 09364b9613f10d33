"""Time and memory of `ingest parquet` at the real panel's scale (not a test).

Writes a Compustat-shaped panel of N rows (about 2M in the real pull) with random
values, then validates and ingests it into a fresh warehouse, printing seconds,
rows per second and the peak resident memory of this process.

    .venv/bin/python bench/bench_parquet_ingest.py --rows 2000000
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.flows.warehouse import prepare
from proforma.app.sources import ingest
from proforma.app.sources.parquet import ParquetSource
from proforma.app.store.reference import raw_item_columns_from_file
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import connect


def write_panel(path: Path, rows: int, batch: int = 200_000) -> None:
    items = raw_item_columns_from_file()
    rng = np.random.default_rng(0)
    writer = None
    for start in range(0, rows, batch):
        n = min(batch, rows - start)
        idx = np.arange(start, start + n)
        firm, q = idx // 80, idx % 80  # 80 quarters per firm
        year = 1990 + q // 4
        quarter = q % 4 + 1
        days = (np.datetime64("1990-03-31") + (q * 91).astype("timedelta64[D]")).astype(
            "datetime64[D]"
        )
        cols = {
            "gvkey": pa.array([f"{f:06d}" for f in firm]),
            "datadate": pa.array(days),
            "fyearq": pa.array(year.astype(np.float64)),
            "fqtr": pa.array(quarter.astype(np.float64)),
            "sich": pa.array((firm % 90 * 100 + 100).astype(np.float64)),
            "naicsh": pa.array(np.full(n, np.nan)),
            "permno": pa.array((firm + 10_000).astype(np.float64)),
        }
        for item in items:
            v = rng.standard_normal(n) * 100
            v[rng.random(n) < 0.3] = np.nan
            cols[item] = pa.array(v, from_pandas=True)
        table = pa.table(cols)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="zstd")
        writer.write_table(table)
    assert writer is not None, "no rows to write"
    writer.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        settings = Settings(warehouse=tmp / "w.duckdb", temp_directory=tmp / "spill")
        t0 = time.perf_counter()
        write_panel(tmp / "panel.parquet", args.rows)
        size = (tmp / "panel.parquet").stat().st_size
        print(f"wrote {args.rows:,} rows ({size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f}s")
        wh = connect(settings)
        prepare(wh)
        src = ParquetSource(tmp / "panel.parquet", settings=settings)
        t0 = time.perf_counter()
        src.validate()
        validate_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = ingest(wh, src)
        ingest_s = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"validate {validate_s:.1f}s, ingest {ingest_s:.1f}s "
            f"({args.rows / ingest_s:,.0f} rows/s), memory_limit {settings.memory_limit}, "
            f"threads {settings.threads or 'all'}, peak RSS {peak_mb:,.0f} MB"
        )
        print(result.line())
        src.close()
        wh.close()


if __name__ == "__main__":
    main()
