"""Fingerprints of a score run's aggregates on a tiny panel (not a test).

    .venv/bin/python bench/metrics_fingerprint.py [--save FILE] [--compare FILE]

Scores eight submissions of every kind (point, Gaussian, Laplace, Student-t, a
two-component mixture, a quantile forecast, a density upload and a point upload) on the
tiny panel of tests/eval/scoring_fixtures.py with one thread and a fixed disclosure key,
publishes the snapshot, and prints a SHA-256 of eval.metrics, eval.quarter_losses,
eval.pit and the published metrics and leaderboard (rows in full, floats by repr). Used
to show that a change to the aggregate SQL left every number as it was: `--save` before,
`--compare` after (exit 1 on any difference; a table whose columns changed is compared
on the columns both have).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "eval"), str(ROOT)]

from scoring_fixtures import forecasts_from, make_panel, truth_cells
from test_eval_quantiles import GRID, _batches, _hand_made

from proforma.app import scoring
from proforma.app.flows.warehouse import prepare
from proforma.app.read.snapshot import publish
from proforma.app.store.warehouse import connect
from tests.conftest import temp_settings


def _tables(folder: Path) -> dict[str, tuple[list[str], list[tuple[Any, ...]]]]:
    settings = temp_settings(folder, public_snapshot=folder / "public.duckdb", threads=1)
    wh = connect(settings)
    prepare(wh)
    make_panel(wh)
    cells = truth_cells(wh)
    a, b = cells["actual"].to_numpy(), cells["baseline"].to_numpy()
    rng = np.random.default_rng(3)
    n = a.size

    def noisy() -> np.ndarray:
        return a + rng.normal(0, 0.4, n)

    sids = [
        scoring.ingest_forecasts(wh, "point", forecasts_from(cells, noisy())),
        scoring.ingest_forecasts(wh, "gauss", forecasts_from(cells, noisy(), np.full(n, 0.5))),
        scoring.ingest_forecasts(
            wh, "laplace", forecasts_from(cells, noisy(), np.full(n, 0.3)), family="laplace"
        ),
        scoring.ingest_forecasts(
            wh,
            "t",
            forecasts_from(cells, noisy(), np.full(n, 0.6)),
            family="student_t",
            df=5.0,
        ),
        scoring.ingest_forecasts(
            wh,
            "mix",
            pa.concat_tables(
                [
                    forecasts_from(cells, noisy(), np.full(n, 0.4), 0),
                    forecasts_from(cells, b, np.full(n, 0.9), 1),
                ]
            ),
        ),
    ]
    grid_cells = wh.arrow(
        "SELECT firm_id, origin_q, item_id, horizon, actual, change FROM panel.truth "
        "WHERE split = 'test' ORDER BY firm_id, origin_q, item_id, horizon"
    )
    q = _hand_made(a.astype(float), GRID, seed=7)
    sids.append(
        scoring.ingest_forecasts(wh, "grid", _batches(grid_cells, GRID, q), family="quantile")
    )
    upload = wh.arrow(
        "SELECT f.gvkey AS firm, i.item AS target, qlabel(t.origin_q) AS origin, t.horizon, "
        "t.actual + 0.3 * sin(t.firm_id * 7 + t.horizon) AS prediction, "
        "0.5 + 0.1 * cos(t.item_id) AS sigma "
        "FROM panel.truth t JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        "WHERE split = 'test'"
    )
    pq.write_table(upload, folder / "up.parquet")
    pq.write_table(upload.drop(["sigma"]), folder / "up_point.parquet")
    sids.append(scoring.ingest_parquet(wh, folder / "up.parquet", "upload-density"))
    sids.append(scoring.ingest_parquet(wh, folder / "up_point.parquet", "upload-point"))
    run = scoring.score(wh, "full", sids, coherence=False)
    out = {}
    for table in ("eval.metrics", "eval.quarter_losses", "eval.pit"):
        result = wh.arrow(
            f"SELECT * EXCLUDE (score_run_id) FROM {table} WHERE score_run_id = ? ORDER BY ALL",
            [run],
        )
        rows = wh.fetchall(
            f"SELECT * EXCLUDE (score_run_id) FROM {table} WHERE score_run_id = ? ORDER BY ALL",
            [run],
        )
        out[table] = (result.column_names, rows)
    wh.execute("INSERT INTO service.disclosure_key VALUES (?)", ["ab" * 32])
    publish(wh, settings)
    wh.close()
    pub = duckdb.connect(str(settings.public_snapshot), read_only=True)
    for table in ("metrics", "leaderboard"):
        cur = pub.execute(f"SELECT * FROM main.{table} ORDER BY ALL")
        out[f"pub.{table}"] = ([d[0] for d in cur.description], cur.fetchall())
    pub.close()
    return out


def _digest(columns: list[str], rows: list[tuple[Any, ...]], keep: list[str]) -> str:
    idx = [columns.index(c) for c in keep]
    body = repr([tuple(r[i] for i in idx) for r in rows])
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", type=Path)
    ap.add_argument("--compare", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="metrics-fingerprint-") as tmp:
        tables = _tables(Path(tmp))
    now = {
        t: {"columns": cols, "rows": len(rows), "sha256": _digest(cols, rows, cols)}
        for t, (cols, rows) in tables.items()
    }
    for t, v in now.items():
        print(f"{t:<22} {v['rows']:>6} rows  {v['sha256']}")
    if args.save:
        saved = {
            t: {"columns": cols, "rows_repr": [list(map(repr, r)) for r in rows]}
            for t, (cols, rows) in tables.items()
        }
        args.save.write_text(json.dumps(saved))
    if args.compare:
        before = json.loads(args.compare.read_text())
        same = True
        for t, (cols, rows) in tables.items():
            old = before[t]
            shared = [c for c in cols if c in old["columns"]]
            old_idx = [old["columns"].index(c) for c in shared]
            new_idx = [cols.index(c) for c in shared]
            old_rows = [[r[i] for i in old_idx] for r in old["rows_repr"]]
            new_rows = [[repr(r[i]) for i in new_idx] for r in rows]
            equal = old_rows == new_rows
            extra = sorted(set(cols) ^ set(old["columns"]))
            note = f" (columns only on one side: {', '.join(extra)})" if extra else ""
            print(f"{t:<22} {'identical' if equal else 'DIFFERENT'}{note}")
            same &= equal
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
