"""From a fresh client install to a scored submission (docs/client.md).

    python -m venv /tmp/pf && /tmp/pf/bin/pip install 'proforma-0.1.0-py3-none-any.whl'
    PROFORMA_SERVER=http://127.0.0.1:8000 PROFORMA_TOKEN=... /tmp/pf/bin/python client_quickstart.py

It reads the panel's keys (firms, targets, test origins), writes a forecast file for
every cell of them (a deliberately plain model: the standardized level 0, sigma 1; put
your own model's numbers here), checks it with the server's checks, submits it once,
follows the job, prints its ranks and the board, and downloads the public snapshot for
local SQL. A model name is taken once: run it again with another MODEL_NAME (the server
answers a name in use with a 409, which the script prints).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import duckdb

from proforma.client import Client, ClientError


def forecast_file(keys: dict[str, list[str]], out: Path) -> int:
    """Every firm x test origin x target x horizon, with a plain forecast, as a
    submission file (cells a firm did not file are simply not scored)."""
    with duckdb.connect() as con:
        for name in ("firms", "items", "test_origins"):
            con.execute(f"CREATE TABLE {name} (key VARCHAR)")
            con.executemany(f"INSERT INTO {name} VALUES (?)", [[k] for k in keys[name]])
        con.execute(
            f"""
            COPY (
                SELECT f.key AS firm, i.key AS target, o.key AS origin, h.horizon,
                       0.0 AS prediction, 1.0 AS sigma
                FROM firms f, test_origins o, items i, range(1, 21) h(horizon)
            ) TO '{out}' (FORMAT parquet)
            """
        )
        return con.execute(f"SELECT count(*) FROM '{out}'").fetchone()[0]


def main() -> int:
    name = os.environ.get("MODEL_NAME", "quickstart-zero")
    with Client() as pf, tempfile.TemporaryDirectory() as tmp:
        print(f"server {pf.config.server}: {pf.health()['status']}; you are {pf.me()['name']}")
        rows = forecast_file(pf.keys(), Path(tmp) / "forecasts.parquet")
        print(f"wrote {rows:,} forecasts")
        try:
            done = pf.submit(
                Path(tmp) / "forecasts.parquet",
                name,
                training_cutoff="2009Q4",
                leakage_statement="none: a constant forecast",
                on_event=print,
            )
        except ClientError as exc:
            print(f"not scored: {exc}", file=sys.stderr)
            for problem in getattr(exc, "problems", []):
                print(f"  {problem}", file=sys.stderr)
            return 1
        for footprint, ranks in done.ranks.items():
            for track, (rank, of) in ranks.items():
                print(f"{footprint} {track}: rank {rank} of {of}")
        board = pf.leaderboard("full", "squared")
        print(board.select(["rank", "model"]).to_pylist())
        # the public snapshot, for your own SQL over every public table
        snapshot = pf.snapshot(Path(tmp) / "public.duckdb")
        with duckdb.connect(str(snapshot), read_only=True) as con:
            print(con.sql("SELECT name, version, n_cells FROM footprints").fetchall())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
