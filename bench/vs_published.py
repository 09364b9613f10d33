"""Speed and memory of this project beside the published proforma20q package, same inputs.

    .venv/bin/python bench/vs_published.py [--scale demo|full] [--firms N] \
        [--published-venv /tmp/pfvenv] [--workdir /tmp/vs] [--threads 2] [--memory 2GB] \
        [--files naive,fade,gaussian,laplace,student_t] [--package-input package|ours] \
        [--scoring-only]

On one synthetic panel written in the package's raw layout, each tool runs as its own
child process (wall seconds, CPU seconds, peak resident memory of that process):

- build + export: the package's `build` (tabular and tuple views, imputation on, its
  default) against this project's `build` then `export --layout proforma20q` (which
  imputes); the same files come out (bench/parity.py checks that);
- imputation: this project's `run impute` alone (the package cannot run it alone);
- the reference baselines: the package's `baselines --which naive,fade` (its two point
  files) against this project's `baselines reference` (seasonal random walk and fade,
  stored as submissions);
- scoring each kind of forecast file end to end: the package's `evaluate` against this
  project's `submit` then `score` of the same file, and against `submit --score` (the
  same work in one process) of it under another name. The kinds (--files): the package's
  naive and fade point files, and three density files made from the fade file with a
  sigma that grows with the horizon (0.3 + 0.05 h): Gaussian, Laplace and Student-t with
  df 5 (the last two declared to both tools by the `{stem}.nll.json` sidecar the package
  reads).

--package-input ours: the package's evaluate and baselines read this project's export in
the package's layout instead of the package's own build (the same files cell by cell,
bench/parity.py checks that); the package's build, tens of minutes per 1,000 firms on
this machine, is then not run. Each figure's line carries the load average. This project's
  reference baselines, which `score` makes once per warehouse, are built before the
  scoring rows, as set-up.

Both tools' modules are byte-compiled first, as `pip install` of a wheel leaves them
(published_tools.as_installed): where PYTHONDONTWRITEBYTECODE is set, each run of an
editable install would otherwise compile them all again.

Without --published-venv only this project's figures are printed. Ratios are the
package's figure over ours (wall, CPU) and ours over the package's (memory): above 1
means this project is faster, below 1 that it needs less memory. The machine's load is
printed with every figure: compare ratios measured in one run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published_tools import (
    PROFORMA,
    Measured,
    as_installed,
    copied_warehouse,
    load,
    published_cli,
    run,
    warehouse_env,
)


def total(label: str, parts: list[Measured]) -> Measured:
    """Sequential child processes: wall and CPU add up, memory is the largest."""
    return Measured(
        label,
        sum(p.wall_s for p in parts),
        sum(p.cpu_s for p in parts),
        max(p.peak_mb for p in parts),
        max(p.returncode for p in parts),
    )


def in_child(sql: str, database: str = ":memory:") -> None:
    """Run one DuckDB statement in a child process. The bench's own process stays small:
    Linux keeps a process's peak resident memory across fork and exec, so every child
    measured after a large parent would report at least the parent's peak."""
    code = (
        "import sys, duckdb; con = duckdb.connect(sys.argv[1], read_only=sys.argv[1] != "
        "':memory:'); con.execute(sys.argv[2]); con.close()"
    )
    subprocess.run([sys.executable, "-c", code, database, sql], check=True)


def write_forecast_file(warehouse: Path, name: str, path: Path) -> None:
    """A stored submission written back as a submission file (firm, target, origin, ...)."""
    literal = "'" + name.replace("'", "''") + "'"
    in_child(
        f"""COPY (SELECT f.gvkey AS firm, i.item AS target, qend(e.origin_q)::TIMESTAMP AS origin,
                          e.horizon::BIGINT AS horizon, e.mu::FLOAT AS prediction
                   FROM eval.forecasts e JOIN eval.submissions s USING (submission_id)
                   JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id)
                   WHERE s.name = {literal} AND s.retired_at IS NULL) TO '{path}' (FORMAT parquet)""",
        str(warehouse),
    )


BEFORE_SCORING = "wh_before_scoring.duckdb"
#: The forecast files scored, by kind: the package's point files and two density files.
FILE_KINDS = ("naive", "fade", "gaussian", "laplace", "student_t")
#: density files: family and sidecar (the family both tools read from `{stem}.nll.json`)
DENSITY = {
    "gaussian": None,
    "laplace": {"family": "laplace"},
    "student_t": {"family": "student_t", "df": 5.0},
}


def forecast_path(work: Path, kind: str) -> Path:
    return work / f"{kind}__predictions.parquet"


def write_density_files(work: Path, kinds: list[str]) -> None:
    """The Gaussian, Laplace and Student-t (df 5) files: the fade file with sigma = 0.3 +
    0.05 horizon; the Laplace and Student-t families declared by the sidecar both tools
    read."""
    import json

    fade = forecast_path(work, "fade")
    for kind, sidecar in DENSITY.items():
        if kind not in kinds or forecast_path(work, kind).exists():
            continue
        out = forecast_path(work, kind)
        in_child(
            f"COPY (SELECT *, CAST(0.3 + 0.05 * horizon AS FLOAT) AS sigma "
            f"FROM read_parquet('{fade}')) TO '{out}' (FORMAT parquet)"
        )
        if sidecar:
            out.with_name(f"{out.stem}.nll.json").write_text(json.dumps(sidecar))


def scoring_rows(
    work: Path, env: dict[str, str], forecast: Path, kind: str = "fade"
) -> list[tuple[str, Measured]]:
    """This project's two ways of scoring one file: submit then score, submit --score.
    Each submit is a first upload of its bytes, written to an empty upload store of its
    own (the three density files hold the same bytes, their families being declared
    beside them, and a store that holds a same-bytes file writes nothing): scoring a
    named submission reads its own file only."""
    store = work / f"store_{kind}"
    shutil.rmtree(store, ignore_errors=True)
    own = {**env, "PROFORMA_UPLOAD_STORE": str(store)}
    submit = run(
        f"ours: submit the {kind} file",
        [str(PROFORMA), "submit", str(forecast), "--name", f"{kind} file"],
        env=own,
        log=work / f"submit_{kind}.log",
    )
    score = run(
        "ours: score it",
        [str(PROFORMA), "score", "-s", f"{kind} file", "--no-coherence"],
        env=own,
        log=work / f"score_{kind}.log",
    )
    # the same work in one process (one start, one open of the warehouse)
    again = work / f"store_{kind}_again"
    shutil.rmtree(again, ignore_errors=True)
    at_once = run(
        "ours: submit --score (one process)",
        [
            str(PROFORMA),
            "submit",
            str(forecast),
            "--name",
            f"{kind} file again",
            "--score",
            "--no-coherence",
        ],
        env={**env, "PROFORMA_UPLOAD_STORE": str(again)},
        log=work / f"submit_score_{kind}.log",
    )
    shutil.rmtree(again, ignore_errors=True)
    return [
        (f"{kind}: submit + score", total("ours: submit + score", [submit, score])),
        (f"{kind}: one command", at_once),
    ]


def package_evaluate(cli: Path, work: Path, forecast: Path, kind: str) -> Measured:
    return run(
        f"package: evaluate the {kind} file",
        [str(cli), "evaluate", str(forecast), "--processed", str(work / "pkg")],
        log=work / f"pkg_eval_{kind}.log",
    )


def file_rows(
    work: Path, env: dict[str, str], cli: Path | None, kinds: list[str]
) -> list[tuple[str, Measured | None, Measured]]:
    """Per file kind: the package's evaluate, then ours, one after the other."""
    rows: list[tuple[str, Measured | None, Measured]] = []
    for kind in kinds:
        forecast = forecast_path(work, kind)
        pkg = package_evaluate(cli, work, forecast, kind) if cli else None
        rows += [(label, pkg, ours) for label, ours in scoring_rows(work, env, forecast, kind)]
    return rows


def print_rows(rows: list[tuple[str, Measured | None, Measured]]) -> None:
    print(
        f"\n{'work':<30} {'package':>30}   {'this project':>30}   "
        "ratios (package/ours; memory ours/package)"
    )
    for label, pkg, ours in rows:
        p = f"{pkg.wall_s:7.1f} s {pkg.cpu_s:7.1f} CPU-s {pkg.peak_mb:6.0f} MB" if pkg else "-"
        o = f"{ours.wall_s:7.1f} s {ours.cpu_s:7.1f} CPU-s {ours.peak_mb:6.0f} MB"
        if pkg and pkg.returncode == 0:
            r = (
                f"wall {pkg.wall_s / ours.wall_s:4.2f}x, CPU {pkg.cpu_s / ours.cpu_s:4.2f}x, "
                f"memory {ours.peak_mb / pkg.peak_mb:4.2f}x"
            )
        elif pkg:
            r = f"package failed (exit {pkg.returncode}) after {pkg.wall_s:.0f} s at {pkg.peak_mb:.0f} MB"
        else:
            r = ""
        print(f"{label:<30} {p:>30}   {o:>30}   {r}")


def print_end(work: Path) -> None:
    """The closing line: the load and the disk the run's folder holds."""
    used = sum(f.stat().st_size for f in work.rglob("*") if f.is_file())
    print(f"load at the end {load()}; the workdir holds {used / 1e9:.1f} GB")


def scoring_only(args: argparse.Namespace) -> None:
    """The scoring rows alone, again, on what a full run left in the workdir."""
    work = args.workdir
    forecast = forecast_path(work, "fade")
    base = work / BEFORE_SCORING
    if not forecast.exists():
        raise SystemExit(f"--scoring-only needs a full run's {forecast.name} in {work}")
    if not base.exists():
        # set-up, not measured: a panel and its reference baselines, as a full run makes them
        made = warehouse_env(work, "wh_made", args.threads, args.memory)
        ingest = [str(PROFORMA), "ingest", "synthetic", "--scale", args.scale]
        if args.firms:
            ingest += ["--firms", str(args.firms)]
        run("ours: ingest synthetic (set-up)", ingest, env=made)
        run("ours: build (set-up)", [str(PROFORMA), "build"], env=made)
        run(
            "ours: reference baselines (set-up)",
            [str(PROFORMA), "baselines", "reference"],
            env=made,
        )
        shutil.move(made["PROFORMA_WAREHOUSE"], base)
    env = copied_warehouse(base, work, "wh_scoring", args.threads, args.memory)
    print(
        f"workdir {work}; threads {args.threads}; DuckDB memory_limit {args.memory or 'default'}; "
        f"load at start {load()}"
    )
    # set-up, not scoring: migrations, the reference baselines of this scoring SQL (both
    # made once when the code is newer than the warehouse) and the standard footprints
    run(
        "ours: reference baselines (set-up)",
        [str(PROFORMA), "baselines", "reference"],
        env=env,
        log=work / "baselines.log",
    )
    # the standard footprints, which `build` makes since session 8 (a workdir's warehouse
    # from before has none, and the first score would make them)
    run("ours: standard footprints (set-up)", [str(PROFORMA), "footprint", "list"], env=env)
    cli = published_cli(args.published_venv) if args.published_venv else None
    if not (work / "pkg").exists():
        cli = None
    kinds = [k for k in args.files if forecast_path(work, k).exists() or k in DENSITY]
    write_density_files(work, kinds)
    rows = file_rows(work, env, cli, kinds)
    # the reference baselines again, side by side (ours made anew: --force)
    pkg_refs = None
    if cli:
        pkg_refs = run(
            "package: baselines naive,fade",
            [str(cli), "baselines", "--which", "naive,fade", "--processed", str(work / "pkg")]
            + ["--out", str(work / "pkg_refs")],
            log=work / "pkg_baselines.log",
        )
    ours_refs = run(
        "ours: reference baselines (--force)",
        [str(PROFORMA), "baselines", "reference", "--force"],
        env=env,
        log=work / "baselines_force.log",
    )
    rows.append(("reference baselines", pkg_refs, ours_refs))
    print_rows(rows)
    print_end(work)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scale", default="demo", choices=["demo", "full"])
    ap.add_argument("--firms", type=int, default=None)
    ap.add_argument("--published-venv", type=Path, default=None)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/proforma-vs-published"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--files",
        type=lambda s: [k.strip() for k in s.split(",") if k.strip()],
        default=list(FILE_KINDS),
        help=f"file kinds to score, comma-separated (default: {','.join(FILE_KINDS)})",
    )
    ap.add_argument(
        "--memory", default=None, help="DuckDB memory_limit for this project (e.g. 2GB)."
    )
    ap.add_argument(
        "--skip-package-build",
        action="store_true",
        help="Do not run the package's build (it is killed for memory at full scale).",
    )
    ap.add_argument(
        "--package-input",
        choices=["package", "ours"],
        default="package",
        help="What the package's evaluate and baselines read: its own build (default), or "
        "this project's export in its layout (`export --layout proforma20q`, the same files "
        "cell by cell: bench/parity.py), which spares the package's build (tens of minutes "
        "per 1,000 firms on this machine) at 2,000 firms and more.",
    )
    ap.add_argument(
        "--scoring-only",
        action="store_true",
        help="Only the scoring rows, on the package output and forecast file an earlier full "
        "run left in --workdir, and its warehouse as it was before scoring (copied; made "
        "when missing).",
    )
    args = ap.parse_args()
    work = args.workdir
    # both tools measured as installed copies run: their modules byte-compiled
    as_installed(sys.executable, "proforma")
    if args.published_venv:
        as_installed(published_cli(args.published_venv).with_name("python"), "proforma20q")
    if args.scoring_only:
        scoring_only(args)
        return
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = warehouse_env(work, "wh", args.threads, args.memory)
    print(
        f"workdir {work}; threads {args.threads}; DuckDB memory_limit {args.memory or 'default'}; "
        f"load at start {load()}"
    )
    ingest = [str(PROFORMA), "ingest", "synthetic", "--scale", args.scale]
    if args.firms:
        ingest += ["--firms", str(args.firms)]
    setup = [
        run("ours: ingest synthetic", ingest, env=env, log=work / "ingest.log"),
        run(
            "ours: export raw (compustat layout)",
            [str(PROFORMA), "export", str(work / "raw"), "--layout", "compustat"],
            env=env,
        ),
    ]
    raw = work / "raw" / "compustat_with_permno.parquet"
    rows: list[tuple[str, Measured | None, Measured]] = []

    build = run("ours: build", [str(PROFORMA), "build"], env=env, log=work / "build.log")
    export = run(
        "ours: export proforma20q (imputes)",
        [str(PROFORMA), "export", str(work / "ours"), "--layout", "proforma20q"],
        env=env,
        log=work / "export.log",
    )
    impute = run(
        "ours: run impute (again, alone)",
        [str(PROFORMA), "run", "impute"],
        env=env,
        log=work / "impute.log",
    )
    ours_build = total("ours: build + export", [build, export])

    pkg_build = None
    cli = published_cli(args.published_venv) if args.published_venv else None
    if cli and args.package_input == "ours":
        (work / "pkg").symlink_to(work / "ours", target_is_directory=True)
    elif cli and not args.skip_package_build:
        pkg_build = run(
            "package: build (tabular + tuple, imputation)",
            [
                str(cli),
                "build",
                "--raw",
                str(raw),
                "--out",
                str(work / "pkg"),
                "--reg-stats",
                "estimate",
                "--no-verify",
            ],
            log=work / "pkg_build.log",
            check=False,
        )
    rows.append(("build + export", pkg_build, ours_build))
    rows.append(("imputation (ours alone)", None, impute))

    forecast = forecast_path(work, "fade")
    package_ok = bool(
        cli and (args.package_input == "ours" or (pkg_build and pkg_build.returncode == 0))
    )
    # The reference baselines side by side: the package's naive and fade files (also the
    # input of the scoring rows) against this project's `baselines reference`. The
    # reference baselines belong to the build (every `score` makes them once per
    # warehouse); the package's evaluate makes none, so the scoring rows come after.
    pkg_refs = None
    if package_ok:
        pkg_refs = run(
            "package: baselines naive,fade",
            [
                str(cli),
                "baselines",
                "--which",
                "naive,fade",
                "--processed",
                str(work / "pkg"),
                "--out",
                str(work),
            ],
            log=work / "pkg_baselines.log",
        )
    ours_refs = run(
        "ours: reference baselines",
        [str(PROFORMA), "baselines", "reference"],
        env=env,
        log=work / "baselines.log",
    )
    rows.append(("reference baselines", pkg_refs, ours_refs))
    if not package_ok:
        # without the package: this project's own baselines, written as submission files
        write_forecast_file(Path(env["PROFORMA_WAREHOUSE"]), "Fade / AR(1)", forecast)
        write_forecast_file(
            Path(env["PROFORMA_WAREHOUSE"]), "Seasonal random walk", forecast_path(work, "naive")
        )
    if forecast.exists():
        write_density_files(work, args.files)
        # the warehouse before any scoring, for --scoring-only (a copy as large as the
        # warehouse: left out where it would leave less than the warehouse's size free,
        # as at 30,000 firms on this machine's disk)
        warehouse = Path(env["PROFORMA_WAREHOUSE"])
        size, free = warehouse.stat().st_size, shutil.disk_usage(work).free
        if free > 2 * size:
            shutil.copy(warehouse, work / BEFORE_SCORING)
        else:
            print(
                f"(the copy of the warehouse for --scoring-only left out: {size / 1e9:.1f} GB, "
                f"{free / 1e9:.1f} GB free)",
                flush=True,
            )
        rows += file_rows(work, env, cli if package_ok else None, args.files)

    print(f"\nsetup: {'; '.join(m.line().strip() for m in setup)}")
    print_rows(rows)
    print(f"\nparts: {build.line().strip()}; {export.line().strip()}")
    print_end(work)


if __name__ == "__main__":
    main()
