"""Make a small warehouse with the code of a release, as an upgrade fixture (issue 50).

Run with that release's code first on the path, from an empty folder, e.g. for the
release of 2026-11-23:

    git worktree add /tmp/old 54c170a
    cd $(mktemp -d) && PYTHONPATH=/tmp/old:<its extra deps> \\
        python /path/to/tests/upgrade/make_fixture.py 2026-11-23 54c170a OUT.tar.xz

and with the current code (PYTHONPATH unset) for the current main. It makes, through
that release's own command line and service: a 10-firm synthetic panel, built, with the
reference baselines; a user with a token; two uploads through the API, scored; then
packs the warehouse, the upload store and the public snapshot with `fixture.json` (the
release, the token, what the warehouse held) into OUT.tar.xz.
`tests/upgrade/test_upgrade_fixtures.py` opens each with the current code.

Releases name their modules differently (`app.x` before the one installed package,
`proforma.app.x` after); the few this script imports are looked up under both.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

ROOT = Path.cwd()
DATA = ROOT / "data"
ENV = {
    "PROFORMA_WAREHOUSE": str(DATA / "warehouse.duckdb"),
    "PROFORMA_UPLOAD_DIR": str(DATA / "uploads"),
    "PROFORMA_PUBLIC_SNAPSHOT": str(DATA / "public.duckdb"),
    "PROFORMA_CACHE_DIR": str(ROOT / "cache"),
    "PROFORMA_TEMP_DIRECTORY": str(ROOT / "tmp"),
    "PROFORMA_MODELS_DIR": str(ROOT / "models"),
    "PROFORMA_REPORT_DIR": str(ROOT / "report"),
    "PROFORMA_THREADS": "2",
    "PROFORMA_MEMORY_LIMIT": "2GB",
    "PROFORMA_PUBLIC_MIN_CELLS": "5",
}
PANEL = ["--firms", "10", "--start", "1996", "--end", "2011", "--oracle-origins", "2"]


def module(name: str) -> Any:
    """`proforma.<name>` (releases from the one installed package on) or `<name>`."""
    return importlib.import_module(f"proforma.{name}" if _packaged() else name)


def cli(*args: str) -> str:
    package = "proforma.app.cli" if _packaged() else "app.cli"
    done = subprocess.run(
        [sys.executable, "-m", package, *args],
        env={**os.environ, **ENV},
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout + done.stderr


def _packaged() -> bool:
    """Whether the code on the path is of the one installed package; releases before it
    had their settings in a top-level `app/settings.py` (first on PYTHONPATH)."""
    try:
        importlib.import_module("app.settings")
    except ImportError:
        return True
    return False


def upload_file(seed: int, noise: float) -> bytes:
    """A submission of the panel's test cells: baseline + half the change + noise."""
    import duckdb
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    con = duckdb.connect(ENV["PROFORMA_WAREHOUSE"], read_only=True)
    cells = con.sql(
        "SELECT f.gvkey AS firm, i.item AS target, qlabel(t.origin_q) AS origin, "
        "CAST(t.horizon AS INTEGER) AS horizon, t.baseline, t.actual FROM panel.truth t "
        "JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        "WHERE t.split = 'test' ORDER BY 1, 2, 3, 4"
    ).to_arrow_table()
    con.close()
    rng = np.random.default_rng(seed)
    base = np.asarray(cells["baseline"].to_numpy(zero_copy_only=False), float)
    actual = np.asarray(cells["actual"].to_numpy(zero_copy_only=False), float)
    pred = np.nan_to_num(base + 0.5 * (actual - base)) + rng.normal(0, noise, cells.num_rows)
    table = pa.table(
        {
            "firm": cells["firm"],
            "target": cells["target"],
            "origin": cells["origin"],
            "horizon": cells["horizon"],
            "prediction": pa.array(pred),
            "sigma": pa.array(np.full(cells.num_rows, 0.5 + noise)),
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def serve_and_upload(files: list[tuple[str, bytes]]) -> tuple[str, list[dict]]:
    """The release's service: a user, the files uploaded through its API and scored."""
    os.environ.update(ENV)
    from fastapi.testclient import TestClient

    settings_module = module("app.store.settings") if _packaged() else module("app.settings")
    settings_module.get_settings.cache_clear()
    main = module("app.server.main") if _packaged() else module("app.api.main")
    auth = module("app.api.auth")
    jobs = []
    with TestClient(main.create_app(settings_module.get_settings())) as client:
        wh = client.app.state.wh.cursor()  # type: ignore[attr-defined]
        _, token = auth.add_user(wh, "alice")
        wh.close()
        for name, data in files:
            answer = client.post(
                "/api/v1/submissions",
                headers={"Authorization": f"Bearer {token}"},
                data={"name": name, "training_cutoff": "2009Q4", "leakage_statement": "none"},
                files={"file": ("f.parquet", data, "application/octet-stream")},
            )
            answer.raise_for_status()
            job_id = answer.json()["job_id"]
            for _ in range(1200):
                job = client.get(
                    f"/api/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {token}"}
                ).json()
                if job["status"] in ("done", "failed"):
                    break
                time.sleep(0.1)
            if job["status"] != "done":
                raise RuntimeError(f"upload {name} did not score: {job}")
            jobs.append(job)
    return token, jobs


def inventory() -> dict[str, Any]:
    """What the warehouse holds that an upgrade must keep."""
    import duckdb

    con = duckdb.connect(ENV["PROFORMA_WAREHOUSE"], read_only=True)
    try:

        def rows(sql: str) -> list[list[Any]]:
            return [list(r) for r in con.execute(sql).fetchall()]

        def value(sql: str) -> Any:
            return rows(sql)[0][0]

        return {
            "schema_version": value("SELECT max(version) FROM schema_migrations"),
            "submissions": rows(
                "SELECT submission_id, name, checksum FROM eval.submissions ORDER BY 1"
            ),
            # (releases before the upload store, V0111, kept an upload's rows in tables)
            "files": rows(
                "SELECT submission_id, file, rows, bytes FROM eval.submission_files ORDER BY 1"
            )
            if value(
                "SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'eval' "
                "AND table_name = 'submission_files'"
            )
            else [],
            "users": rows("SELECT user_id, name, is_admin FROM service.users ORDER BY 1"),
            "tokens": rows(
                "SELECT token_id, user_id, revoked_at IS NULL FROM service.tokens ORDER BY 1"
            ),
            "jobs": rows("SELECT job_id, status, submission_id FROM service.jobs ORDER BY 1"),
            # the scores the release gave its uploads: (footprint, submission, n, mse, crps)
            "scores": rows(
                "SELECT r.footprint_name, m.submission_id, m.n, m.mse, m.crps "
                "FROM eval.metrics m JOIN eval.score_runs r USING (score_run_id) "
                "WHERE m.level = 'global' AND r.score_run_id IN (SELECT max(score_run_id) "
                "FROM eval.score_runs GROUP BY footprint_name) ORDER BY 1, 2"
            ),
        }
    finally:
        con.close()


def main() -> None:
    release, commit, out = sys.argv[1], sys.argv[2], Path(sys.argv[3]).absolute()
    cli("migrate")
    cli("ingest", "synthetic", *PANEL)
    cli("build")
    cli("baselines", "reference")
    files = [("upload one", upload_file(1, 0.3)), ("upload two", upload_file(2, 0.6))]
    token, _ = serve_and_upload(files)
    record = {
        "release": release,
        "commit": commit,
        "token": token,
        **inventory(),
    }
    (DATA / "fixture.json").write_text(json.dumps(record, indent=1, default=str))
    # the warehouse, its upload store, the public snapshot's current file (as
    # public.duckdb) and the record; not older snapshots or caches
    store = DATA / "warehouse.duckdb.uploads"
    kept = [DATA / "warehouse.duckdb", *(sorted(store.glob("*")) if store.is_dir() else [])]
    with tarfile.open(out, "w:xz", preset=9) as tar:
        for path in [*kept, DATA / "fixture.json"]:
            tar.add(path, arcname=str(path.relative_to(DATA)), recursive=False)
        tar.add((DATA / "public.duckdb").resolve(), arcname="public.duckdb")
    print(f"{out}: {out.stat().st_size:,} bytes; {json.dumps(record)[:400]}")


if __name__ == "__main__":
    main()
