"""Backup, verify and restore timed on a warehouse of a given size, beside a plain copy of
the same bytes (what "about as long as copying them" in docs/operations.md rests on).

    .venv/bin/python bench/backup.py [--firms 300] [--uploads 3] [--workdir DIR]

Makes a synthetic warehouse (ingest, build, the reference baselines, scoring) with
`--uploads` density uploads of the test cells in its upload store, then times
`make_backup` (COPY FROM DATABASE in one transaction, the store's files, the manifest),
`verify_backup` (every sha256 and row count) and `restore_backup` (verify, copy,
migrate), and a `cp` of the warehouse file and the store for comparison. Prints a
table and one JSON line.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from proforma.app.store.settings import paths_under

ROOT = Path(__file__).resolve().parents[1]


def _env(folder: Path) -> dict[str, str]:
    return {
        **paths_under(folder),
        "PROFORMA_THREADS": os.environ.get("PROFORMA_THREADS", "2"),
        "PROFORMA_MEMORY_LIMIT": os.environ.get("PROFORMA_MEMORY_LIMIT", "3GB"),
    }


def _cli(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "proforma.app.cli", *args],
        env={**os.environ, **env},
        check=True,
        capture_output=True,
    )


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--firms", type=int, default=300)
    parser.add_argument("--uploads", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-backup-"))
    site, elsewhere = work / "site", work / "elsewhere"
    env = _env(site)
    started = time.perf_counter()
    _cli(env, "migrate")
    _cli(env, "ingest", "synthetic", "--firms", str(args.firms), "--oracle-origins", "4")
    _cli(env, "build")
    _cli(env, "baselines", "reference")
    os.environ.update(env)
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from proforma.app import scoring
    from proforma.app.flows.backup import make_backup
    from proforma.app.flows.restore import restore_backup, verify_backup
    from proforma.app.store.settings import get_settings
    from proforma.app.store.warehouse import connect

    get_settings.cache_clear()
    settings = get_settings()
    wh = connect(settings)
    cells = wh.arrow(
        "SELECT f.gvkey AS firm, i.item AS target, qlabel(t.origin_q) AS origin, "
        "CAST(t.horizon AS INTEGER) AS horizon, t.actual FROM panel.truth t "
        "JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        "WHERE t.split = 'test' AND isfinite(t.actual)"
    )
    rng = np.random.default_rng(0)
    for k in range(args.uploads):
        actual = cells["actual"].to_numpy(zero_copy_only=False)
        table = pa.table(
            {
                "firm": cells["firm"],
                "target": cells["target"],
                "origin": cells["origin"],
                "horizon": cells["horizon"],
                "prediction": pa.array(actual + rng.normal(0, 0.5, len(actual))),
                "sigma": pa.array(np.full(len(actual), 0.6)),
            }
        )
        buf = io.BytesIO()
        pq.write_table(table, buf)
        path = work / f"upload-{k}.parquet"
        path.write_bytes(buf.getvalue())
        scoring.ingest_parquet(wh, path, f"bench upload {k}")
    scoring.score(wh, footprint="full")
    made_s = time.perf_counter() - started
    store = settings.warehouse.with_name(settings.warehouse.name + ".uploads")
    wh.execute("CHECKPOINT")
    size = _size(settings.warehouse) + _size(store)

    t0 = time.perf_counter()
    result = make_backup(wh, settings, work / "backup")
    backup_s = time.perf_counter() - t0
    wh.close()
    t0 = time.perf_counter()
    verify_backup(work / "backup")
    verify_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    shutil.copyfile(settings.warehouse, work / "plain-copy.duckdb")
    shutil.copytree(store, work / "plain-store")
    copy_s = time.perf_counter() - t0

    for name, value in _env(elsewhere).items():
        os.environ[name] = value
    get_settings.cache_clear()
    t0 = time.perf_counter()
    restore_backup(work / "backup", get_settings())
    restore_s = time.perf_counter() - t0

    figures = {
        "firms": args.firms,
        "uploads": args.uploads,
        "rows": sum(result.manifest["tables"].values()),
        "warehouse_and_store_mb": round(size / 1e6, 1),
        "backup_mb": round(result.manifest["bytes"] / 1e6, 1),
        "backup_s": round(backup_s, 2),
        "verify_s": round(verify_s, 2),
        "restore_s": round(restore_s, 2),
        "plain_copy_s": round(copy_s, 2),
        "setup_s": round(made_s, 1),
    }
    print(f"{'step':<12} {'seconds':>8}")
    for key in ("backup_s", "verify_s", "restore_s", "plain_copy_s"):
        print(f"{key[:-2]:<12} {figures[key]:>8.2f}")
    print(json.dumps(figures))
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
