"""Time of a board's uncertainty step (issue 49) at demo scale (not a test; prints numbers).

    .venv/bin/python bench/board_uncertainty.py [--firms 1000] [--quarters 20]
        [--members 15] [--replications 1000] [--warehouse PATH --run ID]

By default a fresh warehouse gets one board run of `--members` submissions over
firms x quarters clusters (the demo: 1,000 firms, 20 origin quarters of the test split)
with the stored per-(firm, origin quarter) sums a run writes (eval.cluster_loss_rows),
and the step (proforma.app.scoring.uncertainty.compute_board_uncertainty: the two-way
bootstrap, the metrics finished by SQL, probability best and the model confidence set
of every track) is timed on it. With --warehouse and --run it times the step on a real
board instead (e.g. after `make demo`: `proforma leaderboard` names the run).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from proforma.app.flows.warehouse import prepare
from proforma.app.scoring.uncertainty import BootstrapSettings, compute_board_uncertainty
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, connect


def synthetic_board(wh: Warehouse, firms: int, quarters: int, members: int, seed: int) -> int:
    """One board run (id 1) with clusters whose losses share firm and quarter effects."""
    rng = np.random.default_rng(seed)
    per = 78 * 20 // 4  # cells a (firm, origin quarter) holds, about
    f = np.repeat(np.arange(firms), quarters)
    q = np.tile(np.arange(quarters), firms)
    firm_fx = rng.gamma(2.0, 0.5, firms)[f]
    quarter_fx = rng.gamma(2.0, 0.5, quarters)[q]
    y = rng.normal(0, 1, f.size)
    parts = []
    for m in range(members):
        skill = 1.0 + 0.02 * m
        sse = per * skill * firm_fx * quarter_fx * rng.gamma(4.0, 0.25, f.size)
        parts.append(
            pa.table(
                {
                    "score_run_id": pa.array(np.ones(f.size, np.int32)),
                    "submission_id": pa.array(np.full(f.size, m + 1, np.int32)),
                    "firm_id": pa.array(f.astype(np.int32) + 1),
                    "origin_q": pa.array(q.astype(np.int32) + 8040),
                    "n": pa.array(np.full(f.size, per, np.int64)),
                    "sum_y": pa.array(y * per),
                    "sum_y2": pa.array(per * (y * y + 4.0 * firm_fx)),
                    "sse": pa.array(sse),
                    "n_abs": pa.array(np.full(f.size, per, np.int64)),
                    "sae": pa.array(np.sqrt(sse * per)),
                    "n_crps": pa.array(np.full(f.size, per, np.int64)),
                    "sum_crps": pa.array(0.5 * np.sqrt(sse * per)),
                }
            )
        )
    with wh.registered("bench_clusters", pa.concat_tables(parts)) as view:
        wh.execute(f"INSERT INTO eval.cluster_loss_rows BY NAME SELECT * FROM {view}")
    ids = list(range(1, members + 1))
    wh.execute(
        "INSERT INTO eval.score_runs (score_run_id, footprint_id, footprint_name, "
        "footprint_version, submission_ids, footprint_cells, n_cells, eval_sql_version, "
        "submission_checksums, started_at, finished_at, elapsed_s, board) "
        "VALUES (1, 1, 'full', 1, ?, 0, 0, 'bench', '{}', now(), now(), 0, true)",
        [ids],
    )
    wh.execute("INSERT INTO eval.run_results SELECT 1, unnest(?::INTEGER[]), 1", [ids])
    return 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--firms", type=int, default=1000)
    ap.add_argument("--quarters", type=int, default=20)
    ap.add_argument("--members", type=int, default=15)
    ap.add_argument("--replications", type=int, default=1000)
    ap.add_argument("--warehouse", type=Path)
    ap.add_argument("--run", type=int)
    args = ap.parse_args()
    cfg = BootstrapSettings(replications=args.replications)
    with tempfile.TemporaryDirectory() as tmp:
        if args.warehouse is not None:
            wh = connect(Settings(warehouse=args.warehouse))
            run = int(args.run)
        else:
            wh = connect(Settings(warehouse=Path(tmp) / "bench.duckdb"))
            prepare(wh)
            run = synthetic_board(wh, args.firms, args.quarters, args.members, seed=1)
        try:
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                assert compute_board_uncertainty(wh, run, cfg)
                times.append(time.perf_counter() - t0)
            firms, quarters, members = wh.one(
                "SELECT u.n_firms, u.n_quarters, len(r.submission_ids) FROM eval.uncertainty_runs "
                "u JOIN eval.score_runs r USING (score_run_id) WHERE score_run_id = ?",
                [run],
            )
            in_set = wh.fetchall(
                "SELECT track, count(*) FILTER (in_mcs), max(p_best) FROM eval.rank_sets "
                "WHERE score_run_id = ? GROUP BY track ORDER BY track",
                [run],
            )
        finally:
            wh.close()
    print(
        f"board uncertainty: {members} members x {firms} firms x {quarters} origin quarters, "
        f"{cfg.replications} replications (block {cfg.block_size}, seed {cfg.seed})"
    )
    print(f"  time: best {min(times):.2f}s, median {sorted(times)[1]:.2f}s of 3")
    for track, n, p in in_set:
        print(f"  {track}: {n} in the {1 - cfg.mcs_alpha:.0%} MCS, top P(best) {p:.2f}")


if __name__ == "__main__":
    main()
