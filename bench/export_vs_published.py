"""In-house forecasts exported as submission files, checked and scored by the published
proforma20q package beside this project's own scores (issue 52).

    .venv/bin/python bench/export_vs_published.py --published-venv /tmp/pfvenv \
        [--workdir /tmp/export-vs-published] [--firms 200] [--threads 2]

On one synthetic panel (demo design, --firms firms, oracle origins on): this project
ingests and builds it, makes its in-house forecasts (the reference baselines, seasonal
random walk and fade, and the oracle, a Gaussian density) and writes the package's
processed layout (`proforma export --layout proforma20q`, the files bench/parity.py
shows equal to the package's own build). Then each in-house submission is exported as a
submission file (`proforma export FILE --submission NAME`, with its `{stem}.nll.json`),
the package's `validate` checks it and its `evaluate` scores it alone (its own cells, as
`proforma score -s NAME` does here). Every metric both tools report (R2, MAE, MSE, NLL,
CRPS, z2) at every level (global, horizon, item, item x horizon) is compared with this
project's score of the in-house submission itself (the file holds the doubles this
project scored) and with its score of the exported file submitted back (`proforma
submit`). Prints the figures and a PASS line: every file valid, the same n, every metric
within 1e-9 (relative to max(|value|, 1)) of both.
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
IN_HOUSE_TOL = FILE_TOL = 1e-9


def ours(env: dict[str, str], label: str, args: list[str], work: Path) -> None:
    log = work / (re.sub(r"\W+", "_", label).strip("_") + ".log")
    run(f"ours: {label}", [str(PROFORMA), *args], env=env, log=log)


def metric_rows(con: duckdb.DuckDBPyConnection, name: str) -> dict[tuple[str, str], float]:
    """{(metric label, key): value} of submission `name`'s latest full-footprint run."""
    found = con.execute(
        "SELECT s.submission_id, max(r.score_run_id) FROM eval.submissions s "
        "JOIN eval.score_runs r ON list_contains(r.submission_ids, s.submission_id) "
        "WHERE s.name = ? AND s.retired_at IS NULL AND r.footprint_name = 'full' GROUP BY 1",
        [name],
    ).fetchone()
    if found is None:
        raise SystemExit(f"{name} has no score run on the full footprint")
    sid, run_id = found
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
                "item": str(items.get(iid)),
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
            try:
                found = _package_csv(evaluation / f"{metric}__{level}.csv", model)
            except ValueError:  # no column: the metric is not the model's (NLL of a point file)
                continue
            for key, value in found.items():
                out[(f"{metric}__{level}", "global" if level == "global" else key)] = value
    import csv

    with open(evaluation / "leaderboard.csv") as fh:
        for r in csv.DictReader(fh):
            if r["model"] == model:
                out[("n", "global")] = int(float(r["n_complete"]))
    return out


def compare(pkg: dict, mine: dict) -> tuple[int, float, str, bool]:
    """(values compared, the largest difference, where, n equal). A difference is taken
    relative to max(|package's value|, 1): relative for large values, absolute near zero
    (an R2 of 1e-9 for one item and horizon)."""
    worst, where, compared = 0.0, "-", 0
    for key, ref in pkg.items():
        if key[0] == "n" or key not in mine:
            continue
        compared += 1
        diff = abs(mine[key] - ref) / max(abs(ref), 1.0)
        if diff > worst:
            worst, where = diff, f"{key[0]} {key[1]}"
    return compared, worst, where, pkg.get(("n", "global")) == mine.get(("n", "global"))


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
    # one model at a time on both sides: a tool's common sample is then the model's own
    # cells (the oracle covers only the oracle origins, which would narrow the others')
    for name, stem in IN_HOUSE.items():
        out = files / f"{stem}__predictions.parquet"
        run(
            f"package: evaluate {out.name}",
            [str(cli), "evaluate", str(out), "--processed", str(work / "pkg")]
            + ["--out", str(work / f"pkg_eval_{stem}")],
            log=work / f"evaluate_{stem}.log",
        )
        ours(env, f"score {name} alone", ["score", "--no-coherence", "-s", name], work)
        ours(env, f"submit the {stem} file", ["submit", str(out), "--name", f"file {stem}"], work)
        ours(env, f"score the {stem} file", ["score", "--no-coherence", "-s", f"file {stem}"], work)
    con = duckdb.connect(env["PROFORMA_WAREHOUSE"], read_only=True)
    passed = True
    print("\nthe package's evaluate of each exported file against this project's scores:")
    for name, stem in IN_HOUSE.items():
        pkg = package_rows(work / f"pkg_eval_{stem}", stem)
        sidecar = files / f"{stem}__predictions.nll.json"
        in_house = metric_rows(con, name)
        n1, worst1, where1, same_n1 = compare(pkg, in_house)
        _, worst2, where2, same_n2 = compare(pkg, metric_rows(con, f"file {stem}"))
        passed &= same_n1 and same_n2 and worst1 <= IN_HOUSE_TOL and worst2 <= FILE_TOL and n1 > 0
        side = sidecar.read_text().strip() if sidecar.exists() else "none"
        print(
            f"  {name} ({stem}, sidecar {side}): n {pkg.get(('n', 'global')):,} both "
            f"{'equal' if same_n1 and same_n2 else 'DIFFERENT'}; global R2 package "
            f"{pkg.get(('r2__global', 'global')):.9f}, ours {in_house.get(('r2__global', 'global')):.9f}; "
            f"{n1:,} values compared; largest difference vs the in-house scores {worst1:.1e} "
            f"({where1}), vs the file submitted back {worst2:.1e} ({where2})"
        )
    print(("PASS" if passed else "FAIL") + f": load {load()}")


if __name__ == "__main__":
    main()
