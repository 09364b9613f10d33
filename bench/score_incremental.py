"""Benchmark: what the k-th upload costs to score on a warehouse (incremental scoring).

    .venv/bin/python bench/score_incremental.py --warehouse data/warehouse.duckdb \
        [--uploads 50] [--report 1,10,50] [--work /tmp/bench_incremental] [--memory 6GB]

The warehouse (e.g. the one `proforma demo --no-serve` makes) is copied into --work and
left untouched. In the copy, every footprint is first scored as the upload queue scores
it (this computes the stored cell scores of the submissions already there: the one-off
cost of a warehouse scored before incremental scoring). Then N uploads are made, each a
parquet file like a user's (the fade / AR(1) baseline's forecasts for every test cell
plus seeded noise, with sigma; --point for no sigma), ingested with ingest_parquet and
scored on every footprint, as proforma.app.api.job_queue does after an upload. For each upload it
prints the ingest and scoring time (wall and CPU seconds of this process), the peak
resident memory while scoring (sampled every 50 ms), the warehouse size, and at the end
the reported uploads side by side with the ratio of the last to the first. Load average
is printed with every figure: on a shared machine CPU seconds are the figure to compare.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from score import PeakMemory, _cpu_seconds


def _load() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def _template(wh, folder: Path) -> Path:
    """The fade baseline's forecasts as an upload's columns (gvkey, item, quarter label)."""
    from proforma.contracts.errors import UserError

    fade = wh.scalar(
        "SELECT max(submission_id) FROM eval.submissions WHERE source = 'reference' "
        "AND name ILIKE 'fade%' AND retired_at IS NULL"
    )
    if fade is None:
        raise UserError("No fade / AR(1) baseline in the warehouse: run `proforma score` once")
    path = folder / "template.parquet"
    wh.execute(f"""
        COPY (SELECT p.gvkey AS firm, i.item AS target, qlabel(f.origin_q) AS origin,
                     CAST(f.horizon AS INTEGER) AS horizon, f.mu,
                     hash(f.firm_id, f.origin_q, f.item_id, f.horizon) AS h
              FROM eval.forecasts f JOIN panel.firms p USING (firm_id)
              JOIN ref.items i USING (item_id)
              WHERE f.submission_id = {int(fade)})
        TO '{path}' (FORMAT parquet)""")
    return path


def _upload_file(wh, template: Path, folder: Path, k: int, point: bool) -> Path:
    """Upload k: the template plus seeded noise (different for every upload)."""
    path = folder / f"upload-{k}.parquet"
    sigma = "" if point else f", {0.4 + 0.1 * (k % 3)} AS sigma"
    wh.execute(f"""
        COPY (SELECT firm, target, origin, horizon,
                     mu + ((hash(h, {k}) % 2001)::DOUBLE - 1000) / 4000 AS prediction{sigma}
              FROM read_parquet('{template}'))
        TO '{path}' (FORMAT parquet)""")
    return path


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--warehouse", type=Path, required=True, help="Warehouse to copy (not modified)."
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench_incremental"))
    ap.add_argument("--uploads", type=int, default=50)
    ap.add_argument("--report", default="1,10,50", help="Uploads to compare at the end.")
    ap.add_argument("--memory", default="6GB")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--point", action="store_true", help="Uploads without sigma.")
    ap.add_argument("--keep", action="store_true", help="Keep the working copy afterwards.")
    args = ap.parse_args()

    from proforma.app.api.job_queue import Scorer
    from proforma.app.flows.warehouse import prepare
    from proforma.app.scoring import ingest_parquet, score
    from proforma.app.store.settings import Settings
    from proforma.app.store.warehouse import connect

    args.work.mkdir(parents=True, exist_ok=True)
    copy = args.work / "warehouse.duckdb"
    shutil.copyfile(args.warehouse, copy)
    settings = Settings(
        warehouse=copy,
        temp_directory=args.work / "tmp",
        memory_limit=args.memory,
        threads=args.threads,
        cache_dir=args.work / "cache",
    )
    wh = connect(settings)
    prepare(wh)
    scorer = Scorer()
    footprints = scorer.footprints(wh)
    subs = wh.scalar("SELECT count(*) FROM eval.submissions WHERE retired_at IS NULL")
    print(
        f"{copy}: {subs} submissions, footprints {', '.join(footprints)}; "
        f"threads {args.threads}, memory_limit {args.memory}",
        flush=True,
    )

    def score_all() -> tuple[float, float, int]:
        t0, c0 = time.perf_counter(), _cpu_seconds()
        with PeakMemory() as peak:
            for fp in footprints:
                score(wh, fp)
        return time.perf_counter() - t0, _cpu_seconds() - c0, peak.peak

    wall, cpu, peak = score_all()
    print(
        f"first scoring of the existing submissions (cell scores stored once): {wall:.1f}s "
        f"wall, {cpu:.1f} CPU-s, peak RSS {_gib(peak)}; load {_load()}",
        flush=True,
    )
    wall, cpu, peak = score_all()
    print(
        f"scoring again, nothing new: {wall:.1f}s wall, {cpu:.1f} CPU-s; load {_load()}", flush=True
    )

    template = _template(wh, args.work)
    report = {int(k) for k in args.report.split(",") if k}
    rows = {}
    for k in range(1, args.uploads + 1):
        path = _upload_file(wh, template, args.work, k, args.point)
        t0, c0 = time.perf_counter(), _cpu_seconds()
        ingest_parquet(wh, path, f"bench upload {k}")
        ingest = (time.perf_counter() - t0, _cpu_seconds() - c0)
        path.unlink()
        wall, cpu, peak = score_all()
        size = os.path.getsize(copy)
        rows[k] = (ingest, wall, cpu, peak)
        print(
            f"upload {k}: ingest {ingest[0]:.1f}s wall / {ingest[1]:.1f} CPU-s; score "
            f"{len(footprints)} footprints {wall:.1f}s wall / {cpu:.1f} CPU-s, peak RSS "
            f"{_gib(peak)}; warehouse {_gib(size)}; load {_load()}",
            flush=True,
        )
    shown = sorted(k for k in report if k in rows)
    if shown:
        print("\nupload | ingest CPU-s | score wall s | score CPU-s | peak RSS")
        for k in shown:
            (_iw, ic), wall, cpu, peak = rows[k]
            print(f"{k:6d} | {ic:12.1f} | {wall:12.1f} | {cpu:11.1f} | {_gib(peak)}")
        first, last = rows[shown[0]], rows[shown[-1]]
        print(
            f"upload {shown[-1]} / upload {shown[0]} scoring: {last[2] / first[2]:.2f}x CPU, "
            f"{last[1] / first[1]:.2f}x wall; load {_load()}"
        )
    wh.close()
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
