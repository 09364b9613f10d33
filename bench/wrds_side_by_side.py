"""This project's WRDS pull and the published package's download, against one PostgreSQL.

    .venv/bin/python bench/wrds_side_by_side.py [--firms 300] [--start 1985] \
        [--published-venv /tmp/pfvenv] [--workdir /tmp/wrds-side-by-side] [--port 9737]

Starts a throwaway PostgreSQL (tests/foundation/wrds_server.py: loopback, SSL with a
self-signed certificate, a password file) on the `wrds` client's port (the package's
download cannot be given another), holding WRDS-shaped comp.fundq, comp.co_industry and
crsp.ccmxpf_lnkhist: the synthetic panel's raw tables plus what real WRDS holds (the
tests' edge panel, and on the synthetic firms overlapping link windows, exact duplicate
records and duplicate industry records). Then:

1. `proforma ingest wrds` twice into two caches: the ingest summary, and sha256 of the
   cached chunks and of the raw tables (in row order) of both pulls;
2. the package's `proforma20q download` (PGHOST and PGPASSFILE its only set-up) and its
   `build` (statistics estimated);
3. this project's `proforma build --rules published` with the package's statistics
   pinned, exported in the package's layout and compared cell by cell (bench/parity.py's
   comparison), and each firm's FF48 industry against the package's `firm_ff48_map`.

Where the package's result depends on the server's row order (which of several records
sharing (gvkey, datadate, fyearq, fqtr) it keeps: the last one returned; which of two
co_industry records on one date: the last one returned), this server returns them in the
order of this project's rule (fundq via an index scan over a heap written in the pull's
full-row order; co_industry with the rule's pick last), so both sides can agree; the
script prints how many such records there are.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from parity import compare_exports
from published_tools import PROFORMA, RELEASE_TAG, load, published_cli, run, warehouse_env

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proforma.app.sources.wrds import fundq_columns
from tests.foundation.wrds_server import (
    FUNDQ_SERVER_COLUMNS,
    WrdsServer,
    edge_panel,
    load_panel,
)

USER = "jdoe"
PASSWORD = "side-by-side"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--firms", type=int, default=300)
    ap.add_argument("--start", type=int, default=1985)
    ap.add_argument("--end", type=int, default=2024)
    ap.add_argument("--published-venv", type=Path, default=Path("/tmp/pfvenv"))
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/wrds-side-by-side"))
    ap.add_argument("--port", type=int, default=9737)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    work = args.workdir
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", args.port)) == 0:
            raise SystemExit(f"port {args.port} is taken; the package's client needs it free")
    print(f"workdir {work}; load {load()}")

    synth = warehouse_env(work, "synthetic", args.threads, None)
    run(
        "ours: ingest synthetic",
        [str(PROFORMA), "ingest", "synthetic", "--firms", str(args.firms)]
        + ["--start", str(args.start), "--end", str(args.end)],
        env=synth,
        log=work / "synthetic.log",
    )
    fundq, industry, links = wrds_tables(Path(synth["PROFORMA_WAREHOUSE"]))

    server = WrdsServer(args.port)
    try:
        server.start()
        server.create_database()
        load_panel(server, fundq, industry, links)
        # the package's ORDER BY gvkey, datadate served by the index: ties in heap order
        server.sql("CREATE INDEX fundq_key ON comp.fundq (gvkey, datadate)")
        server.sql("ANALYZE")
        server.add_user(USER, PASSWORD)
        server.sql(f"ALTER ROLE {USER} SET enable_sort = off")
        pgpass = work / "pgpass"
        pgpass.write_text(f"127.0.0.1:{args.port}:wrds:{USER}:{PASSWORD}\n")
        pgpass.chmod(0o600)
        env_pg = {"PGPASSFILE": str(pgpass)}
        side_by_side(work, args, env_pg)
    finally:
        server.stop()
    print(f"\nload {load()}")


def wrds_tables(wh_path: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """The synthetic raw tables as WRDS records, plus the edge cases, in heap order."""
    con = duckdb.connect(str(wh_path), read_only=True)
    cols = fundq_columns()
    rows = con.sql(f"SELECT {', '.join(cols)} FROM raw.fundq").to_arrow_table().to_pylist()
    ind = con.sql("SELECT * FROM raw.company_industry").to_arrow_table().to_pylist()
    lnk = con.sql("SELECT * FROM raw.ccm_link").to_arrow_table().to_pylist()
    con.close()
    base = {
        "indfmt": "INDL",
        "datafmt": "STD",
        "consol": "C",
        "popsrc": "D",
        "curcdq": "USD",
        "fic": "USA",
    }
    fundq = [{**base, "tic": "T" + r["gvkey"][-3:], "conm": "F" + r["gvkey"], **r} for r in rows]
    # exact duplicates on every 15th firm: a tie with another atq and an identical copy
    firms = sorted({r["gvkey"] for r in fundq})
    tied = set(firms[::15])
    seen: set[str] = set()
    extra = []
    for r in fundq:
        if r["gvkey"] in tied and r["gvkey"] not in seen and r["fqtr"] is not None:
            seen.add(r["gvkey"])
            extra.append({**r, "atq": (r["atq"] or 0.0) + 1.0})
            extra.append(dict(r))
    fundq += extra
    industry = [{**r, "consol": "C", "popsrc": "D", "fyr": 12.0} for r in ind]
    # a second record on the first date of every 12th firm, 6199 (financial)
    for g in firms[::12]:
        first = min((r for r in industry if r["gvkey"] == g), key=lambda r: r["datadate"])
        industry.append({**first, "sich": 6199, "naicsh": 523110})
    links = [
        {**r, "liid": "01", "lpermco": r["lpermno"] + 50000 if r["lpermno"] else None} for r in lnk
    ]
    # overlapping windows on every 10th linked firm: an LU/C link over the middle
    for r in list(links)[::10]:
        if r["linkdt"] and r["linkenddt"] and r["linkenddt"] > r["linkdt"]:
            span = r["linkenddt"] - r["linkdt"]
            links.append(
                {
                    **r,
                    "lpermno": r["lpermno"] + 90000,
                    "linktype": "LU",
                    "linkprim": "C",
                    "linkdt": r["linkdt"] + span / 3,
                    "linkenddt": r["linkdt"] + 2 * span / 3,
                }
            )
    ef, ei, el = edge_panel()
    for group in (ef, ei, el):
        for r in group:
            r["gvkey"] = "0099" + r["gvkey"][-2:]  # apart from the synthetic gvkeys
    fundq += ef
    industry += ei
    links += el

    # heap order: fundq in the pull's full-row order (ties included), so an index scan
    # returns ties in that order; co_industry with this project's pick last on a date
    def full(r: dict[str, Any]) -> tuple:
        return tuple((r.get(c) is None, r.get(c) or 0) for c in FUNDQ_SERVER_COLUMNS)

    fundq.sort(key=lambda r: (r["gvkey"], r["datadate"], full(r)))

    def rule(r: dict[str, Any]) -> tuple:  # sql/sources/wrds_company_industry.sql, reversed
        return (r["sich"] is not None, r["naicsh"] is not None, -(r["sich"] or 0))

    industry.sort(key=lambda r: (r["gvkey"], r["datadate"], rule(r)))
    return fundq, industry, links


def sha256_files(folder: Path) -> dict[str, str]:
    return {
        p.name if p.parent == folder else f"{p.parent.name[:-13]}/{p.name}": hashlib.sha256(
            p.read_bytes()
        ).hexdigest()
        for p in sorted(folder.rglob("*.parquet"))
    }


def raw_digest(wh_path: Path) -> dict[str, str]:
    con = duckdb.connect(str(wh_path), read_only=True)
    out = {}
    for t in ("fundq", "company_industry", "ccm_link"):
        rows = con.sql(f"SELECT * FROM raw.{t} ORDER BY rowid").fetchall()
        out[t] = hashlib.sha256(repr(rows).encode()).hexdigest()[:16] + f" ({len(rows):,} rows)"
    con.close()
    return out


def side_by_side(work: Path, args, env_pg: dict[str, str]) -> None:
    years = ["--start", str(args.start), "--end", str(args.end)]
    wrds_args = ["ingest", "wrds", "--user", USER, "--host", "127.0.0.1", "--port"]
    wrds_args += [str(args.port), *years]
    runs = []
    for name in ("pull1", "pull2"):
        env = {**warehouse_env(work / name, "ours", args.threads, None), **env_pg}
        run(
            f"ours: ingest wrds ({name})",
            [str(PROFORMA), *wrds_args],
            env=env,
            log=work / f"{name}.log",
        )
        runs.append((env, sha256_files(Path(env["PROFORMA_CACHE_DIR"]))))
    print("\ningest summary (pull1):")
    for line in (work / "pull1.log").read_text().splitlines():
        if line.startswith(("WRDS pull", "resolved:", "done:")):
            print("  " + line)
    same_files = runs[0][1] == runs[1][1]
    print(
        f"\ncached chunks of the two pulls byte-identical: {same_files} ({len(runs[0][1])} files)"
    )
    for name, digest in list(runs[0][1].items())[:2] + list(runs[0][1].items())[-2:]:
        print(f"  {name}: sha256 {digest[:16]}")
    a = raw_digest(Path(runs[0][0]["PROFORMA_WAREHOUSE"]))
    b = raw_digest(Path(runs[1][0]["PROFORMA_WAREHOUSE"]))
    print(f"raw tables of the two pulls identical in row order: {a == b}")
    for t, d in a.items():
        print(f"  raw.{t}: sha256 {d}")

    cli = published_cli(args.published_venv)
    deps = work / "wrds_client"  # the package's optional [wrds] extra, from this venv
    deps.mkdir()
    site = Path(duckdb.__file__).parents[1]
    for name in ("wrds", "sqlalchemy", "psycopg2", "psycopg2_binary.libs"):
        if (site / name).exists():
            (deps / name).symlink_to(site / name)
    pkg_env = {**env_pg, "PGHOST": "127.0.0.1", "PYTHONPATH": str(deps)}
    raw_dir = work / "pkg_raw"
    run(
        "package: download",
        [str(cli), "download", "--wrds-user", USER, "--out", str(raw_dir)]
        + ["--start-year", str(args.start), "--end-year", str(args.end)]
        + ["--intermediate-dir", str(work / "pkg_chunks")],
        env=pkg_env,
        log=work / "pkg_download.log",
    )
    raw = raw_dir / "compustat_with_permno.parquet"
    pkg = work / "pkg"
    run(
        "package: build (estimate)",
        [str(cli), "build", "--raw", str(raw), "--out", str(pkg)]
        + ["--reg-stats", "estimate", "--no-verify"],
        log=work / "pkg_build.log",
    )
    stats = pkg / f"regularization_stats__{RELEASE_TAG}.parquet"
    env = runs[0][0]
    run(
        "ours: build (published, package statistics)",
        [str(PROFORMA), "build", "--rules", "published", "--reg-stats", str(stats)],
        env=env,
        log=work / "build.log",
    )
    ours = work / "ours_export"
    run(
        "ours: export proforma20q layout",
        [str(PROFORMA), "export", str(ours), "--layout", "proforma20q"],
        env=env,
        log=work / "export.log",
    )
    con = duckdb.connect()
    n = con.sql(f"SELECT count(*), count(DISTINCT (gvkey, datadate, fyearq, fqtr)) FROM '{raw}'")
    print(f"\nthe package's download: {n.fetchall()[0]} rows, distinct fundq keys")
    compare_exports(pkg, ours)
    compare_industry(args.published_venv, raw, Path(env["PROFORMA_WAREHOUSE"]), work)


def compare_industry(venv: Path, raw: Path, wh_path: Path, work: Path) -> None:
    """Each firm's modal SIC and FF48 industry: the package's firm_ff48_map against ours."""
    out = work / "pkg_ff48.csv"
    code = (
        "import sys, numpy as np, pandas as pd; from proforma20q.build import firm_ff48_map; "
        "raw = pd.read_parquet(sys.argv[1], engine='fastparquet', columns=['gvkey', 'sich']); "
        "raw = raw.rename(columns={'gvkey': 'firm_id'}); "
        "raw['firm_id'] = raw['firm_id'].astype(str); "
        "raw = raw[raw['sich'].isna() | ~raw['sich'].between(6000, 6999)]; "
        "m = firm_ff48_map(raw); "
        "sic = raw.groupby('firm_id')['sich'].agg("
        "lambda s: s.mode().iloc[0] if not s.mode().empty else np.nan); "
        "pd.DataFrame({'gvkey': list(m), 'ff48': list(m.values()), "
        "'sic': [sic[g] for g in m]}).to_csv(sys.argv[2], index=False)"
    )
    run("package: firm_ff48_map", [str(venv / "bin" / "python"), "-c", code, str(raw), str(out)])
    con = duckdb.connect()
    con.execute(f"ATTACH '{wh_path}' AS w (READ_ONLY)")
    pkg = f"read_csv('{out}', types={{'gvkey': 'VARCHAR', 'sic': 'DOUBLE'}})"
    r = con.sql(f"""SELECT count(*), count(o.gvkey),
                   count(*) FILTER (WHERE p.sic IS DISTINCT FROM o.sic),
                   (SELECT count(*) FROM w.stage.firm_industry)
            FROM {pkg} p LEFT JOIN w.stage.firm_industry o USING (gvkey)""").fetchall()[0]
    # the package numbers industries from 0 (unknown 48), this project from 1 (unknown 49)
    pairs = con.sql(f"""SELECT count(DISTINCT p.ff48), count(DISTINCT o.ff48),
                   count(DISTINCT (p.ff48, o.ff48))
            FROM {pkg} p JOIN w.stage.firm_industry o USING (gvkey)""").fetchall()[0]
    print(
        f"\nindustry: package {r[0]:,} firms, ours {r[3]:,}, matched {r[1]:,}; modal SIC differs "
        f"for {r[2]} firms; FF48 ids one-to-one: {pairs[0] == pairs[1] == pairs[2]} "
        f"({pairs[2]} industries)"
    )
    edge = con.sql(f"""SELECT p.gvkey, p.sic::INTEGER, o.sic FROM {pkg} p
            JOIN w.stage.firm_industry o USING (gvkey) WHERE p.gvkey LIKE '0099%' ORDER BY 1""")
    print("  edge firms (gvkey, package modal SIC, ours): " + str(edge.fetchall()))


if __name__ == "__main__":
    # a timeout's SIGTERM still stops the server (the finally in main)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
