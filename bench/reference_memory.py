"""The reference baselines' memory and time: this code beside an earlier tree of it and the
published package's `baselines --which naive,fade`, on the same warehouse, with the
forecasts (and, with --score, their scores) compared between the two trees.

    nice .venv/bin/python bench/reference_memory.py --warehouse WH [--cache DIR] \\
        [--before-tree DIR] [--published-venv /tmp/pfvenv --processed PKG] \\
        [--workdir /tmp/refmem_bench] [--threads 2] [--rounds 1] [--score] [--compare-only]

WH is a built warehouse (a vs_published workdir's `wh_before_scoring.duckdb`), copied
twice into --workdir, never written. --before-tree: a checkout of the earlier code
(`git archive REV | tar -x -C DIR`), run with PYTHONPATH=DIR by this virtualenv's
interpreter; its SQL is its own. --processed: the package's processed folder (a
vs_published workdir's `pkg`). Each round runs, one after the other: the package, the
earlier tree's `proforma baselines reference --force`, this tree's; every child is
measured alone (wall, CPU, peak resident memory: bench/published_tools.py). Then, read
from both copies: per baseline, rows, cells whose forecast differs in any bit, and the
largest absolute difference. --score scores both baselines in each copy (`proforma score
-s ... --no-coherence`, each tree its own) and compares every metric row of the two runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published_tools import PROFORMA, Measured, load, published_cli, run

NAMES = ("Seasonal random walk", "Fade / AR(1)")


def copy_warehouse(source: Path, work: Path, name: str, args: argparse.Namespace) -> dict:
    """A copy of the warehouse (no stale WAL beside it) and the settings that open it."""
    target = work / f"{name}.duckdb"
    shutil.copy(source, target)
    Path(f"{target}.wal").unlink(missing_ok=True)
    cache = work / f"cache_{name}"
    if args.cache and not cache.exists():
        shutil.copytree(args.cache, cache)
    env = {
        "PROFORMA_WAREHOUSE": str(target),
        "PROFORMA_TEMP_DIRECTORY": str(work / f"tmp_{name}"),
        "PROFORMA_CACHE_DIR": str(cache),
        "PROFORMA_MODELS_DIR": str(work / "models"),
    }
    if args.threads:
        env["PROFORMA_THREADS"] = str(args.threads)
    return env


def compare(before: Path, after: Path, score: bool) -> dict:
    """Forecasts (and metrics of the last run of each) of the two copies, in a child
    process (the bench's own stays small: see vs_published.in_child)."""
    code = r"""
import json, sys, duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute(f"ATTACH '{sys.argv[1]}' AS b (READ_ONLY)")
con.execute(f"ATTACH '{sys.argv[2]}' AS a (READ_ONLY)")
out = {}
for name in json.loads(sys.argv[3]):
    sid = {}
    for db in ("b", "a"):
        sid[db] = con.execute(
            f"SELECT submission_id FROM {db}.eval.submissions WHERE name = ? "
            "AND retired_at IS NULL AND source = 'reference'", [name]).fetchone()[0]
    row = con.execute(
        "SELECT count(*), count(b.firm_id), count(a.firm_id), "
        "count(*) FILTER (WHERE b.mu IS DISTINCT FROM a.mu), max(abs(b.mu - a.mu)) "
        "FROM (SELECT * FROM b.eval.forecast_points WHERE submission_id = $b) b "
        "FULL JOIN (SELECT * FROM a.eval.forecast_points WHERE submission_id = $a) a "
        "USING (firm_id, origin_q, item_id, horizon)", {"b": sid["b"], "a": sid["a"]}).fetchone()
    res = dict(zip(["cells", "before_rows", "after_rows", "differing", "max_abs_diff"], row))
    if sys.argv[4] == "1":
        cols = ["n", "r2", "mse", "mae", "sse", "sae"]
        # largest relative difference of each metric (where the value is not ~0: 1e-9) and
        # largest absolute one; NaN equals NaN, as DuckDB compares them
        diffs = ", ".join(
            f"coalesce(max(abs(b.{c} - a.{c}) / abs(b.{c})) FILTER (WHERE abs(b.{c}) > 1e-9 "
            f"AND b.{c} IS DISTINCT FROM a.{c}), 0) AS {c}_rel, "
            f"coalesce(max(abs(b.{c} - a.{c})) FILTER (WHERE b.{c} IS DISTINCT FROM a.{c}), 0) "
            f"AS {c}_abs"
            for c in cols)
        m = con.execute(
            f"WITH b AS (SELECT * FROM b.eval.metrics WHERE submission_id = $b AND score_run_id ="
            f" (SELECT max(score_run_id) FROM b.eval.metrics WHERE submission_id = $b)), "
            f"a AS (SELECT * FROM a.eval.metrics WHERE submission_id = $a AND score_run_id ="
            f" (SELECT max(score_run_id) FROM a.eval.metrics WHERE submission_id = $a)) "
            f"SELECT count(*), count(b.level), count(a.level), {diffs} FROM b FULL JOIN a "
            f"ON a.level = b.level AND a.horizon IS NOT DISTINCT FROM b.horizon "
            f"AND a.item_id IS NOT DISTINCT FROM b.item_id "
            f"AND a.statement IS NOT DISTINCT FROM b.statement",
            {"b": sid["b"], "a": sid["a"]}).fetchone()
        keys = [f"{c}_{k}" for c in cols for k in ("rel", "abs")]
        res["metrics"] = dict(zip(["rows", "before_rows", "after_rows"] + keys, m))
    out[name] = res
print(json.dumps(out, default=float))
"""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(before),
            str(after),
            json.dumps(NAMES),
            "1" if score else "0",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--cache", type=Path, default=None, help="its cache folder (grids)")
    ap.add_argument("--before-tree", type=Path, default=None)
    ap.add_argument("--published-venv", type=Path, default=None)
    ap.add_argument("--processed", type=Path, default=None)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/proforma-reference-memory"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--score", action="store_true")
    ap.add_argument(
        "--compare-only",
        action="store_true",
        help="Only compare the two copies an earlier run left in --workdir.",
    )
    args = ap.parse_args()
    work = args.workdir
    if args.compare_only:
        for name, res in compare(work / "before.duckdb", work / "after.duckdb", args.score).items():
            print(f"{name}: {json.dumps(res)}")
        return
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    print(f"workdir {work}; warehouse {args.warehouse}; threads {args.threads}; load {load()}")
    after_env = copy_warehouse(args.warehouse, work, "after", args)
    before_env = None
    if args.before_tree:
        before_env = copy_warehouse(args.warehouse, work, "before", args)
        before_env["PYTHONPATH"] = str(args.before_tree.resolve())
    cli = published_cli(args.published_venv) if args.published_venv else None
    if cli and not args.processed:
        raise SystemExit("--published-venv needs --processed (the package's processed folder)")
    command = [str(PROFORMA), "baselines", "reference", "--force"]
    rows: list[tuple[str, list[Measured]]] = [("package", []), ("before", []), ("after", [])]
    for r in range(args.rounds):
        if cli:
            rows[0][1].append(
                run(
                    f"package: baselines naive,fade ({r + 1})",
                    [str(cli), "baselines", "--which", "naive,fade"]
                    + ["--processed", str(args.processed), "--out", str(work / "pkg_refs")],
                    log=work / "pkg_baselines.log",
                )
            )
        if before_env:
            rows[1][1].append(
                run(f"ours before ({r + 1})", command, env=before_env, log=work / "before.log")
            )
        rows[2][1].append(
            run(f"ours after ({r + 1})", command, env=after_env, log=work / "after.log")
        )
    print(f"load after the runs {load()}")
    for label, ms in rows:
        for m in ms:
            print(f"{label:<8} {m.wall_s:7.1f} s {m.cpu_s:7.1f} CPU-s {m.peak_mb:6.0f} MB")
    if before_env:
        if args.score:
            for env, label in ((before_env, "before"), (after_env, "after")):
                run(
                    f"ours {label}: score both baselines",
                    [str(PROFORMA), "score", "--no-coherence"]
                    + [a for name in NAMES for a in ("-s", name)],
                    env=env,
                    log=work / f"score_{label}.log",
                )
        for name, res in compare(
            Path(before_env["PROFORMA_WAREHOUSE"]),
            Path(after_env["PROFORMA_WAREHOUSE"]),
            args.score,
        ).items():
            print(f"{name}: {json.dumps(res)}")
    print(f"load at the end {load()}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
