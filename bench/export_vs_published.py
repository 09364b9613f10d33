"""In-house forecasts exported as submission files, checked and scored by the published
proforma20q package beside this project's own scores (issue 52).

    .venv/bin/python bench/export_vs_published.py --published-venv /tmp/pfvenv \
        [--workdir /tmp/export-vs-published] [--firms 200] [--threads 2]

On one synthetic panel (demo design, --firms firms, oracle origins on): this project
ingests and builds it, makes its in-house forecasts (the reference baselines, seasonal
random walk and fade, and the oracle, a Gaussian density), scores them (`proforma score`)
and writes the package's processed layout (`proforma export --layout proforma20q`, the
files bench/parity.py shows equal to the package's own build). Then each in-house
submission is exported as a submission file (`proforma export FILE --submission NAME`,
with its `{stem}.nll.json`), the package's `validate` checks it, and the package's
`evaluate` scores all of them at once; every metric both tools report (R2, MAE, MSE, NLL,
CRPS, z2) at every level (global, horizon, item, item x horizon) is compared with this
project's score of the in-house submission itself (the package reads the file's float32
predictions, this project scored the doubles: differences of order 1e-7 relative), and
with this project's score of the exported file submitted back (`proforma submit`, the
same float32 numbers both sides). Prints the figures and a PASS line: every file valid,
the same n, metrics within 1e-5 relative of the in-house scores and 1e-7 of the file's.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity import LEVELS, _package_csv
from published_tools import PROFORMA, load, published_cli, run, warehouse_env

#: in-house submission -> the file's stem (the package names a model after its file)
IN_HOUSE = {"Seasonal random walk": "naive", "Fade / AR(1)": "fade", "oracle": "oracle"}
METRICS = ("r2", "mae", "mse", "nll", "crps", "z2")
IN_HOUSE_TOL, FILE_TOL = 1e-5, 1e-7


def ours(env: dict[str, str], label: str, args: list[str], work: Path) -> None:
    log = work / (re.sub(r"\W+", "_", label).strip("_") + ".log")
    run(f"ours: {label}", [str(PROFORMA), *args], env=env, log=log)


def metric_rows(con: duckdb.DuckDBPyConnection, name: str) -> dict[tuple[str, str], float]:
    """{(metric label, key): value} of submission `name`'s latest full-footprint run."""
    sid, run_id = con.execute(
        "SELECT s.submission_id, max(r.score_run_id) FROM eval.submissions s "
        "JOIN eval.score_runs r ON list_contains(r.submission_ids, s.submission_id) "
        "WHERE s.name = ? AND s.retired_at IS NULL AND r.footprint_name = 'full' GROUP BY 1",
        [name],
    ).fetchone()
    items = dict(con.execute("SELECT item_id, item FROM ref.items").fetchall())
    out: dict[tuple[str, str], float] = {}
    for level, (sql_level, _) in LEVELS.items():
        rows = con.execute(
            f"SELECT horizon, item_id, n, {', '.join(METRICS)} FROM eval.metrics "
            "WHERE score_run_id = ? AND submission_id = ? AND level = ?",
            [run_id, sid, sql_level],
        ).fetchall()
        for h, iid, n, *values in rows:
            key = {
                "global": "global",
                "horizon": str(h),
                "item": items.get(iid),
                "item_horizon": f"{items.get(iid)}|{h}",
            }[sql_level]
            if sql_level == "global":
                out[("n", "global")] = n
            for metric, value in zip(METRICS, values, strict=True):
                if value is not None:
                    out[(f"{metric}__{level}", key)] = value
    return out


def package_rows(evaluation: Path, model: str) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for metric in METRICS:
        for level in LEVELS:
            for key, value in _package_csv(evaluation / f"{metric}__{level}.csv", model).items():
                out[(f"{metric}__{level}", "global" if level == "global" else key)] = value
    import csv

    with open(evaluation / "leaderboard.csv") as fh:
        for r in csv.DictReader(fh):
            if r["model"] == model:
                out[("n", "global")] = int(float(r["n_complete"]))
    return out


def compare(pkg: dict, mine: dict) -> tuple[int, float, bool]:
    """(values compared, max relative difference, n equal)."""
    worst, compared = 0.0, 0
    for key, ref in pkg.items():
        if key[0] == "n" or key not in mine:
            continue
        compared += 1
        worst = max(worst, abs(mine[key] - ref) / max(abs(ref), 1e-300))
    return compared, worst, pkg.get(("n", "global")) == mine.get(("n", "global"))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--published-venv", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/export-vs-published"))
    ap.add_argument("--firms", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    cli = published_cli(args.published_venv)
    work = args.workdir
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = warehouse_env(work, "warehouse", args.threads, None)
    print(f"workdir {work}; {args.firms} firms; load {load()}")
    ours(env, "ingest synthetic", ["ingest", "synthetic", "--firms", str(args.firms)], work)
    ours(env, "build", ["build"], work)
    ours(env, "reference baselines", ["baselines", "reference"], work)
    ours(env, "oracle", ["oracle"], work)
    ours(env, "score", ["score", "--no-coherence"], work)
    ours(
        env,
        "export the package layout",
        ["export", str(work / "pkg"), "--layout", "proforma20q"],
        work,
    )
    files = work / "files"
    files.mkdir()
    for name, stem in IN_HOUSE.items():
        out = files / f"{stem}__predictions.parquet"
        ours(env, f"export {name}", ["export", str(out), "--submission", name], work)
        check = run(
            f"package: validate {out.name}",
            [str(cli), "validate", str(out)],
            log=work / f"validate_{stem}.log",
        )
        text = (work / f"validate_{stem}.log").read_text()
        print(f"  {text.strip().splitlines()[-1]}")
        assert check.returncode == 0
    evaluation = work / "pkg_eval"
    run(
        "package: evaluate the exported files",
        [
            str(cli),
            "evaluate",
            *(str(files / f"{s}__predictions.parquet") for s in IN_HOUSE.values()),
        ]
        + ["--processed", str(work / "pkg"), "--out", str(evaluation)],
        log=work / "evaluate.log",
    )
    for name, stem in IN_HOUSE.items():
        out = files / f"{stem}__predictions.parquet"
        ours(
            env,
            f"submit the exported {stem} file",
            ["submit", str(out), "--name", f"file {stem}"],
            work,
        )
    ours(
        env,
        "score the files",
        ["score", "--no-coherence", *(a for s in IN_HOUSE.values() for a in ("-s", f"file {s}"))],
        work,
    )
    con = duckdb.connect(env["PROFORMA_WAREHOUSE"], read_only=True)
    passed = True
    print("\nthe package's evaluate of each exported file against this project's scores:")
    for name, stem in IN_HOUSE.items():
        pkg = package_rows(evaluation, stem)
        sidecar = files / f"{stem}__predictions.nll.json"
        n1, worst1, same_n1 = compare(pkg, metric_rows(con, name))
        _, worst2, same_n2 = compare(pkg, metric_rows(con, f"file {stem}"))
        passed &= same_n1 and same_n2 and worst1 <= IN_HOUSE_TOL and worst2 <= FILE_TOL and n1 > 0
        print(
            f"  {name} ({stem}, sidecar {sidecar.read_text().strip() if sidecar.exists() else 'none'}): "
            f"n {pkg.get(('n', 'global')):,}; global R2 package {pkg.get(('r2__global', 'global')):.6f}, "
            f"ours {metric_rows(con, name).get(('r2__global', 'global')):.6f}; {n1:,} values compared, "
            f"max relative diff vs the in-house scores {worst1:.1e}, vs the file's {worst2:.1e}"
        )
    print(("PASS" if passed else "FAIL") + f": load {load()}")


if __name__ == "__main__":
    main()
