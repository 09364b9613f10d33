"""Where scoring one submission file spends its time: every SQL statement, and its operators.

    .venv/bin/python bench/score_profile.py --warehouse WH.duckdb --file FORECASTS.parquet \
        [--workdir /tmp/score-profile] [--threads 2] [--memory 2GB] [--top 3]

The warehouse is copied into --workdir (the original is never written), then the file goes
through the same path as `proforma submit` and `proforma score -s NAME --no-coherence`:
ingest_parquet (validation, insert, checks) and score (cell scores, common sample,
aggregates, metrics). Each statement of each sql/ step runs with DuckDB's JSON profiler on
(the same switch as EXPLAIN ANALYZE); the script prints, per step, wall seconds and the
operators with the most time, summed over threads as DuckDB reports them. Profiling costs
a few percent: compare totals with bench/vs_published.py, not with this.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from published_tools import copied_warehouse

from proforma.app.store.sqlfiles import SqlFile, sql_file
from proforma.app.store.warehouse import Warehouse


def operators(node: dict, out: dict[str, float]) -> None:
    """Sum each operator type's own time (DuckDB reports it summed over threads)."""
    for child in node.get("operator", []) + node.get("children", []):
        out[child["type"]] += child.get("timing", 0.0)
        operators(child, out)


class StepProfiler:
    """Wraps Warehouse.run_step / query_step so every statement writes one profile."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seq = 0
        self.steps: list[tuple[str, float, dict[str, float], int]] = []

    def profiled(
        self,
        wh: Warehouse,
        step: str | Path | SqlFile,
        params: Mapping[str, Any] | None,
        identifiers: dict[str, str] | None,
        want_rows: bool,
    ) -> pa.Table | None:

        f = step if isinstance(step, SqlFile) else sql_file(step)
        wh.set_params(params)
        statements = wh.con.extract_statements(f.render(identifiers))
        ops: dict[str, float] = defaultdict(float)
        rows = 0
        result = None
        start = time.perf_counter()
        for i, statement in enumerate(statements):
            self.seq += 1
            out = self.folder / f"{self.seq:04d}_{Path(str(f.path)).stem}_{i}.json"
            wh.con.execute("PRAGMA enable_profiling='json'")
            wh.con.execute(f"PRAGMA profiling_output='{out}'")
            if want_rows and i == len(statements) - 1:
                result = wh.con.sql(statement.query).to_arrow_table()
            else:
                wh.execute(statement.query)
            wh.con.execute("PRAGMA disable_profiling")
            if out.exists():
                profile = json.loads(out.read_text())
                operators(profile, ops)
                rows += profile.get("query", {}).get("total_rows_scanned", 0)
        self.steps.append((Path(str(f.path)).stem, time.perf_counter() - start, ops, rows))
        return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--file", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/score-profile"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory", default="2GB")
    ap.add_argument("--top", type=int, default=3)
    args = ap.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    (args.workdir / "profiles").mkdir(parents=True)
    os.environ.update(
        copied_warehouse(args.warehouse, args.workdir, "wh", args.threads, args.memory)
    )
    from proforma.app.cli.common import writer
    from proforma.app.scoring import ingest_parquet, score

    profiler = StepProfiler(args.workdir / "profiles")

    def run_step(wh: Warehouse, step: Any, params: Any = None, identifiers: Any = None) -> None:
        profiler.profiled(wh, step, params, identifiers, False)

    def query_step(wh: Warehouse, step: Any, params: Any = None, identifiers: Any = None) -> Any:
        return profiler.profiled(wh, step, params, identifiers, True)

    name = f"profiled {args.file.stem}"
    with (
        patch.object(Warehouse, "run_step", run_step),
        patch.object(Warehouse, "query_step", query_step),
        writer() as wh,
    ):
        t0 = time.perf_counter()
        ingest_parquet(wh, args.file, name)
        t1 = time.perf_counter()
        score(wh, "full", [name], coherence=False)
        t2 = time.perf_counter()

    print(f"load {Path('/proc/loadavg').read_text().split()[0]}; threads {args.threads}")
    print(f"ingest {t1 - t0:.2f} s wall, score {t2 - t1:.2f} s wall (profiling on)")
    print(f"{'step':<34} {'wall s':>7}  top operators (s summed over threads)")
    for step, seconds, ops, _rows in sorted(profiler.steps, key=lambda s: -s[1]):
        top = sorted(ops.items(), key=lambda kv: -kv[1])[: args.top]
        print(f"{step:<34} {seconds:7.2f}  " + ", ".join(f"{k} {v:.2f}" for k, v in top))
    accounted = sum(s[1] for s in profiler.steps)
    print(f"{'sql steps in all':<34} {accounted:7.2f}  (the rest is Python and file reads)")


if __name__ == "__main__":
    main()
