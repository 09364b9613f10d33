"""`proforma submit` and `proforma score` of a stored upload import neither pandas nor
pydantic: Arrow's conversions imported pandas (0.5 s of every score) and the settings
pydantic (0.3 s of every command) before they went (app/store/columns.py,
app/store/settings.py). Run as the user runs them, in processes of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from scoring_fixtures import module_warehouse

from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import connect

#: Runs the CLI in this process and prints which of these modules it loaded.
PROBE = (
    "import json, sys\n"
    "from proforma.app.cli import app\n"
    "sys.argv = ['proforma'] + sys.argv[1:]\n"
    "try:\n"
    "    app()\n"
    "except SystemExit as done:\n"
    "    assert not done.code, done.code\n"
    "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'pandas', 'pydantic'})))\n"
)


def test_submit_and_score_import_neither_pandas_nor_pydantic(tmp_path_factory):
    wh = module_warehouse(tmp_path_factory, "imports")
    folder = wh.path.parent
    cells = wh.arrow(
        "SELECT f.gvkey AS firm, i.item AS target, qend(t.origin_q) AS origin, "
        "CAST(t.horizon AS BIGINT) AS horizon, t.actual FROM panel.truth t "
        "JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        "WHERE t.split = 'test' AND isfinite(t.actual)"
    )
    wh.close()
    rng = np.random.default_rng(3)
    upload = folder / "gauss.parquet"
    table = cells.drop(["actual"])
    n = cells.num_rows
    table = table.append_column(
        "prediction", pa.array(cells["actual"].to_numpy() + rng.normal(0, 0.3, n))
    ).append_column("sigma", pa.array(np.full(n, 0.5)))
    pq.write_table(table, upload)
    # a second member: a run of two makes Diebold-Mariano tests (significance.py)
    wider = folder / "gauss_wide.parquet"
    pq.write_table(table.set_column(5, "sigma", pa.array(np.full(n, 0.9))), wider)
    env = {
        **os.environ,
        "PROFORMA_WAREHOUSE": str(wh.path),
        "PROFORMA_TEMP_DIRECTORY": str(folder / "tmp"),
        "PROFORMA_CACHE_DIR": str(folder / "cache"),
        "PROFORMA_THREADS": "2",
    }
    for args in (
        ["submit", str(upload), "--name", "gauss"],
        ["score", "-s", "gauss", "--no-coherence"],
        ["submit", str(wider), "--name", "wide"],
        ["score", "-s", "gauss", "-s", "wide", "--no-coherence"],
    ):
        done = subprocess.run(
            [sys.executable, "-c", PROBE, *args],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.strip().splitlines()[-1]) == [], (args, done.stdout)
    assert "score run" in done.stderr
    with connect(Settings(warehouse=wh.path), read_only=True) as after:
        assert after.scalar("SELECT count(*) FROM eval.dm_test_rows") > 0
