"""`proforma export --layout proforma20q DIR`: the panel as the published package writes it
(and `--layout compustat DIR`: the raw panel as its download writes it, financial-sector
rows dropped).

The files and names its own tools read (`proforma20q evaluate --processed DIR`,
`baselines`, `read_id_maps`), with `{tag}` = pf_full__r13_node_optionD_indfe_val8 unless
another is given:
- tabular_{split}__{tag}.parquet: `firm_id` (zero-padded gvkey), `quarter` (origin
  quarter-end TIMESTAMP, 23:59:59.999999), then in the release's item order
  (reference/release_layout.csv) `scale_level_0` and per item `{item}_level_0..3`,
  `{item}_yoy_0..7`, `{item}_t1..t20`, then `indff48_0..47` (FF48 industries 1..48;
  Unknown omitted); FLOAT, NULL when missing or purged. Features are the factor-imputed
  ones (panel.tabular_imputed_cells, made when missing) unless imputed=False. Rows come in
  (quarter, firm) order; the package writes (firm, quarter): row order is not part of
  the task, and `footprint import` enumerates grid positions itself.
- tuple_{split}__{tag}.parquet: `firm_id`, `account_id`, `quarter` (quarters since
  1969Q4), `value` (as reported), `industry_id`: every reported value of the split's
  quarters (train through 2001Q4, val and test from 11 quarters before their first
  year), with the deflator as the account `scale`.
- regularization_stats__{tag}.parquet: `quarter`, `mu`, `sigma`, `feature`, `k`
  (`proforma build --reg-stats FILE` pins them back unchanged).
- firm_id_map__{tag}.csv, account_id_map__{tag}.csv, industry_id_map__{tag}.csv.

`--layout compustat` writes compustat_with_permno.parquet from raw.* alone (no build
needed; sql/export/010_compustat_raw_panel.sql): the package download's file, with its
filters (financial-sector rows dropped, CRSP link-window trim) and its added columns
(`sich`, `naicsh`, `permno`, `permco`, `jdate`, `year`), the input `proforma20q build
--raw` takes unchanged, so the package can be run beside this project on the same panel.
What raw.* cannot hold is left out or NULL (the SQL file's comment lists it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from queue import Queue

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from proforma.app.model_inputs.views import tabular_reader
from proforma.app.store.reference import release_item_order
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.panel import SPLITS

LAYOUTS = ("proforma20q", "compustat")
RAW_PANEL_FILE = "compustat_with_permno.parquet"
RELEASE_TAG = "pf_full__r13_node_optionD_indfe_val8"
#: The package's tuple quarters count from 1969Q4 (ordinal 1969 * 4 + 3).
TUPLE_BASE_Q = 1969 * 4 + 3
#: Quarters of pre-split history in the val and test tuple files (4 levels + 8 yoy - 1).
TUPLE_PRE_QUARTERS = 11
#: Rows per row group of a tabular file (fewer, larger groups keep the 2,545-column footer
#: small) and origins per reader chunk (two chunks in flight bound the reader's memory).
TABULAR_ROW_GROUP = 8_192
TABULAR_READ_ORIGINS = 2_048
#: The quarter-end instant the package stamps on a quarter (its Period end, in microseconds).
QUARTER_END = "(qend({q}) + INTERVAL 1 DAY - INTERVAL 1 MICROSECOND)::TIMESTAMP"


def _copy(wh: Warehouse, select: str, path: Path, params: list | None = None) -> int:
    tmp = path.with_name(path.name + ".part")
    target = str(tmp).replace("'", "''")
    wh.execute(f"COPY ({select}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)", params)
    tmp.replace(path)
    return int(wh.scalar("SELECT count(*) FROM read_parquet(?)", [str(path)]))


def _csv(wh: Warehouse, select: str, path: Path) -> int:
    tmp = path.with_name(path.name + ".part")
    target = str(tmp).replace("'", "''")
    wh.execute(f"COPY ({select}) TO '{target}' (FORMAT csv, HEADER true)")
    tmp.replace(path)
    return int(wh.scalar(f"SELECT count(*) FROM ({select})"))


def release_columns(items: Sequence[str]) -> list[str]:
    """The tabular file's value columns in the release's order."""
    cols = ["scale_level_0"]
    for item in items:
        cols += [f"{item}_level_{k}" for k in range(4)] + [f"{item}_yoy_{k}" for k in range(8)]
        cols += [f"{item}_t{h}" for h in range(1, 21)]
    return cols + [f"indff48_{k}" for k in range(48)]


def export_raw_panel(wh: Warehouse, path: Path) -> int:
    """raw.* as the published package's download file (compustat_with_permno.parquet):
    financial-sector rows dropped, link-window trimmed, with permno, permco, jdate, year."""
    from proforma.app.flows.build import BuildParams
    from proforma.app.store.sqlfiles import sql_file

    if not wh.scalar("SELECT count(*) FROM raw.fundq"):
        raise UserError("raw.fundq is empty: ingest a source first (`proforma ingest ...`).")
    params = BuildParams()
    wh.set_params({"fin_sic_lo": params.fin_sic_lo, "fin_sic_hi": params.fin_sic_hi})
    return _copy(wh, sql_file("export/010_compustat_raw_panel").text.strip().rstrip(";"), path)


def export_regularization_stats(wh: Warehouse, path: Path) -> int:
    return _copy(
        wh,
        f"SELECT {QUARTER_END.format(q='p.q')} AS quarter, p.mu, p.sigma, i.item AS feature, k.k "
        "FROM panel.origin_params AS p JOIN panel.item_k AS k USING (item_id) "
        "JOIN ref.items AS i USING (item_id) ORDER BY p.item_id, p.q",
        path,
    )


def export_tabular(wh: Warehouse, split: str, path: Path, imputed: bool = True) -> int:
    """Stream the split's tabular view into the release's file. A second thread runs the
    reader (DuckDB's queries and the numpy layout) while this one encodes row groups, so
    both cores work; memory stays at about two reader chunks."""
    items = release_item_order()
    columns = release_columns(items)
    gvkeys = dict(wh.fetchall("SELECT firm_id, gvkey FROM panel.firms"))
    schema = pa.schema(
        [pa.field("firm_id", pa.string()), pa.field("quarter", pa.timestamp("us"))]
        + [pa.field(c, pa.float32()) for c in columns]
    )
    # our reader names the dummies by FF48 industry (1..48); the release by index (0..47)
    source = {
        c: (f"indff48_{int(c.rsplit('_', 1)[1]) + 1}" if c.startswith("indff48_") else c)
        for c in columns
    }
    tmp = path.with_name(path.name + ".part")
    rows = 0
    reader_wh = wh.cursor()
    try:
        reader = tabular_reader(
            reader_wh,
            split,
            batch_size=TABULAR_READ_ORIGINS,
            imputed=imputed,
            chunk_origins=TABULAR_READ_ORIGINS,
        )
        # snappy and no dictionaries for the floats, as the package writes them: zstd and
        # float dictionaries cost several times the CPU for no smaller file
        with pq.ParquetWriter(tmp, schema, compression="snappy", use_dictionary=["firm_id"]) as out:
            group: list[pa.RecordBatch] = []
            for batch in _prefetched(reader):
                if batch.num_rows == 0:
                    continue
                firm = [gvkeys[f] for f in batch.column("firm_id").to_pylist()]
                q = batch.column("origin_q").to_numpy()
                arrays = [
                    pa.array(firm, pa.string()),
                    pa.array(_quarter_end_us(q), pa.timestamp("us")),
                ]
                arrays += [batch.column(source[c]).cast(pa.float32()) for c in columns]
                group.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
                rows += batch.num_rows
                if sum(b.num_rows for b in group) >= TABULAR_ROW_GROUP:
                    out.write_table(pa.Table.from_batches(group), row_group_size=TABULAR_ROW_GROUP)
                    group = []
            if group:
                out.write_table(pa.Table.from_batches(group), row_group_size=TABULAR_ROW_GROUP)
    finally:
        reader_wh.close()
    tmp.replace(path)
    return rows


def _prefetched(reader: pa.RecordBatchReader, depth: int = 1):
    """The reader's batches, produced one ahead on a thread of their own."""
    queue: Queue = Queue(maxsize=depth)
    done = object()

    def produce() -> None:
        try:
            for batch in reader:
                queue.put(batch)
            queue.put(done)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
            queue.put(exc)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    while True:
        item = queue.get()
        if item is done:
            break
        if isinstance(item, BaseException):
            raise item
        yield item
    thread.join()


def _quarter_end_us(q: np.ndarray) -> np.ndarray:
    """Quarter ordinals (year * 4 + quarter - 1) as the last microsecond of the quarter."""
    year, quarter = q // 4, q % 4
    first_of_next = np.array(year - 1970, dtype="datetime64[Y]").astype("datetime64[M]") + (
        3 * (quarter + 1)
    ).astype("timedelta64[M]")
    return first_of_next.astype("datetime64[us]") - np.timedelta64(1, "us")


def export_tuples(wh: Warehouse, split: str, path: Path) -> int:
    lo, hi = {
        "train": ("NULL", "(SELECT last_q FROM panel.splits WHERE split = 'train')"),
        "val": (
            f"(SELECT first_q FROM panel.splits WHERE split = 'val') - {TUPLE_PRE_QUARTERS}",
            "(SELECT last_q FROM panel.splits WHERE split = 'val')",
        ),
        "test": (
            f"(SELECT first_q FROM panel.splits WHERE split = 'test') - {TUPLE_PRE_QUARTERS}",
            "NULL",
        ),
    }[split]
    return _copy(
        wh,
        f"""WITH accounts AS (
                SELECT item_id, (row_number() OVER (ORDER BY item) - 1)::BIGINT AS account_id
                FROM ref.items
            )
            SELECT (v.firm_id - 1)::BIGINT AS firm_id, a.account_id,
                   (v.q - {TUPLE_BASE_Q})::BIGINT AS quarter, v.v AS value,
                   (f.ff48 - 1)::BIGINT AS industry_id
            FROM panel.values AS v
            JOIN accounts AS a USING (item_id)
            JOIN panel.firms AS f USING (firm_id)
            WHERE v.q >= coalesce({lo}, v.q) AND v.q <= coalesce({hi}, v.q)
            ORDER BY a.account_id, v.firm_id, v.q""",
        path,
    )


def export_id_maps(wh: Warehouse, out_dir: Path, tag: str) -> dict[str, int]:
    return {
        f"firm_id_map__{tag}.csv": _csv(
            wh,
            "SELECT (firm_id - 1)::BIGINT AS firm_id_int, gvkey AS firm_id FROM panel.firms "
            "ORDER BY firm_id",
            out_dir / f"firm_id_map__{tag}.csv",
        ),
        f"account_id_map__{tag}.csv": _csv(
            wh,
            "SELECT (row_number() OVER (ORDER BY item) - 1)::BIGINT AS account_id, "
            "item AS account_name FROM ref.items ORDER BY item",
            out_dir / f"account_id_map__{tag}.csv",
        ),
        f"industry_id_map__{tag}.csv": _csv(
            wh,
            "SELECT (ff48 - 1)::BIGINT AS industry_id, short_name AS industry_name, "
            "CASE WHEN ff48 = 49 THEN 'True' ELSE 'False' END AS is_reference_level "
            "FROM (SELECT DISTINCT ff48, short_name FROM ref.ff48 "
            "      UNION ALL SELECT 49, 'Unknown') ORDER BY ff48",
            out_dir / f"industry_id_map__{tag}.csv",
        ),
    }


def export(
    wh: Warehouse,
    out_dir: Path,
    layout: str = "proforma20q",
    on_file: Callable[[str, int], None] | None = None,
    *,
    tag: str = RELEASE_TAG,
    imputed: bool = True,
) -> dict[str, int]:
    """Write the layout's files into out_dir; returns rows per file name."""
    if layout not in LAYOUTS:
        raise UserError(f"Unknown layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    if layout == "compustat":
        out_dir.mkdir(parents=True, exist_ok=True)
        n = export_raw_panel(wh, out_dir / RAW_PANEL_FILE)
        if on_file:
            on_file(RAW_PANEL_FILE, n)
        return {RAW_PANEL_FILE: n}
    wh.require_panel("panel.truth_cells")
    if not tag or "/" in tag or tag.startswith("."):
        raise UserError(f"Not a dataset tag: {tag!r}")
    if imputed:
        from proforma.app.model_inputs.imputed import build_imputed, current_imputation

        if current_imputation(wh) is None:
            build_imputed(wh)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}

    def done(name: str, n: int) -> None:
        written[name] = n
        if on_file:
            on_file(name, n)

    name = f"regularization_stats__{tag}.parquet"
    done(name, export_regularization_stats(wh, out_dir / name))
    for name, n in export_id_maps(wh, out_dir, tag).items():
        done(name, n)
    for split in SPLITS:
        name = f"tuple_{split}__{tag}.parquet"
        done(name, export_tuples(wh, split, out_dir / name))
        name = f"tabular_{split}__{tag}.parquet"
        done(name, export_tabular(wh, split, out_dir / name, imputed=imputed))
    return written
