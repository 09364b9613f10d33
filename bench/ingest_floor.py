"""The floor of storing one point file: what the read, the key coding and the write cost.

    .venv/bin/python bench/ingest_floor.py --warehouse WH.duckdb --file FORECASTS.parquet \
        [--workdir /tmp/ingest-floor] [--threads 2] [--repeats 3]

On a copy of the warehouse, with the upload's own view over the file (`submission_in`,
proforma.app.scoring.submissions.uploads) and its key coding (sql/eval/019), each repeat times:

- read + code: one pass over the file with every key coded, summed, nothing kept;
- temp table: the same rows as 021 stores them, into a temp table (kept in memory);
- insert (021): the real insert into eval.forecast_points, then rolled back.

The difference between the last two is the cost of writing compressed columns to the
database file; the first is what any ingest pays to read the file. Prints the load
beside the figures; nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from published_tools import copied_warehouse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--file", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/ingest-floor"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory", default="2GB")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.environ.update(
        copied_warehouse(args.warehouse, args.workdir, "wh", args.threads, args.memory)
    )
    from proforma.app.cli.common import writer
    from proforma.app.scoring.submissions.uploads import _schema_view

    schema = pq.ParquetFile(args.file).schema_arrow
    view_sql, problems = _schema_view(args.file, schema, quantile=False)
    if problems:
        raise SystemExit(f"not a point file this bench can read: {problems}")
    stored = "firm_id, origin_q, item_id, horizon, prediction AS mu"
    with writer() as wh:
        wh.execute(view_sql)
        wh.run_step("eval/019_submission_keyed")
        rows = wh.scalar("SELECT count(*) FROM submission_in")
        print(
            f"{args.file.name}: {rows:,} rows; threads {args.threads}; "
            f"load {Path('/proc/loadavg').read_text().split()[0]}"
        )

        def timed(label: str, sql: str, params: dict | None = None) -> None:
            wh.execute("BEGIN TRANSACTION")
            try:
                if params:
                    wh.set_params(params)
                t0 = time.perf_counter()
                wh.execute(sql)
                print(f"  {label:<26} {time.perf_counter() - t0:6.2f} s", flush=True)
            finally:
                wh.execute("ROLLBACK")

        insert = (ROOT / "sql/eval/021_submission_insert_points.sql").read_text()
        for i in range(args.repeats):
            print(f"repeat {i + 1}")
            timed(
                "read + code",
                "SELECT count(*), sum(firm_id), sum(origin_q), sum(item_id), sum(horizon), "
                "sum(prediction) FROM submission_keyed",
            )
            timed(
                "temp table",
                f"CREATE OR REPLACE TEMP TABLE stored AS SELECT {stored} FROM submission_keyed",
            )
            timed("insert (021)", insert, {"submission_id": 1_000_000})
        print(f"load at the end {Path('/proc/loadavg').read_text().split()[0]}")


if __name__ == "__main__":
    main()
