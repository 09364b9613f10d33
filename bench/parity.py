"""Parity with the published proforma20q package, side by side on generated panels.

    .venv/bin/python bench/parity.py --published-venv /tmp/pfvenv [--workdir /tmp/parity] \
        [--panel SPEC ...] [--pin] [--rule-counts] [--tuple-only] [--keep] \
        [--scores-from KEPT_WORKDIR]

A panel SPEC is `NAME` or `NAME:key=value,...` with keys seed, firms, start, end, no_train
(items no firm reports before 2002, joined by '+'), test_only (items no firm reports
before 2010, joined by '+'), single (share of firms filing a single
quarter), fyr (fiscal-year change rate per firm-quarter) and oracle (oracle origins,
default 0: the oracle's streams are separate, so raw.fundq does not depend on it);
`demo` alone is the demo panel (seed 20, 1,000 firms). Several --panel run one after the
other in one call (default: demo).

Per panel: generates it (`proforma ingest synthetic ...`), writes it in the package's raw
layout (`proforma export DIR --layout compustat`), builds it with this project's default
(`proforma build`: rules `published`, statistics estimated; --pin: the package's
statistics pinned instead) and the package's (`proforma20q build --reg-stats estimate`),
exports ours in the package's layout and compares every tabular split cell by cell
(rows, cells non-null on one side only, max |diff|), the tuple files (rows on one side
only, max |diff|), the id maps (bytes) and the statistics (rows on one side only, max
|diff| of mu and sigma, max relative diff of k); then the package writes its naive and
fade forecasts and evaluates them, this project scores the same files (`proforma
submit`, `proforma score -s`) and every metric (R2, MAE, MSE) and n is compared at every
level (global, horizon, item, item x horizon); finally this project's reference
baselines (`proforma baselines reference`) are compared with the package's forecasts
cell by cell (relative to the package's float32 values). One summary line per panel at
the end, PASS when: 0 one-sided cells and rows, max |diff| <= 1e-6 on every tabular,
tuple and statistics value, metrics within 1e-7 relative, references within float32
(2^-23 relative). --rule-counts also builds under `paper` and prints what each documented
rule difference changes (docs/contracts.md, "Rule sets"). --tuple-only compares only what
needs no tabular view (statistics, tuple files, id maps; the package builds with --which
tuple and skips its factor imputation, the costly part on a large panel).
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from published_tools import (
    PROFORMA,
    RELEASE_TAG,
    copied_warehouse,
    load,
    published_cli,
    run,
    warehouse_env,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proforma.contracts.panel import SPLITS

#: Thresholds of a PASS (issue 28): values, relative metrics, float32 of the package's files.
VALUE_TOL = 1e-6
METRIC_TOL = 1e-7
FLOAT32_REL = 2.0**-23
SPEC_KEYS = {
    "seed": ("--seed", int),
    "firms": ("--firms", int),
    "start": ("--start", int),
    "end": ("--end", int),
    "single": ("--single-quarter-share", float),
    "fyr": ("--fyr-change-rate", float),
    "oracle": ("--oracle-origins", int),
}
#: keys whose value lists items joined by '+'
LIST_KEYS = {"no_train": "--no-train-item", "test_only": "--test-only-item"}


@dataclass
class Panel:
    name: str
    options: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, spec: str) -> Panel:
        name, _, rest = spec.partition(":")
        if not name or "/" in name:
            raise SystemExit(f"bad panel spec {spec!r}: NAME or NAME:key=value,...")
        options: dict[str, str] = {}
        for part in filter(None, rest.split(",")):
            key, eq, value = part.partition("=")
            if not eq or (key not in SPEC_KEYS and key not in LIST_KEYS):
                raise SystemExit(
                    f"bad panel option {part!r}: use key=value with key in "
                    f"{', '.join([*SPEC_KEYS, *LIST_KEYS])}"
                )
            if key in SPEC_KEYS:
                SPEC_KEYS[key][1](value)  # a bad number fails here, before anything runs
            options[key] = value
        return cls(name, options)

    def ingest_args(self) -> list[str]:
        args = ["ingest", "synthetic", "--scale", "demo"]
        opts = {"oracle": "0", **self.options}
        for key, value in opts.items():
            if key in LIST_KEYS:
                for item in filter(None, value.split("+")):
                    args += [LIST_KEYS[key], item]
            else:
                args += [SPEC_KEYS[key][0], value]
        return args

    def describe(self) -> str:
        opts = {"seed": "20", "firms": "1000", **self.options}
        return ", ".join(f"{k} {v}" for k, v in opts.items() if k != "oracle")


@dataclass
class Figures:
    """What one panel's comparison found (None: not measured)."""

    tabular_rows_one_side: int = 0
    tabular_one_side: int = 0
    tabular_diff: float = 0.0
    tuple_one_side: int = 0
    tuple_diff: float = 0.0
    id_maps_same: bool = True
    stats_one_side: int = 0
    stats_diff: float = 0.0
    k_rel_diff: float = 0.0
    n_equal: bool = True
    metric_rel: dict[str, float] = field(default_factory=dict)
    reference_rel: float = 0.0
    reference_one_side: int = 0
    fallbacks: str = ""
    errors: list[str] = field(default_factory=list)
    tuple_only: bool = False
    scores_only: bool = False

    def passed(self) -> bool:
        if self.tuple_only:
            return (
                not self.errors
                and self.tuple_one_side == 0
                and self.tuple_diff <= VALUE_TOL
                and self.id_maps_same
                and self.stats_one_side == 0
                and self.stats_diff <= VALUE_TOL
                and self.k_rel_diff <= VALUE_TOL
            )
        return (
            not self.errors
            and self.tabular_rows_one_side == 0
            and self.tabular_one_side == 0
            and self.tabular_diff <= VALUE_TOL
            and self.tuple_one_side == 0
            and self.tuple_diff <= VALUE_TOL
            and self.id_maps_same
            and self.stats_one_side == 0
            and self.stats_diff <= VALUE_TOL
            and self.k_rel_diff <= VALUE_TOL
            and self.n_equal
            and all(v <= METRIC_TOL for v in self.metric_rel.values())
            and bool(self.metric_rel)
            and self.reference_rel <= FLOAT32_REL
            and self.reference_one_side == 0
        )

    def line(self, panel: Panel) -> str:
        if self.scores_only:
            levels = ("global", "horizon", "item", "item x horizon")
            metrics = " / ".join(f"{self.metric_rel.get(lv, float('nan')):.1e}" for lv in levels)
            return (
                f"scores of the kept package output: {'PASS' if self.passed() else 'FAIL'}; "
                f"metrics n equal {self.n_equal}, max rel (global / horizon / item / item x "
                f"horizon) {metrics}; reference baselines one-sided "
                f"{self.reference_one_side}, max rel {self.reference_rel:.1e}"
                + (f"; comparisons that failed: {', '.join(self.errors)}" if self.errors else "")
            )
        if self.tuple_only:
            return (
                f"{panel.name} ({panel.describe()}; tuple files, id maps and statistics only): "
                f"{'PASS' if self.passed() else 'FAIL'}; tuples one-sided {self.tuple_one_side}, "
                f"max |diff| {self.tuple_diff:.1e}; id maps identical {self.id_maps_same}; "
                f"statistics one-sided {self.stats_one_side}, max |diff| {self.stats_diff:.1e}, "
                f"k rel {self.k_rel_diff:.1e}; k fallbacks: {self.fallbacks or 'none'}"
                + (f"; comparisons that failed: {', '.join(self.errors)}" if self.errors else "")
            )
        levels = ("global", "horizon", "item", "item x horizon")
        metrics = " / ".join(f"{self.metric_rel.get(lv, float('nan')):.1e}" for lv in levels)
        return (
            f"{panel.name} ({panel.describe()}): {'PASS' if self.passed() else 'FAIL'}; "
            f"tabular rows/cells one-sided {self.tabular_rows_one_side}/{self.tabular_one_side}, "
            f"max |diff| {self.tabular_diff:.1e}; tuples one-sided {self.tuple_one_side}, "
            f"max |diff| {self.tuple_diff:.1e}; id maps identical {self.id_maps_same}; "
            f"statistics one-sided {self.stats_one_side}, max |diff| {self.stats_diff:.1e}, "
            f"k rel {self.k_rel_diff:.1e}; metrics n equal {self.n_equal}, max rel "
            f"(global / horizon / item / item x horizon) {metrics}; reference baselines "
            f"one-sided {self.reference_one_side}, max rel {self.reference_rel:.1e}; "
            f"k fallbacks: {self.fallbacks or 'none'}"
            + (f"; comparisons that failed: {', '.join(self.errors)}" if self.errors else "")
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--panel", action="append", default=None, help="A panel SPEC (repeat).")
    ap.add_argument("--published-venv", type=Path, required=True)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/proforma-parity"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory", default=None, help="DuckDB memory_limit for this project.")
    ap.add_argument("--pin", action="store_true", help="Pin the package's statistics in our build.")
    ap.add_argument(
        "--rule-counts", action="store_true", help="Also build under `paper` and count rules."
    )
    ap.add_argument(
        "--keep", action="store_true", help="Keep each panel's workdir (default: removed)."
    )
    ap.add_argument(
        "--scores-from",
        type=Path,
        default=None,
        help="Scores only, on a workdir an earlier --keep run left (its pkg_forecasts, "
        "pkg_eval and published.duckdb): the package's naive and fade files are submitted "
        "again to a copy of that warehouse and scored, the reference baselines made again, "
        "and both compared as in a full run (after a change to scoring alone: the "
        "package's build is not run again).",
    )
    ap.add_argument(
        "--tuple-only",
        action="store_true",
        help="Compare only what needs no tabular view (statistics, tuple files, id maps): the "
        "package builds with --which tuple, without its factor imputation (for large panels "
        "on a busy machine).",
    )
    args = ap.parse_args()
    panels = [Panel.parse(s) for s in (args.panel or ["demo"])]
    if len({p.name for p in panels}) != len(panels):
        raise SystemExit("panel names must differ")
    cli = published_cli(args.published_venv)
    if args.scores_from:
        figures = scores_from(args.scores_from, args)
        print("\n" + figures.line(Panel("kept", {})))
        return
    summary: list[str] = []
    for panel in panels:
        work = args.workdir / panel.name
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        print(f"\n=== panel {panel.name} ({panel.describe()}); workdir {work}; load {load()}")
        figures = one_panel(panel, work, cli, args)
        summary.append(figures.line(panel))
        print("\n" + summary[-1], flush=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("\nsummary (one line per panel):")
    for line in summary:
        print("  " + line)


def scores_from(keep: Path, args) -> Figures:
    """--scores-from: the scores and reference baselines of a kept workdir, again."""
    fc, evaluation, source = keep / "pkg_forecasts", keep / "pkg_eval", keep / "published.duckdb"
    for need in (fc / "naive__predictions.parquet", fc / "fade__predictions.parquet", source):
        if not need.exists():
            raise SystemExit(f"--scores-from {keep}: no {need.name} (a --keep run leaves it)")
    work = args.workdir / "scores"
    if work.exists():
        shutil.rmtree(work)
    env = copied_warehouse(source, work, "published", args.threads, args.memory)
    print(f"scores of {keep} again; workdir {work}; load {load()}")
    for name in ("naive", "fade"):
        run(
            f"ours: submit the package's {name} file",
            [str(PROFORMA), "submit", str(fc / f"{name}__predictions.parquet")]
            + ["--name", f"package {name}", "--replace"],
            env=env,
            log=work / f"submit_{name}.log",
        )
    run(
        "ours: score both files (full footprint)",
        [str(PROFORMA), "score", "-s", "package naive", "-s", "package fade", "--no-coherence"],
        env=env,
        log=work / "score.log",
    )
    run(
        "ours: reference baselines (--force)",
        [str(PROFORMA), "baselines", "reference", "--force"],
        env=env,
        log=work / "reference.log",
    )
    figures = Figures(scores_only=True)
    wh = Path(env["PROFORMA_WAREHOUSE"])
    _checked(figures, compare_scores, wh, evaluation, figures)
    _checked(figures, compare_reference, wh, fc, figures)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return figures


def one_panel(panel: Panel, work: Path, cli: Path, args) -> Figures:
    env = warehouse_env(work, "published", args.threads, args.memory)
    timings = [
        run(
            "ours: ingest synthetic",
            [str(PROFORMA), *panel.ingest_args()],
            env=env,
            log=work / "ingest.log",
        )
    ]
    raw_dir = work / "raw"
    timings.append(
        run(
            "ours: export raw (compustat layout)",
            [str(PROFORMA), "export", str(raw_dir), "--layout", "compustat"],
            env=env,
        )
    )
    raw = raw_dir / "compustat_with_permno.parquet"
    pkg = work / "pkg"
    timings.append(
        run(
            "package: build (estimate, "
            + ("tuple view only)" if args.tuple_only else "imputation on)"),
            [str(cli), "build", "--raw", str(raw), "--out", str(pkg), "--reg-stats", "estimate"]
            + ["--no-verify"]
            + (["--which", "tuple"] if args.tuple_only else []),
            log=work / "pkg_build.log",
        )
    )
    stats = pkg / f"regularization_stats__{RELEASE_TAG}.parquet"
    if args.rule_counts:
        paper_env = copied_warehouse(
            Path(env["PROFORMA_WAREHOUSE"]), work, "paper", args.threads, args.memory
        )
    build = [str(PROFORMA), "build"] + (["--reg-stats", str(stats)] if args.pin else [])
    timings.append(
        run(
            "ours: build " + ("(package statistics pinned)" if args.pin else "(default)"),
            build,
            env=env,
            log=work / "build_published.log",
        )
    )
    warning = [
        ln for ln in (work / "build_published.log").read_text().splitlines() if "warning" in ln
    ]
    for ln in warning:
        print("  build said: " + ln.strip())
    if args.rule_counts:
        timings.append(
            run(
                "ours: build (paper rules, estimated)",
                [str(PROFORMA), "build", "--rules", "paper"],
                env=paper_env,
                log=work / "build_paper.log",
            )
        )
        rule_counts(Path(env["PROFORMA_WAREHOUSE"]), Path(paper_env["PROFORMA_WAREHOUSE"]))
    figures = Figures(tuple_only=args.tuple_only)
    if args.tuple_only:
        timings += tuple_side_by_side(work, pkg, env, figures)
    else:
        timings += side_by_side(work, pkg, cli, env, figures)
    print("\ntimings (each a child process; load " + load() + "):")
    for m in timings:
        print("  " + m.line())
    return figures


# -- rule-set differences -------------------------------------------------------------------
def rule_counts(published: Path, paper: Path) -> None:
    con = duckdb.connect()
    con.execute(f"ATTACH '{published}' AS pub (READ_ONLY)")
    con.execute(f"ATTACH '{paper}' AS pap (READ_ONLY)")

    def one(sql: str):
        return con.execute(sql).fetchall()[0]

    print("\nrule-set differences on this panel (published vs paper, statistics estimated):")
    for split in SPLITS:
        o = one(f"""SELECT
            (SELECT count(*) FROM pub.panel.origins WHERE split = '{split}'),
            (SELECT count(*) FROM pap.panel.origins WHERE split = '{split}'),
            (SELECT count(*) FROM pub.panel.origins a JOIN pub.panel.firms f USING (firm_id)
             WHERE a.split = '{split}' AND (f.gvkey, a.origin_q) NOT IN
                   (SELECT (g.gvkey, b.origin_q) FROM pap.panel.origins b JOIN pap.panel.firms g USING (firm_id)))""")
        print(f"  {split} origins: published {o[0]:,}, paper {o[1]:,}, published only {o[2]:,}")
    t = one("""SELECT (SELECT count(*) FROM pub.panel.truth WHERE split = 'test'),
                      (SELECT count(*) FROM pap.panel.truth WHERE split = 'test')""")
    print(f"  test truth cells: published {t[0]:,}, paper {t[1]:,}")
    lead = one("""SELECT count(*) FROM pub.panel.truth t
                  JOIN pub.stage.fq f ON f.firm_id = t.firm_id AND f.q = t.origin_q + t.horizon
                  WHERE f.z IS NULL AND t.split = 'test'""")[0]
    print(
        f"  test truth cells whose target quarter has no valid deflator (published only): {lead:,}"
    )
    nz = one("SELECT count(*) FROM pub.stage.fq WHERE z IS NULL")[0]
    print(f"  firm-quarters without a valid deflator kept as leads and lags (published): {nz:,}")
    hist = one("""SELECT count(*) FROM pub.panel.origins o JOIN pub.stage.fq f
                  ON f.firm_id = o.firm_id AND f.q = o.origin_q WHERE f.pos < 4""")[0]
    print(f"  origins with fewer than 4 quarters of firm history (published only): {hist:,}")
    k = con.execute("""SELECT i.item, a.k, b.k FROM pub.panel.item_k a JOIN pap.panel.item_k b USING (item_id)
                       JOIN pub.ref.items i USING (item_id)
                       WHERE abs(a.k - b.k) > 1e-12 * b.k ORDER BY 1""").fetchall()
    print(
        f"  items whose k differs (2001Q4 in or out of the window; default k): {len(k)}"
        + (f" e.g. {', '.join(f'{i} {a:.4g}/{b:.4g}' for i, a, b in k[:4])}" if k else "")
    )
    for label, wh in (("published", "pub"), ("paper", "pap")):
        rules = con.execute(f"""SELECT k.k_rule, list(i.item ORDER BY i.item_id)
                                FROM {wh}.panel.item_k k JOIN {wh}.ref.items i USING (item_id)
                                WHERE k.k_rule <> 'window' GROUP BY 1 ORDER BY 1""").fetchall()
        print(
            f"  k fallback rules ({label}): "
            + ("; ".join(f"{r}: {', '.join(items)}" for r, items in rules) or "none")
        )
    params = one("""SELECT (SELECT count(*) FROM pub.panel.origin_params),
                           (SELECT count(*) FROM pap.panel.origin_params)""")
    print(
        f"  origin parameter rows: published {params[0]:,} (quarters with statistics), "
        f"paper {params[1]:,} (every quarter with an available statistic in t-3..t)"
    )
    dedup = one("""SELECT count(*) FROM (SELECT gvkey, year(datadate) * 4 + quarter(datadate) AS q
                   FROM pub.raw.fundq GROUP BY ALL
                   HAVING count(*) > 1 AND bool_or(fyearq IS NULL OR fqtr IS NULL))""")[0]
    print(f"  duplicate calendar quarters with a missing fiscal field (dedup differs): {dedup:,}")
    ytd = one("SELECT count(*) FROM pub.stage.fundq_dedup WHERE fqtr IS NULL")[0]
    print(f"  rows without fqtr (YTD passed through under published): {ytd:,}")
    sic = one("""SELECT count(*) FROM pub.panel.firms a JOIN pap.panel.firms b USING (gvkey)
                 WHERE a.sic IS DISTINCT FROM b.sic""")[0]
    print(f"  firms whose modal SIC differs (counted before/after dedup): {sic:,}")
    fade = one("""SELECT count(*) FROM (SELECT item_id, horizon FROM pub.panel.truth
                  WHERE split IN ('train', 'val') GROUP BY ALL HAVING count(*) < 100)""")[0]
    print(f"  (item, horizon) pairs of fade below 100 training cells (fallback differs): {fade:,}")


# -- side by side with the package ----------------------------------------------------------
def side_by_side(work: Path, pkg: Path, cli: Path, env: dict[str, str], figures: Figures) -> list:
    ours = work / "ours_export"
    out = [
        run(
            "ours: export proforma20q layout (imputation)",
            [str(PROFORMA), "export", str(ours), "--layout", "proforma20q"],
            env=env,
            log=work / "export.log",
        )
    ]
    wh = Path(env["PROFORMA_WAREHOUSE"])
    _checked(figures, compare_exports, pkg, ours, figures)
    _checked(
        figures,
        compare_statistics,
        pkg / f"regularization_stats__{RELEASE_TAG}.parquet",
        wh,
        figures,
    )

    fc = work / "pkg_forecasts"
    out.append(
        run(
            "package: baselines naive,fade",
            [str(cli), "baselines", "--which", "naive,fade", "--processed", str(pkg)]
            + ["--out", str(fc)],
            log=work / "pkg_baselines.log",
        )
    )
    evaluation = work / "pkg_eval"
    out.append(
        run(
            "package: evaluate naive, fade",
            [str(cli), "evaluate", "--processed", str(pkg), "--against", "baselines"]
            + ["--baseline-dir", str(fc), "--out", str(evaluation)],
            log=work / "pkg_eval.log",
        )
    )
    for name in ("naive", "fade"):
        out.append(
            run(
                f"ours: submit the package's {name} file",
                [str(PROFORMA), "submit", str(fc / f"{name}__predictions.parquet")]
                + ["--name", f"package {name}"],
                env=env,
                log=work / f"submit_{name}.log",
            )
        )
    out.append(
        run(
            "ours: score both files (full footprint)",
            [str(PROFORMA), "score", "-s", "package naive", "-s", "package fade", "--no-coherence"],
            env=env,
            log=work / "score.log",
        )
    )
    out.append(
        run(
            "ours: reference baselines",
            [str(PROFORMA), "baselines", "reference"],
            env=env,
            log=work / "reference.log",
        )
    )
    _checked(figures, compare_scores, wh, evaluation, figures)
    _checked(figures, compare_reference, wh, fc, figures)
    figures.fallbacks = _fallbacks(wh)
    return out


def tuple_side_by_side(work: Path, pkg: Path, env: dict[str, str], figures: Figures) -> list:
    """Statistics, tuple files and id maps only (the package built with --which tuple)."""
    ours = work / "ours_export"
    code = (
        "import sys; from pathlib import Path; from proforma.app.store.settings import Settings; "
        "from proforma.app.store.warehouse import connect; "
        "from proforma.app.flows.export import RELEASE_TAG, export_id_maps, export_tuples; "
        "out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True); "
        "wh = connect(Settings()); "
        "export_id_maps(wh, out, RELEASE_TAG); "
        "[export_tuples(wh, s, out / f'tuple_{s}__{RELEASE_TAG}.parquet') "
        "for s in ('train', 'val', 'test')]"
    )
    out = [
        run(
            "ours: export tuple files and id maps",
            [sys.executable, "-c", code, str(ours)],
            env=env,
            log=work / "export.log",
        )
    ]
    wh = Path(env["PROFORMA_WAREHOUSE"])
    _checked(figures, compare_exports, pkg, ours, figures, False)
    _checked(
        figures,
        compare_statistics,
        pkg / f"regularization_stats__{RELEASE_TAG}.parquet",
        wh,
        figures,
    )
    figures.fallbacks = _fallbacks(wh)
    return out


def _fallbacks(wh: Path) -> str:
    con = duckdb.connect(str(wh), read_only=True)
    fallbacks = con.execute(
        """SELECT CAST(json_extract(parameters, '$.k_fallbacks') AS VARCHAR) FROM meta.builds
           WHERE status = 'succeeded' ORDER BY build_id DESC LIMIT 1"""
    ).fetchall()[0][0]
    con.close()
    text = (fallbacks or "").replace('"', "")
    return "" if text == "{}" else text


def _checked(figures: Figures, fn, *args) -> None:
    """Run one comparison; a failure is printed and fails the panel, the rest still runs."""
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - a bench reports every failure and goes on
        traceback.print_exc()
        figures.errors.append(fn.__name__)


def _cols(con, path: Path) -> list[str]:
    return [d[0] for d in con.execute(f"DESCRIBE SELECT * FROM '{path}'").fetchall()]


def compare_exports(pkg: Path, ours: Path, figures: Figures, tabular: bool = True) -> None:
    con = duckdb.connect()
    print("\nfiles, this project's export vs the package's build:")
    for split in SPLITS if tabular else ():
        p = pkg / f"tabular_{split}__{RELEASE_TAG}.parquet"
        o = ours / f"tabular_{split}__{RELEASE_TAG}.parquet"
        cols = _cols(con, p)
        values = [c for c in cols if c not in ("firm_id", "quarter")]
        same_cols = cols == _cols(con, o)
        n = con.execute(f"""SELECT (SELECT count(*) FROM '{p}'), (SELECT count(*) FROM '{o}'),
            (SELECT count(*) FROM '{p}' a ANTI JOIN '{o}' b USING (firm_id, quarter)),
            (SELECT count(*) FROM '{o}' a ANTI JOIN '{p}' b USING (firm_id, quarter))""").fetchall()[
            0
        ]
        one_side, worst = 0, 0.0
        for lo in range(0, len(values), 200):  # DuckDB caps an expression's depth
            chunk = values[lo : lo + 200]
            nulls = " + ".join(f'(("{c}" IS NULL) <> ("o_{c}" IS NULL))::BIGINT' for c in chunk)
            diff = ", ".join(f'coalesce(abs("{c}" - "o_{c}"), 0)' for c in chunk)
            cols_ab = (
                ", ".join(f'a."{c}"' for c in chunk)
                + ", "
                + ", ".join(f'b."{c}" AS "o_{c}"' for c in chunk)
            )
            r = con.execute(f"""SELECT sum({nulls}), max(greatest({diff})) FROM (SELECT {cols_ab}
                FROM '{p}' a JOIN '{o}' b USING (firm_id, quarter))""").fetchall()[0]
            one_side += int(r[0] or 0)
            worst = max(worst, float(r[1] or 0))
        figures.tabular_rows_one_side += n[2] + n[3] + (0 if same_cols else 1)
        figures.tabular_one_side += one_side
        figures.tabular_diff = max(figures.tabular_diff, worst)
        print(
            f"  tabular_{split}: rows package {n[0]:,} / ours {n[1]:,} (only package {n[2]}, only ours "
            f"{n[3]}); same columns in the same order: {same_cols}; cells non-null on one side "
            f"only: {one_side:,}; max |diff| {worst:.3g}"
        )
    for split in SPLITS:
        p, o = (d / f"tuple_{split}__{RELEASE_TAG}.parquet" for d in (pkg, ours))
        n = con.execute(f"""
            WITH a AS (SELECT firm_id, account_id, quarter, value, industry_id FROM '{p}'),
                 b AS (SELECT firm_id, account_id, quarter, value, industry_id FROM '{o}')
            SELECT (SELECT count(*) FROM a), (SELECT count(*) FROM b),
                   count(*) FILTER (WHERE b.firm_id IS NULL OR a.firm_id IS NULL
                                    OR a.industry_id <> b.industry_id),
                   max(abs(a.value - b.value))
            FROM a FULL JOIN b USING (firm_id, account_id, quarter)""").fetchall()[0]
        figures.tuple_one_side += n[2]
        figures.tuple_diff = max(figures.tuple_diff, float(n[3] or 0))
        print(
            f"  tuple_{split}: rows package {n[0]:,} / ours {n[1]:,}; on one side only (or "
            f"another industry) {n[2]:,}; max |value diff| {float(n[3] or 0):.3g}"
        )
    for m in ("firm_id_map", "account_id_map", "industry_id_map"):
        same = (pkg / f"{m}__{RELEASE_TAG}.csv").read_bytes() == (
            ours / f"{m}__{RELEASE_TAG}.csv"
        ).read_bytes()
        figures.id_maps_same &= same
        print(f"  {m}: byte-identical {same}")


def compare_statistics(stats: Path, wh: Path, figures: Figures) -> None:
    con = duckdb.connect()
    con.execute(f"ATTACH '{wh}' AS w (READ_ONLY)")
    con.execute(f"""CREATE TEMP VIEW pk AS SELECT i.item_id, i.item,
                    (year(quarter) * 4 + quarter(quarter) - 1)::INTEGER AS q, mu, sigma, k
                    FROM '{stats}' JOIN w.ref.items i ON i.item = feature""")
    r = con.execute("""SELECT (SELECT count(*) FROM pk), (SELECT count(*) FROM w.panel.origin_params),
        (SELECT count(*) FROM pk ANTI JOIN w.panel.origin_params USING (item_id, q)),
        (SELECT count(*) FROM w.panel.origin_params ANTI JOIN pk USING (item_id, q))""").fetchall()[
        0
    ]
    k = con.execute("""SELECT i.item, k.k, p.k, k.k_rule FROM w.panel.item_k k
                       JOIN w.ref.items i USING (item_id)
                       JOIN (SELECT DISTINCT item_id, k FROM pk) p USING (item_id)
                       ORDER BY abs(k.k - p.k) / p.k DESC""").fetchall()
    d = con.execute("""SELECT max(abs(o.mu - pk.mu)), max(abs(o.sigma - pk.sigma))
        FROM pk JOIN w.panel.origin_params o USING (item_id, q)""").fetchall()[0]
    k_rel = max((abs(a - b) / b for _, a, b, _ in k), default=0.0)
    figures.stats_one_side = r[2] + r[3]
    figures.stats_diff = max(float(d[0] or 0), float(d[1] or 0))
    figures.k_rel_diff = k_rel
    differ = [f"{i} {a:.4g}/{b:.4g} ({rule})" for i, a, b, rule in k if abs(a - b) > 1e-9 * b]
    print(
        f"\nestimated statistics, ours vs the package's: rows {r[1]:,} / {r[0]:,}, only package "
        f"{r[2]}, only ours {r[3]}; max |mu diff| {float(d[0] or 0):.2e}, max |sigma diff| "
        f"{float(d[1] or 0):.2e}; k: max relative diff {k_rel:.2e}"
        + (f", differs for {differ}" if differ else "")
    )


#: the package's CSV level -> (this project's eval.metrics level, its key columns)
LEVELS = {
    "global": ("global", "global"),
    "by_horizon": ("horizon", "horizon"),
    "by_target": ("item", "item"),
    "by_target_horizon": ("item_horizon", "item x horizon"),
}


def compare_scores(wh_path: Path, evaluation: Path, figures: Figures) -> None:
    con = duckdb.connect(str(wh_path), read_only=True)
    subs = dict(
        con.execute(
            "SELECT name, submission_id FROM eval.submissions WHERE retired_at IS NULL"
        ).fetchall()
    )
    run_id = con.execute("SELECT max(score_run_id) FROM eval.score_runs").fetchall()[0][0]
    items = dict(con.execute("SELECT item_id, item FROM ref.items").fetchall())
    print(f"\nscores of the same files, ours (score run {run_id}) vs the package's evaluate:")
    for model in ("naive", "fade"):
        sid = subs[f"package {model}"]
        worst: dict[str, float] = {}
        compared = 0
        for metric in ("r2", "mae", "mse"):
            for level, (sql_level, label) in LEVELS.items():
                ref = _package_csv(evaluation / f"{metric}__{level}.csv", model)
                for h, iid, v in con.execute(
                    f"SELECT horizon, item_id, {metric} FROM eval.metrics WHERE score_run_id = ? "
                    f"AND submission_id = ? AND level = ?",
                    [run_id, sid, sql_level],
                ).fetchall():
                    key = {
                        "global": metric,
                        "horizon": str(h),
                        "item": items.get(iid),
                        "item_horizon": f"{items.get(iid)}|{h}",
                    }[sql_level]
                    if key not in ref or v is None:
                        continue  # the package's CSV leaves NaN metrics out
                    rel = abs(v - ref[key]) / max(abs(ref[key]), 1e-300)
                    compared += 1
                    worst[f"{metric} {label}"] = max(worst.get(f"{metric} {label}", 0.0), rel)
                    figures.metric_rel[label] = max(figures.metric_rel.get(label, 0.0), rel)
        n = con.execute(
            "SELECT n FROM eval.metrics WHERE score_run_id = ? AND submission_id = ? "
            "AND level = 'global'",
            [run_id, sid],
        ).fetchall()[0][0]
        with open(evaluation / "leaderboard.csv") as fh:
            pkg_n = next(
                int(float(r["n_complete"])) for r in csv.DictReader(fh) if r["model"] == model
            )
        figures.n_equal &= n == pkg_n
        print(
            f"  {model}: n ours {n:,} / package {pkg_n:,}; {compared:,} metric values compared; "
            "max relative difference " + ", ".join(f"{k} {v:.1e}" for k, v in sorted(worst.items()))
        )


def _package_csv(path: Path, model: str) -> dict[str, float]:
    """metric value by key: the metric name (global), horizon, item, or 'item|horizon'."""
    if not path.exists():
        return {}
    with open(path) as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index(model)
    keys = 2 if path.stem.endswith("by_target_horizon") else 1
    return {
        "|".join(r[:keys]) if keys == 2 else r[0]: float(r[col]) for r in rows[1:] if r[col] != ""
    }


def compare_reference(wh_path: Path, fc: Path, figures: Figures) -> None:
    con = duckdb.connect(str(wh_path), read_only=True)
    subs = dict(
        con.execute(
            "SELECT name, submission_id FROM eval.submissions WHERE retired_at IS NULL "
            "AND source = 'reference'"
        ).fetchall()
    )
    print(
        "\nthis project's reference baselines vs the package's forecasts, over the test truth cells:"
    )
    for ours_name, pkg in (("Seasonal random walk", "naive"), ("Fade / AR(1)", "fade")):
        r = con.execute(
            f"""
            WITH pk AS (SELECT f.firm_id, i.item_id, (year(origin) * 4 + quarter(origin) - 1)::INTEGER AS origin_q,
                               horizon::TINYINT AS horizon, prediction::DOUBLE AS p
                        FROM '{fc / f"{pkg}__predictions.parquet"}' x JOIN panel.firms f ON f.gvkey = x.firm
                        JOIN ref.items i ON i.item = x.target)
            SELECT count(*), max(abs(e.mu - pk.p)),
                   max(abs(e.mu - pk.p) / greatest(abs(pk.p), 1e-30)),
                   count(*) FILTER (WHERE isfinite(e.mu) IS DISTINCT FROM isfinite(pk.p))
            FROM panel.truth t
            LEFT JOIN eval.forecasts e ON e.submission_id = ? AND e.firm_id = t.firm_id AND e.origin_q = t.origin_q
                 AND e.item_id = t.item_id AND e.horizon = t.horizon
            LEFT JOIN pk ON pk.firm_id = t.firm_id AND pk.origin_q = t.origin_q AND pk.item_id = t.item_id
                 AND pk.horizon = t.horizon
            WHERE t.split = 'test'""",
            [subs[ours_name]],
        ).fetchall()[0]
        figures.reference_rel = max(figures.reference_rel, float(r[2] or 0))
        figures.reference_one_side += int(r[3])
        print(
            f"  {ours_name} vs {pkg}: {r[0]:,} cells, max |diff| {float(r[1] or 0):.2e}, max relative "
            f"{float(r[2] or 0):.2e} (the package writes float32), finite on one side only {r[3]}"
        )


if __name__ == "__main__":
    main()
