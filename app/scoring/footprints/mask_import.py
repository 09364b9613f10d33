"""`proforma footprint import`: a frozen footprint from a published sample mask.

The published package scores a paper column (e.g. the 327,244,429-cell Full sample) on
`mask INTERSECT the compared models' common sample`, its `evaluate --sample-mask` taking
the mask in two forms, both accepted here:

- keys: a parquet of (firm, target, origin, horizon) rows (aliases firm_id, quarter,
  forecast_horizon; firm a gvkey string, or an integer that is zero-padded to 6 digits);
- a grid-aligned bitmap (.npy: np.packbits of one bit per cell, or one bool per cell)
  over the test grid: cell = (target * 20 + (horizon - 1)) * n_rows + row, targets in
  sorted name order, rows the test split's (firm, origin) rows. Without --grid-rows the
  rows are this build's test origins in the package's order (gvkey, then quarter), which
  only a `published` build has; with --grid-rows (a parquet of firm, origin in the
  mask's row order) the bitmap is realigned onto this build by (firm, origin) value.

Keys whose (firm, origin) is not a test origin of this build (vintage drift, say) are
left out and counted; a mask that matches no origin at all, a bitmap of the wrong length,
unknown targets or horizons, and null keys are errors, and nothing is written. The cells
are stored with their gvkeys like any frozen footprint (eval.footprint_cells).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.scoring.footprints.store import (
    get_footprint_by_id,
    insert_footprint,
    set_cell_count,
)
from proforma.app.store.rules import current_rules
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.forecasts import COLUMN_ALIASES as ALIASES
from proforma.contracts.rules import PACKAGE_BUILD

N_HORIZONS = 20


def import_footprint(
    wh: Warehouse,
    name: str,
    mask: Path,
    *,
    grid_rows: Path | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    """Create (a new version of) footprint `name` from a published mask; returns a summary
    (footprint_id, version, mask_cells, cells_kept, keys_off_grid, rows_matched, n_cells)."""
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise UserError(f"Footprint names use letters, digits, - and _: {name!r}")
    wh.require_panel("panel.truth")
    mask = Path(mask)
    if not mask.is_file():
        raise UserError(f"No mask file {mask}")
    if mask.suffix == ".npy":
        info = _load_bitmap(wh, mask, grid_rows)
    else:
        if grid_rows is not None:
            raise UserError(
                "--grid-rows goes with a bitmap (.npy) mask; a keys mask matches by value"
            )
        info = _load_keys(wh, mask)
    try:
        kept = int(
            wh.scalar(
                "SELECT count(*) FROM mask_cells AS m JOIN panel.firms AS f USING (gvkey) "
                "JOIN panel.origins AS o ON o.firm_id = f.firm_id AND o.origin_q = m.origin_q "
                "AND o.split = 'test'"
            )
        )
        if info["mask_cells"] and not kept:
            raise UserError(
                f"{mask.name}: none of its {info['mask_cells']:,} cells is at a test origin of "
                "this build: a mask of another panel (check the rule set and the raw data)"
            )
        definition = {
            "imported_from": mask.name,
            "grid_rows": grid_rows.name if grid_rows else None,
            **{k: v for k, v in info.items() if k != "mask_cells"},
            "mask_cells": info["mask_cells"],
            "cells_kept": kept,
        }
        with wh.transaction():
            fid = insert_footprint(wh, name, "cells", "TRUE", "test", description, definition)
            wh.run_step("eval/048_footprint_import", {"footprint_id": fid})
            n_cells = set_cell_count(wh, fid)
    finally:
        wh.execute("DROP TABLE IF EXISTS mask_cells")
    fp = get_footprint_by_id(wh, fid)
    return {
        "footprint_id": fid,
        "version": fp["version"],
        "mask_cells": info["mask_cells"],
        "cells_kept": kept,
        "keys_off_grid": info["mask_cells"] - kept,
        "rows_matched": info.get("rows_matched"),
        "n_cells": n_cells,
    }


# -- keys --------------------------------------------------------------------------------
def _load_keys(wh: Warehouse, path: Path) -> dict[str, Any]:
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowException, OSError) as exc:
        raise UserError(
            f"{path.name} is not a readable parquet file: {str(exc).splitlines()[0]}"
        ) from None
    cols: dict[str, str] = {}
    for field in schema:
        canonical = ALIASES.get(field.name.lower(), field.name.lower())
        if canonical not in cols or field.name.lower() == canonical:
            cols[canonical] = field.name
    missing = [c for c in ("firm", "target", "origin", "horizon") if c not in cols]
    if missing:
        raise UserError(
            f"{path.name} lacks column(s) {', '.join(missing)} "
            f"(a keys mask has firm, target, origin, horizon; found {', '.join(schema.names)})"
        )
    q = {k: '"' + v.replace('"', '""') + '"' for k, v in cols.items()}
    origin_t = schema.field(cols["origin"]).type
    if pa.types.is_dictionary(origin_t):
        origin_t = origin_t.value_type
    if pa.types.is_timestamp(origin_t) or pa.types.is_date(origin_t):
        origin = f"qord(CAST({q['origin']} AS DATE))"
    else:
        origin = f"eval.origin_from_text(CAST({q['origin']} AS VARCHAR))"
    firm_t = schema.field(cols["firm"]).type
    firm = (
        f"lpad(CAST({q['firm']} AS VARCHAR), 6, '0')"
        if pa.types.is_integer(firm_t)
        else f"CAST({q['firm']} AS VARCHAR)"
    )
    src = "'" + str(path).replace("'", "''") + "'"
    wh.execute(f"""
        CREATE OR REPLACE TEMP TABLE mask_raw AS
        SELECT {firm} AS gvkey, CAST({q["target"]} AS VARCHAR) AS target,
               CAST({origin} AS INTEGER) AS origin_q, TRY_CAST({q["horizon"]} AS DOUBLE) AS horizon
        FROM read_parquet({src})""")
    try:
        bad = wh.one("""
            SELECT count(*) FILTER (WHERE gvkey IS NULL OR target IS NULL OR origin_q IS NULL
                                    OR horizon IS NULL),
                   count(*) FILTER (WHERE target IS NOT NULL
                                    AND target NOT IN (SELECT item FROM ref.items WHERE item_id > 0)),
                   count(*) FILTER (WHERE horizon IS NOT NULL AND (horizon <> round(horizon)
                                    OR horizon NOT BETWEEN 1 AND 20)),
                   list(DISTINCT target) FILTER (WHERE target NOT IN (SELECT item FROM ref.items
                                                                      WHERE item_id > 0))[1:3]
            FROM mask_raw""")
        problems = []
        if bad[0]:
            problems.append(f"{bad[0]:,} row(s) with a null or unreadable key")
        if bad[1]:
            problems.append(f"{bad[1]:,} row(s) with an unknown target (e.g. {', '.join(bad[3])})")
        if bad[2]:
            problems.append(f"{bad[2]:,} row(s) with a horizon outside 1..20 or not whole")
        if problems:
            raise UserError(f"Bad mask {path.name}, nothing imported: " + "; ".join(problems))
        wh.execute("""
            CREATE OR REPLACE TEMP TABLE mask_cells AS
            SELECT DISTINCT m.gvkey, m.origin_q, i.item_id, CAST(m.horizon AS TINYINT) AS horizon
            FROM mask_raw AS m JOIN ref.items AS i ON i.item = m.target""")
    finally:
        wh.execute("DROP TABLE IF EXISTS mask_raw")
    return {"form": "keys", "mask_cells": int(wh.scalar("SELECT count(*) FROM mask_cells"))}


# -- grid-aligned bitmap ------------------------------------------------------------------
def _load_bitmap(wh: Warehouse, path: Path, grid_rows: Path | None) -> dict[str, Any]:
    try:
        bits = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise UserError(
            f"{path.name} is not a numpy .npy array: {str(exc).splitlines()[0]}"
        ) from None
    bits = np.ravel(bits)
    targets = sorted(r[0] for r in wh.fetchall("SELECT item FROM ref.items WHERE item_id > 0"))
    item_ids = dict(wh.fetchall("SELECT item, item_id FROM ref.items"))
    rows = _grid_rows(wh, path, grid_rows)
    n_rows = rows.num_rows
    n_cells = len(targets) * N_HORIZONS * n_rows
    packed = (n_cells + 7) // 8
    if bits.dtype == np.uint8 and bits.size == packed:
        kind = "packbits"
    elif bits.size == n_cells and bits.dtype in (np.bool_, np.uint8):
        kind = "bool"
    else:
        source = "the --grid-rows index" if grid_rows else "this build's test grid"
        raise UserError(
            f"{path.name} has {bits.size:,} entries ({bits.dtype}), but {source} has {n_rows:,} rows "
            f"x {len(targets)} targets x {N_HORIZONS} horizons = {n_cells:,} cells (a {packed:,}-byte "
            "np.packbits was expected). A bitmap of another row set needs the row index it was "
            "built on (--grid-rows); nothing imported"
        )
    with wh.registered("__mask_rows", rows):
        wh.execute("CREATE OR REPLACE TEMP TABLE mask_rows AS SELECT * FROM __mask_rows")

    def blocks() -> Iterator[pa.RecordBatch]:
        for t, target in enumerate(targets):
            for h in range(N_HORIZONS):
                start = (t * N_HORIZONS + h) * n_rows
                if kind == "packbits":
                    lo, hi = start // 8, (start + n_rows + 7) // 8
                    block = np.unpackbits(bits[lo:hi])[start - lo * 8 : start - lo * 8 + n_rows]
                else:
                    block = bits[start : start + n_rows]
                set_rows = np.flatnonzero(block).astype(np.int32)
                if set_rows.size:
                    yield pa.record_batch(
                        {
                            "row_idx": set_rows,
                            "item_id": np.full(set_rows.size, item_ids[target], np.int16),
                            "horizon": np.full(set_rows.size, h + 1, np.int8),
                        }
                    )

    schema = pa.schema([("row_idx", pa.int32()), ("item_id", pa.int16()), ("horizon", pa.int8())])
    with wh.registered("__mask_bits", pa.RecordBatchReader.from_batches(schema, blocks())):
        wh.execute("""
            CREATE OR REPLACE TEMP TABLE mask_cells AS
            SELECT r.gvkey, r.origin_q, b.item_id, b.horizon
            FROM __mask_bits AS b JOIN mask_rows AS r USING (row_idx)""")
    matched = int(
        wh.scalar(
            "SELECT count(*) FROM mask_rows AS r JOIN panel.firms AS f USING (gvkey) "
            "JOIN panel.origins AS o ON o.firm_id = f.firm_id AND o.origin_q = r.origin_q "
            "AND o.split = 'test'"
        )
    )
    wh.execute("DROP TABLE mask_rows")
    return {
        "form": f"bitmap ({kind})",
        "grid_rows": n_rows,
        "rows_matched": matched,
        "mask_cells": int(wh.scalar("SELECT count(*) FROM mask_cells")),
    }


def _grid_rows(wh: Warehouse, mask: Path, grid_rows: Path | None) -> pa.Table:
    """(row_idx, gvkey, origin_q) of the bitmap's rows, in its order."""
    if grid_rows is None:
        if not current_rules(wh).builds_like(PACKAGE_BUILD):
            raise UserError(
                f"{mask.name} is a positional bitmap over the published package's test grid, "
                "which only a build under the package's build rules has (`published`): rebuild "
                "with --rules published, or pass the "
                "mask's row index (--grid-rows)"
            )
        return wh.arrow(
            "SELECT (row_number() OVER (ORDER BY f.gvkey, o.origin_q) - 1)::INTEGER AS row_idx, "
            "f.gvkey, o.origin_q FROM panel.origins AS o JOIN panel.firms AS f USING (firm_id) "
            "WHERE o.split = 'test' ORDER BY row_idx"
        )
    if not Path(grid_rows).is_file():
        raise UserError(f"No grid-rows file {grid_rows}")
    try:
        schema = pq.read_schema(grid_rows)
    except (pa.ArrowException, OSError) as exc:
        raise UserError(
            f"{Path(grid_rows).name} is not a readable parquet file: {str(exc).splitlines()[0]}"
        ) from None
    cols = {ALIASES.get(f.name.lower(), f.name.lower()): f.name for f in schema}
    if "firm" not in cols or "origin" not in cols:
        raise UserError(
            f"{Path(grid_rows).name} needs columns firm and origin (aliases firm_id, "
            f"quarter); found {', '.join(schema.names)}"
        )
    firm_t = schema.field(cols["firm"]).type
    firm = (
        f"lpad(CAST(\"{cols['firm']}\" AS VARCHAR), 6, '0')"
        if pa.types.is_integer(firm_t)
        else f'CAST("{cols["firm"]}" AS VARCHAR)'
    )
    origin_t = schema.field(cols["origin"]).type
    origin = (
        f'qord(CAST("{cols["origin"]}" AS DATE))'
        if pa.types.is_timestamp(origin_t) or pa.types.is_date(origin_t)
        else f'eval.origin_from_text(CAST("{cols["origin"]}" AS VARCHAR))'
    )
    src = "'" + str(grid_rows).replace("'", "''") + "'"
    rows = wh.arrow(
        f"SELECT (file_row_number)::INTEGER AS row_idx, {firm} AS gvkey, "
        f"CAST({origin} AS INTEGER) AS origin_q "
        f"FROM read_parquet({src}, file_row_number = true) ORDER BY row_idx"
    )
    if rows.column("gvkey").null_count or rows.column("origin_q").null_count:
        raise UserError(f"{Path(grid_rows).name}: null or unreadable (firm, origin) rows")
    if wh.scalar(f"SELECT count(*) - count(DISTINCT ({firm}, {origin})) FROM read_parquet({src})"):
        raise UserError(f"{Path(grid_rows).name} has duplicate (firm, origin) rows")
    return rows
