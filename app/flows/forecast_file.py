"""A submission's forecasts written out as the published submission file (issue 52):
what `proforma export --submission` writes locally and what the service hands the client
for the caller's own submissions and the in-house models.

The file is the published package's (SUBMISSION.md): firm, target, origin (quarter-end
timestamp), horizon, prediction (standardized level, the doubles this service scored),
and sigma for a density forecast, with the family declared beside it in `{stem}.nll.json` ({"family", "df"}),
which the package's `evaluate` and this project's `submit` both read. A mixture keeps its
`component` column and a quantile forecast its `quantile_level` column: the forms this
service reads (docs/scoring.md) that the package has no place for. The rows come from
wherever the submission keeps them (eval.forecasts or its stored upload file), through
sql/export/020_forecast_file.sql, streamed to disk."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from proforma.app.scoring.submissions.store import FILE_VIEW, forecast_relation
from proforma.app.store.sqlfiles import sql_file
from proforma.app.store.warehouse import Warehouse
from proforma.contracts import families
from proforma.contracts.errors import UserError

_ROW_GROUP = 1_048_576


@dataclass(frozen=True)
class WrittenForecasts:
    path: Path
    #: the family sidecar beside it, or None (a point forecast, a quantile forecast)
    sidecar: Path | None
    rows: int
    submission_id: int
    name: str
    family: str
    columns: list[str]


def find_submission(wh: Warehouse, submission: int | str) -> dict[str, Any]:
    """A submission by id, or by name (the current one of that name): its record."""
    wh.require_panel("panel.firms")
    column = "submission_id" if isinstance(submission, int) else "name"
    current = "" if isinstance(submission, int) else " AND retired_at IS NULL"
    rows = wh.arrow(
        "SELECT submission_id, name, source, family, df, has_sigma, n_components, "
        "quantile_levels, metadata FROM eval.submissions "
        f"WHERE {column} = ?{current} ORDER BY submission_id DESC LIMIT 1",
        [submission],
    ).to_pylist()
    if not rows:
        what = f"id {submission}" if isinstance(submission, int) else f"named {submission!r}"
        raise UserError(f"No submission {what} (`proforma leaderboard` lists them).")
    return rows[0]


def file_columns(record: dict[str, Any]) -> list[str]:
    """The columns a submission's file has: the five keys and prediction, then sigma,
    component or quantile_level as its kind of forecast needs."""
    columns = ["firm", "target", "origin", "horizon", "prediction"]
    if record["family"] == "quantile":
        return [*columns, "quantile_level"]
    if record["has_sigma"]:
        columns.append("sigma")
    if record["n_components"] > 1:
        columns.append("component")
    return columns


def write_forecast_file(wh: Warehouse, submission: int | str, out: Path) -> WrittenForecasts:
    """Write submission `submission` (id or current name) to `out` (a .parquet path) and
    its family sidecar beside it; a file already there is replaced only once the new one
    is complete."""
    out = Path(out)
    if out.suffix != ".parquet":
        raise UserError(f"The forecast file must end in .parquet (got {out.name}).")
    record = find_submission(wh, submission)
    sid = int(record["submission_id"])
    columns = file_columns(record)
    relation = forecast_relation(wh, sid)
    tmp = out.with_name(f".{out.name}.part")
    rows = 0
    try:
        wh.set_params({"submission_id": sid, "quantile_levels": record["quantile_levels"] or [0.5]})
        select = sql_file("export/020_forecast_file").render({"forecasts": relation})
        picked = f"SELECT {', '.join(columns)} FROM ({select.strip().rstrip(';')})"
        reader = wh.reader(picked, batch_size=_ROW_GROUP)
        out.parent.mkdir(parents=True, exist_ok=True)
        with pq.ParquetWriter(tmp, reader.schema, compression="zstd") as writer:
            for batch in reader:
                writer.write_batch(batch, row_group_size=_ROW_GROUP)
                rows += batch.num_rows
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
        wh.execute(f"DROP VIEW IF EXISTS {FILE_VIEW}")
    side = out.with_name(f"{out.stem}.nll.json")
    side.unlink(missing_ok=True)  # a stale one would change the file's density family
    sidecar: Path | None = None
    # every density family of the registry (the published package reads its own three)
    if record["has_sigma"] and families.is_density(record["family"]):
        body: dict[str, Any] = {"family": record["family"]}
        if record["df"] is not None:
            body["df"] = float(record["df"])
        side.write_text(json.dumps(body) + "\n", encoding="utf-8")
        sidecar = side
    return WrittenForecasts(out, sidecar, rows, sid, record["name"], record["family"], columns)
