"""Arrow in and out of the warehouse without pandas; SQL steps with parameters."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from proforma.app.store.settings import Settings
from proforma.app.store.sqlfiles import sql_file
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError

ROWS = 3_000_000

# pyarrow probes for pandas whenever it builds an array (and imports it if installed),
# so "without pandas" is tested the strong way: pandas is made unimportable first.
_ROUND_TRIP = textwrap.dedent(
    """
    import json, sys

    class NoPandas:  # any `import pandas` now raises ImportError
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "pandas":
                raise ImportError("pandas is blocked in this test")

    sys.meta_path.insert(0, NoPandas())
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from proforma.app.store.warehouse import connect

    rows, batch = int(sys.argv[1]), 250_000

    def batches():
        for start in range(0, rows, batch):
            n = min(batch, rows - start)
            ids = np.arange(start, start + n, dtype=np.int64)
            yield pa.record_batch(
                [pa.array(ids), pa.array((ids % 97).astype(np.float64)),
                 pa.array((ids % 78).astype(np.int16))],
                names=["id", "v", "item_id"],
            )

    wh = connect()
    wh.execute("CREATE TABLE t (id BIGINT, v DOUBLE, item_id SMALLINT)")
    written = wh.write_arrow("t", batches())
    seen, total, n_batches = 0, 0.0, 0
    for b in wh.reader("SELECT id, v FROM t ORDER BY id", batch_size=100_000):
        seen += b.num_rows
        total += float(pc.sum(b.column(1)).as_py())
        n_batches += 1
    replaced = wh.write_arrow("t2", wh.arrow("SELECT item_id, count(*) AS n FROM t GROUP BY 1"),
                              mode="replace")
    print(json.dumps({"written": written, "seen": seen, "total": total, "batches": n_batches,
                      "replaced": replaced, "pandas": "pandas" in sys.modules}))
    """
)


def test_arrow_round_trip_of_millions_without_pandas(settings: Settings) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _ROUND_TRIP, str(ROWS)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    expected_total = float(
        sum((i % 97) for i in range(97)) * (ROWS // 97)
        + sum(i % 97 for i in range(ROWS - ROWS % 97, ROWS))
    )
    assert got["written"] == ROWS and got["seen"] == ROWS
    assert got["total"] == expected_total
    assert got["batches"] >= ROWS // 100_000  # streamed in batches, not one table
    assert got["replaced"] == 78
    assert got["pandas"] is False


def test_write_arrow_modes(wh: Warehouse) -> None:
    t = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    assert wh.write_arrow("main.w", t, mode="create") == 3
    with pytest.raises(Exception, match="already exists"):
        wh.write_arrow("main.w", t, mode="create")
    assert wh.write_arrow("main.w", t.slice(0, 1), mode="append") == 1
    assert wh.write_arrow("main.w", t.to_batches()[0], mode="replace") == 3
    with pytest.raises(UserError, match="Not a table name"):
        wh.write_arrow("w; DROP TABLE raw.fundq", t)
    with pytest.raises(UserError, match="No Arrow batches"):
        wh.write_arrow("main.w", iter([]))
    assert wh.table_exists("raw.fundq")


@pytest.fixture
def step(tmp_path: Path) -> Path:
    path = tmp_path / "010_make.sql"
    path.write_text(
        "-- Makes {{ target }} from a range: the values below the limit, after a start date.\n"
        "CREATE OR REPLACE TABLE {{ target }} AS\n"
        "SELECT range AS x, getvariable('since') AS since FROM range(getvariable('n'))\n"
        "WHERE range < getvariable('limit');\n"
        "SELECT count(*) AS n, min(since) AS since, list(x ORDER BY x) AS xs FROM {{ target }}\n"
        "WHERE list_contains(getvariable('wanted'), x);\n"
    )
    return path


def test_run_step_with_parameters_and_identifiers(wh: Warehouse, step: Path) -> None:
    f = sql_file(step)
    assert f.purpose.startswith("Makes {{ target }} from a range")
    params = {"n": 10, "limit": 5, "since": dt.date(2001, 12, 31), "wanted": [1, 3, 7]}
    wh.run_step(step, params, identifiers={"target": "main.made"})
    assert wh.scalar("SELECT count(*) FROM main.made") == 5
    result = wh.query_step(step, {**params, "limit": 8}, identifiers={"target": "made2"})
    assert result.to_pylist() == [{"n": 3, "since": dt.date(2001, 12, 31), "xs": [1, 3, 7]}]


@pytest.mark.parametrize(
    "hostile",
    ["t; DROP TABLE raw.fundq", "raw.fundq --", "a.b.c", "1abc", "t)", "x' OR '1'='1"],
)
def test_hostile_identifier_is_rejected(wh: Warehouse, step: Path, hostile: str) -> None:
    with pytest.raises(UserError, match="not a valid SQL identifier"):
        wh.run_step(
            step,
            {"n": 1, "limit": 1, "since": dt.date(2000, 1, 1), "wanted": [0]},
            identifiers={"target": hostile},
        )
    assert wh.table_exists("raw.fundq")


def test_step_errors(wh: Warehouse, step: Path) -> None:
    with pytest.raises(UserError, match="needs identifier 'target'"):
        wh.run_step(step, {"n": 1})
    with pytest.raises(UserError, match="Not a parameter name"):
        wh.run_step(step, {"n; DROP TABLE raw.fundq": 1}, identifiers={"target": "t"})
    with pytest.raises(UserError, match="Unsupported SQL parameter value"):
        wh.run_step(step, {"n": object()}, identifiers={"target": "t"})
    with pytest.raises(UserError, match="No SQL step"):
        wh.run_step("build/does_not_exist")
