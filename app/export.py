"""`proforma export --layout proforma20q DIR`: the published benchmark's file layout.

Files (parquet, written by DuckDB COPY):
- tabular_{split}.parquet: `firm_id` (zero-padded gvkey string), `quarter` (origin
  quarter-end TIMESTAMP), the 985 features `{item}_level_0..3`, `{item}_yoy_0..7`,
  `scale_level_0`, `indff48_0..47` (FF48 industries 1..48; Unknown omitted) and the
  targets `{item}_t1..t20` (FLOAT, NULL when missing or purged).
- tuple_{split}.parquet: the raw tuple view the split may see: `firm_id`, `quarter`,
  `item` (name; `scale` is the deflator), `value` (DOUBLE, as reported) for the split's
  firms over quarters [first origin quarter - 11, the split's last quarter] (later
  targets are absent: purged).
- regularization_stats.parquet: `quarter`, `feature`, `mu`, `sigma`, `k` (the origin
  parameters; `proforma build --reg-stats FILE` pins them).
- id_map_firms.parquet (`firm_id` int, `gvkey`), id_map_items.parquet (`item_id`, `item`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.errors import UserError
from app.views import SPLITS, tabular_reader
from app.warehouse import Warehouse

LAYOUTS = ("proforma20q",)


def _copy(wh: Warehouse, select: str, path: Path, params: list | None = None) -> int:
    tmp = path.with_suffix(".parquet.part")
    target = str(tmp).replace("'", "''")
    wh.execute(f"COPY ({select}) TO '{target}' (FORMAT parquet, COMPRESSION zstd)", params)
    tmp.replace(path)
    return int(wh.scalar("SELECT count(*) FROM read_parquet(?)", [str(path)]))


def export_regularization_stats(wh: Warehouse, path: Path) -> int:
    return _copy(
        wh,
        "SELECT qend(p.q)::TIMESTAMP AS quarter, i.item AS feature, p.mu, p.sigma, k.k "
        "FROM panel.origin_params AS p JOIN panel.item_k AS k USING (item_id) "
        "JOIN ref.items AS i USING (item_id) ORDER BY p.q, p.item_id",
        path,
    )


def export_tabular(wh: Warehouse, split: str, path: Path) -> int:
    reader_wh = wh.cursor()
    try:
        reader = tabular_reader(reader_wh, split, batch_size=8192)
        names = reader.schema.names
        select = []
        for name in names:
            if name in ("firm_id", "origin_q", "split"):
                continue
            if name.startswith("indff48_"):
                k = int(name.rsplit("_", 1)[1])
                select.append(f't."{name}" AS "indff48_{k - 1}"')
            else:
                select.append(f't."{name}"')
        view = f"__export_tabular_{split}"
        wh.con.register(view, reader)
        try:
            return _copy(
                wh,
                "SELECT f.gvkey AS firm_id, qend(t.origin_q)::TIMESTAMP AS quarter, "
                + ", ".join(select)
                + f" FROM {view} AS t JOIN panel.firms AS f USING (firm_id)",
                path,
            )
        finally:
            wh.con.unregister(view)
    finally:
        reader_wh.close()


def export_tuples(wh: Warehouse, split: str, path: Path) -> int:
    return _copy(
        wh,
        """WITH span AS (
               SELECT o.firm_id, min(o.origin_q) - 11 AS lo, any_value(s.last_q) AS hi
               FROM panel.origins AS o JOIN panel.splits AS s USING (split)
               WHERE o.split = ? GROUP BY o.firm_id
           )
           SELECT f.gvkey AS firm_id, qend(v.q)::TIMESTAMP AS quarter, i.item, v.v AS value
           FROM panel.values AS v
           JOIN span AS s ON s.firm_id = v.firm_id AND v.q BETWEEN s.lo AND s.hi
           JOIN panel.firms AS f ON f.firm_id = v.firm_id
           JOIN ref.items AS i ON i.item_id = v.item_id
           ORDER BY v.q, f.gvkey, v.item_id""",
        path,
        [split],
    )


def export(
    wh: Warehouse,
    out_dir: Path,
    layout: str = "proforma20q",
    on_file: Callable[[str, int], None] | None = None,
) -> dict[str, int]:
    """Write the layout's files into out_dir; returns rows per file name."""
    if layout not in LAYOUTS:
        raise UserError(f"Unknown layout {layout!r}: use one of {', '.join(LAYOUTS)}")
    if not wh.table_exists("panel.truth_cells"):
        raise UserError("The panel is not built: run `proforma build` first.")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, int] = {}

    def done(name: str, n: int) -> None:
        written[name] = n
        if on_file:
            on_file(name, n)

    done("regularization_stats.parquet",
         export_regularization_stats(wh, out_dir / "regularization_stats.parquet"))
    done("id_map_firms.parquet", _copy(
        wh, "SELECT firm_id, gvkey FROM panel.firms ORDER BY firm_id", out_dir / "id_map_firms.parquet"))
    done("id_map_items.parquet", _copy(
        wh, "SELECT item_id, item FROM ref.items ORDER BY item_id", out_dir / "id_map_items.parquet"))
    for split in SPLITS:
        done(f"tabular_{split}.parquet", export_tabular(wh, split, out_dir / f"tabular_{split}.parquet"))
        done(f"tuple_{split}.parquet", export_tuples(wh, split, out_dir / f"tuple_{split}.parquet"))
    return written
