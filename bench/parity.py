"""Parity with the published proforma20q package, side by side on the same synthetic panel.

    .venv/bin/python bench/parity.py [--scale demo|full] [--firms N] \
        [--published-venv /tmp/pfvenv] [--workdir /tmp/parity]

Always: generates the synthetic panel, writes it in the package's raw layout
(`proforma export DIR --layout compustat`), builds it under both rule sets (statistics
estimated) and prints what each documented rule difference changes (docs/contracts.md,
"Rule sets"). With --published-venv (a virtualenv holding the published package): the
package builds that raw file; this project builds it with the package's own statistics
pinned (`--rules published --reg-stats FILE`) and exports it in the package's layout;
the script compares every tabular split cell by cell (rows, cells non-null on one side
only, max |diff|), the tuple files' rows and the estimated statistics; then the package
writes its naive and fade forecasts and scores them, this project scores the same files
(`proforma submit`, `proforma score`), and every metric and n is compared; finally this
project's own reference baselines are compared with the package's forecasts cell by cell.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
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
from contracts.panel import SPLITS


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--scale", default="demo", choices=["demo", "full"])
    ap.add_argument(
        "--firms", type=int, default=None, help="Number of synthetic firms (default: the scale's)."
    )
    ap.add_argument("--published-venv", type=Path, default=None)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/proforma-parity"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory", default=None, help="DuckDB memory_limit for this project.")
    args = ap.parse_args()
    work = args.workdir
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    print(f"workdir {work}; load {load()}")

    env = warehouse_env(work, "published", args.threads, args.memory)
    ingest = [str(PROFORMA), "ingest", "synthetic", "--scale", args.scale]
    if args.firms:
        ingest += ["--firms", str(args.firms)]
    timings = [run("ours: ingest synthetic", ingest, env=env, log=work / "ingest.log")]
    raw_dir = work / "raw"
    timings.append(
        run(
            "ours: export raw (compustat layout)",
            [str(PROFORMA), "export", str(raw_dir), "--layout", "compustat"],
            env=env,
        )
    )
    raw = raw_dir / "compustat_with_permno.parquet"
    paper_env = copied_warehouse(
        Path(env["PROFORMA_WAREHOUSE"]), work, "paper", args.threads, args.memory
    )
    timings.append(
        run(
            "ours: build (published rules, estimated)",
            [str(PROFORMA), "build"],
            env=env,
            log=work / "build_published.log",
        )
    )
    timings.append(
        run(
            "ours: build (paper rules, estimated)",
            [str(PROFORMA), "build", "--rules", "paper"],
            env=paper_env,
            log=work / "build_paper.log",
        )
    )
    rule_counts(Path(env["PROFORMA_WAREHOUSE"]), Path(paper_env["PROFORMA_WAREHOUSE"]))

    if args.published_venv:
        timings += side_by_side(work, raw, args)
    print("\ntimings (each a child process; load " + load() + "):")
    for m in timings:
        print("  " + m.line())


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
    nok = con.execute("""SELECT i.item FROM pub.panel.item_k k JOIN pub.ref.items i USING (item_id)
                         WHERE k.n_pool = 0 ORDER BY 1""").fetchall()
    print(
        f"  items with no training-period observation (statement-median k): {len(nok)} "
        f"{[r[0] for r in nok]}"
    )
    params = one("""SELECT (SELECT count(*) FROM pub.panel.origin_params),
                           (SELECT count(*) FROM pap.panel.origin_params)""")
    print(
        f"  origin parameter rows: published {params[0]:,} (quarters with statistics), "
        f"paper {params[1]:,} (every quarter)"
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
def side_by_side(work: Path, raw: Path, args) -> list:
    cli = published_cli(args.published_venv)
    pkg, ours = work / "pkg", work / "ours_export"
    out = [
        run(
            "package: build (estimate, imputation on)",
            [
                str(cli),
                "build",
                "--raw",
                str(raw),
                "--out",
                str(pkg),
                "--reg-stats",
                "estimate",
                "--no-verify",
            ],
            log=work / "pkg_build.log",
        )
    ]
    stats = pkg / f"regularization_stats__{RELEASE_TAG}.parquet"
    # a raw-only copy would do too
    env = copied_warehouse(work / "paper.duckdb", work, "pinned", args.threads, args.memory)
    out.append(
        run(
            "ours: build (published, package statistics pinned)",
            [str(PROFORMA), "build", "--rules", "published", "--reg-stats", str(stats)],
            env=env,
            log=work / "build_pinned.log",
        )
    )
    out.append(
        run(
            "ours: export proforma20q layout (imputation)",
            [str(PROFORMA), "export", str(ours), "--layout", "proforma20q"],
            env=env,
            log=work / "export.log",
        )
    )
    compare_exports(pkg, ours)
    compare_statistics(stats, work / "published.duckdb")

    fc = work / "pkg_forecasts"
    out.append(
        run(
            "package: baselines naive,fade",
            [
                str(cli),
                "baselines",
                "--which",
                "naive,fade",
                "--processed",
                str(pkg),
                "--out",
                str(fc),
            ],
            log=work / "pkg_baselines.log",
        )
    )
    evaluation = work / "pkg_eval"
    out.append(
        run(
            "package: evaluate naive, fade",
            [
                str(cli),
                "evaluate",
                "--processed",
                str(pkg),
                "--against",
                "baselines",
                "--baseline-dir",
                str(fc),
                "--out",
                str(evaluation),
            ],
            log=work / "pkg_eval.log",
        )
    )
    for name in ("naive", "fade"):
        out.append(
            run(
                f"ours: submit the package's {name} file",
                [
                    str(PROFORMA),
                    "submit",
                    str(fc / f"{name}__predictions.parquet"),
                    "--name",
                    f"package {name}",
                ],
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
    compare_scores(Path(env["PROFORMA_WAREHOUSE"]), evaluation)
    compare_reference(Path(env["PROFORMA_WAREHOUSE"]), fc)
    return out


def compare_exports(pkg: Path, ours: Path) -> None:
    con = duckdb.connect()
    print("\ntabular files, this project's export vs the package's build (statistics pinned):")
    for split in SPLITS:
        p = pkg / f"tabular_{split}__{RELEASE_TAG}.parquet"
        o = ours / f"tabular_{split}__{RELEASE_TAG}.parquet"
        cols = [d[0] for d in con.execute(f"DESCRIBE SELECT * FROM '{p}'").fetchall()]
        values = [c for c in cols if c not in ("firm_id", "quarter")]
        same_cols = cols == [d[0] for d in con.execute(f"DESCRIBE SELECT * FROM '{o}'").fetchall()]
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
        print(
            f"  tabular_{split}: rows package {n[0]:,} / ours {n[1]:,} (only package {n[2]}, only ours "
            f"{n[3]}); same columns in the same order: {same_cols}; cells non-null on one side "
            f"only: {one_side:,}; max |diff| {worst:.3g}"
        )
    for split in SPLITS:
        p, o = (d / f"tuple_{split}__{RELEASE_TAG}.parquet" for d in (pkg, ours))
        n = con.execute(f"""SELECT (SELECT count(*) FROM '{p}'), (SELECT count(*) FROM '{o}'),
            (SELECT count(*) FROM (SELECT firm_id, account_id, quarter, value FROM '{p}'
                                   EXCEPT SELECT firm_id, account_id, quarter, value FROM '{o}'))""").fetchall()[
            0
        ]
        print(
            f"  tuple_{split}: rows package {n[0]:,} / ours {n[1]:,}; package rows not in ours {n[2]:,}"
        )
    for m in ("firm_id_map", "account_id_map", "industry_id_map"):
        same = (pkg / f"{m}__{RELEASE_TAG}.csv").read_bytes() == (
            ours / f"{m}__{RELEASE_TAG}.csv"
        ).read_bytes()
        print(f"  {m}: byte-identical {same}")


def compare_statistics(stats: Path, published_wh: Path) -> None:
    con = duckdb.connect()
    con.execute(f"ATTACH '{published_wh}' AS w (READ_ONLY)")
    con.execute(f"""CREATE TEMP VIEW pk AS SELECT i.item_id, i.item, (year(quarter) * 4 + quarter(quarter) - 1)::INTEGER AS q,
                    mu, sigma, k FROM '{stats}' JOIN w.ref.items i ON i.item = feature""")
    r = con.execute("""SELECT (SELECT count(*) FROM pk), (SELECT count(*) FROM w.panel.origin_params),
        (SELECT count(*) FROM pk ANTI JOIN w.panel.origin_params USING (item_id, q)),
        (SELECT count(*) FROM w.panel.origin_params ANTI JOIN pk USING (item_id, q))""").fetchall()[
        0
    ]
    k = con.execute("""SELECT i.item FROM w.panel.item_k k JOIN w.ref.items i USING (item_id)
                       JOIN (SELECT DISTINCT item_id, k FROM pk) p USING (item_id)
                       WHERE abs(k.k - p.k) > 1e-9 * p.k ORDER BY 1""").fetchall()
    same = ", ".join(repr(x[0]) for x in k)
    d = con.execute(f"""SELECT max(abs(o.mu - pk.mu)), max(abs(o.sigma - pk.sigma) / pk.sigma)
        FROM pk JOIN w.panel.origin_params o USING (item_id, q)
        WHERE pk.item NOT IN ({same or "''"})""").fetchall()[0]
    print(
        f"\nestimated statistics, ours (published) vs the package's: rows {r[1]:,} / {r[0]:,}, only "
        f"package {r[2]}, only ours {r[3]}; k differs for {len(k)} item(s) {[x[0] for x in k]} "
        f"(no training-period observation: ours takes the statement's median k); elsewhere max "
        f"|mu diff| {d[0]:.2e}, max relative sigma diff {d[1]:.2e}"
    )


def compare_scores(wh_path: Path, evaluation: Path) -> None:
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
        for metric in ("r2", "mae", "mse"):
            for level, key in (("global", None), ("by_horizon", "horizon"), ("by_target", "item")):
                ref = _package_csv(evaluation / f"{metric}__{level}.csv", model)
                sql_level = {"global": "global", "by_horizon": "horizon", "by_target": "item"}[
                    level
                ]
                for h, iid, v in con.execute(
                    f"SELECT horizon, item_id, {metric} FROM eval.metrics WHERE score_run_id = ? "
                    f"AND submission_id = ? AND level = ?",
                    [run_id, sid, sql_level],
                ).fetchall():
                    k = metric if key is None else (str(h) if key == "horizon" else items[iid])
                    if k not in ref:
                        continue  # the package's CSV leaves NaN metrics out
                    rel = abs(v - ref[k]) / max(abs(ref[k]), 1e-300)
                    worst[f"{metric} {level}"] = max(worst.get(f"{metric} {level}", 0.0), rel)
        n = con.execute(
            "SELECT n FROM eval.metrics WHERE score_run_id = ? AND submission_id = ? "
            "AND level = 'global'",
            [run_id, sid],
        ).fetchall()[0][0]
        with open(evaluation / "leaderboard.csv") as fh:
            pkg_n = next(
                int(float(r["n_complete"])) for r in csv.DictReader(fh) if r["model"] == model
            )
        print(
            f"  {model}: n ours {n:,} / package {pkg_n:,}; max relative difference "
            + ", ".join(f"{k} {v:.1e}" for k, v in sorted(worst.items()))
        )


def _package_csv(path: Path, model: str) -> dict[str, float]:
    with open(path) as fh:
        rows = list(csv.reader(fh))
    col = rows[0].index(model)
    return {r[0]: float(r[col]) for r in rows[1:] if r[col] != ""}


def compare_reference(wh_path: Path, fc: Path) -> None:
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
            SELECT count(*), max(abs(e.mu - pk.p)), count(*) FILTER (WHERE isfinite(e.mu) <> isfinite(pk.p))
            FROM panel.truth t
            JOIN eval.forecasts e ON e.submission_id = ? AND e.firm_id = t.firm_id AND e.origin_q = t.origin_q
                 AND e.item_id = t.item_id AND e.horizon = t.horizon
            LEFT JOIN pk ON pk.firm_id = t.firm_id AND pk.origin_q = t.origin_q AND pk.item_id = t.item_id
                 AND pk.horizon = t.horizon
            WHERE t.split = 'test'""",
            [subs[ours_name]],
        ).fetchall()[0]
        print(
            f"  {ours_name} vs {pkg}: {r[0]:,} cells, max |diff| {r[1]:.2e} (the package writes float32), "
            f"finite on one side only {r[2]}"
        )


if __name__ == "__main__":
    main()
