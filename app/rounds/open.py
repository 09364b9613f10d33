"""`proforma round open`: freeze a round at the data's last quarter (docs/rounds.md).

The round's origins (every eligible origin of the panel at that quarter), horizons 1..20,
the items per firm (present at the origin), the standardization (k and the quarter's
parameters: at the open the panel ends there, so nothing depends on a later quarter), a
deadline, and its inputs: the tuple and tabular views of its origins in the published
layouts and the cells a submission may fill, written to a folder at the open with their
checksums. All in one transaction: a failure writes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from proforma.app.flows.export import export_id_maps
from proforma.app.model_inputs.views import feature_columns, item_names, tabular_reader
from proforma.app.rounds.store import HORIZONS, get_round
from proforma.app.store.rules import current_rules
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import file_sha256, utcnow
from proforma.contracts.quarters import quarter_label

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
DEFAULT_DAYS = 14.0


def data_last_quarter(wh: Warehouse) -> int:
    wh.require_panel(
        "panel.origins", "panel.values", "panel.firms", "panel.item_k", "panel.origin_params"
    )
    last = wh.scalar("SELECT max(q) FROM panel.values")
    if last is None:
        raise UserError("The panel holds no values: run `proforma build` on data first.")
    return int(last)


def open_round(
    wh: Warehouse,
    inputs_root: Path,
    *,
    name: str | None = None,
    deadline: dt.datetime | None = None,
    days: float | None = None,
    now: dt.datetime | None = None,
    tabular: bool = True,
) -> dict[str, Any]:
    """Open a round at the panel's last quarter; returns its record."""
    now = now or utcnow()
    if not wh.table_exists("rounds.rounds"):
        raise UserError("This warehouse has no rounds tables: run `proforma migrate`.")
    origin_q = data_last_quarter(wh)
    label = quarter_label(origin_q)
    name = name or label
    if not NAME.match(name):
        raise UserError(f"Round names use letters, digits, '.', '-' and '_' (got {name!r})")
    if deadline is not None and days is not None:
        raise UserError("Give a deadline or a number of days, not both")
    if deadline is None:
        deadline = now + dt.timedelta(days=DEFAULT_DAYS if days is None else days)
    if deadline.tzinfo is not None:
        deadline = deadline.astimezone(dt.UTC).replace(tzinfo=None)
    if deadline <= now:
        raise UserError(
            f"The deadline {deadline:%Y-%m-%d %H:%M:%S} UTC has passed (server time "
            f"{now:%Y-%m-%d %H:%M:%S} UTC)"
        )
    clash = wh.fetchone(
        "SELECT name, origin_q FROM rounds.rounds WHERE name = ? OR origin_q = ?", [name, origin_q]
    )
    if clash:
        raise UserError(
            f"Round {clash[0]!r} already freezes origin {quarter_label(clash[1])}"
            if clash[1] == origin_q
            else f"A round named {name!r} exists already"
        )
    n_origins = wh.scalar("SELECT count(*) FROM panel.origins WHERE origin_q = ?", [origin_q])
    if not n_origins:
        raise UserError(
            f"The panel's last quarter {label} has no eligible origin: nothing to forecast"
        )
    build_id = wh.scalar("SELECT max(build_id) FROM meta.builds")
    ingest_id = wh.scalar("SELECT max(ingest_id) FROM raw.ingests")
    rules = current_rules(wh).name
    folder = inputs_root / name
    if folder.exists():
        raise UserError(f"{folder} exists already: move it away or choose another round name")
    try:
        with wh.transaction():
            round_id = wh.scalar(
                "INSERT INTO rounds.rounds (name, origin_q, deadline, opened_at, build_id, "
                "ingest_id, rules, n_origins, n_cells) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0) "
                "RETURNING round_id",
                [name, origin_q, deadline, now, build_id, ingest_id, rules],
            )
            wh.run_step("rounds/020_freeze_round", {"round_id": round_id, "origin_q": origin_q})
            n_origins, n_items = wh.one(
                "SELECT (SELECT count(*) FROM rounds.origins WHERE round_id = $1), "
                "(SELECT count(*) FROM rounds.baselines WHERE round_id = $1)",
                [round_id],
            )
            inputs = write_inputs(wh, round_id, origin_q, folder, name, tabular=tabular)
            wh.execute(
                "UPDATE rounds.rounds SET n_origins = ?, n_cells = ?, inputs = ? "
                "WHERE round_id = ?",
                [n_origins, n_items * HORIZONS, json.dumps(inputs), round_id],
            )
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return get_round(wh, name, now)


def write_inputs(
    wh: Warehouse, round_id: int, origin_q: int, folder: Path, name: str, *, tabular: bool
) -> dict[str, Any]:
    """The round's inputs in `folder`: its cells, tuples and tabular rows, the id maps and
    the frozen parameters; returns {"folder", "files": {file: {"rows", "sha256"}}}."""
    folder.mkdir(parents=True)
    files: dict[str, int] = {}
    params = {"round_id": round_id}
    for step, stem in (("070_input_cells", "cells"), ("060_input_tuples", "tuples")):
        table = wh.query_step(f"rounds/{step}", params)
        pq.write_table(table, folder / f"{stem}__{name}.parquet", compression="zstd")
        files[f"{stem}__{name}.parquet"] = table.num_rows
    stats = wh.arrow(
        "SELECT i.item AS feature, p.k, p.mu, p.sigma FROM rounds.params p "
        "JOIN ref.items i USING (item_id) WHERE p.round_id = ? ORDER BY p.item_id",
        [round_id],
    )
    pq.write_table(stats, folder / f"parameters__{name}.parquet")
    files[f"parameters__{name}.parquet"] = stats.num_rows
    files.update(export_id_maps(wh, folder, name))
    if tabular:
        files[f"tabular__{name}.parquet"] = _tabular(
            wh, origin_q, folder / f"tabular__{name}.parquet"
        )
    return {
        "folder": str(folder),
        "files": {f: {"rows": n, "sha256": file_sha256(folder / f)} for f, n in files.items()},
    }


def _tabular(wh: Warehouse, origin_q: int, path: Path) -> int:
    """The round's origins' rows of the tabular view (features only, not imputed), with
    the release's keys: `firm_id` (gvkey) and `quarter` (the origin quarter's end)."""
    columns = feature_columns(item_names(wh))
    gvkeys = dict(wh.fetchall("SELECT firm_id, gvkey FROM panel.firms"))
    parts = []
    split = wh.scalar("SELECT any_value(split) FROM panel.origins WHERE origin_q = ?", [origin_q])
    for batch in tabular_reader(wh.cursor(), split, columns=columns, origin_q=origin_q):
        keep = pc.equal(batch.column("origin_q"), origin_q)
        if pc.any(keep).as_py():
            parts.append(batch.filter(keep))
    if not parts:
        raise UserError(f"The tabular view has no origin at {quarter_label(origin_q)}")
    table = pa.Table.from_batches(parts)
    firm = pa.array([gvkeys[f] for f in table.column("firm_id").to_pylist()], pa.string())
    end = wh.scalar(
        "SELECT (qend(?) + INTERVAL 1 DAY - INTERVAL 1 MICROSECOND)::TIMESTAMP", [origin_q]
    )
    quarter = pa.array([end] * table.num_rows, pa.timestamp("us"))
    out = pa.table(
        [firm, quarter] + [table.column(c) for c in columns], names=["firm_id", "quarter", *columns]
    )
    pq.write_table(out, path, compression="zstd")
    return out.num_rows
