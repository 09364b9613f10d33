"""A tiny hand-made panel with exactly the contract's columns (docs/contracts.md)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow as pa

from proforma.app.store.warehouse import Warehouse
from proforma.contracts.rules import UNRECORDED_RULES
from tests.conftest import temp_settings

ITEMS = ["atq", "ltq", "mibtq", "seqq", "revtq", "cogsq", "gpq", "niq"]
TRAIN_Q = list(range(7996, 8008))  # 1999Q1..2001Q4
VAL_Q = list(range(8020, 8024))  # 2005
TEST_Q = list(range(8040, 8060))  # 2010Q1..2014Q4


def make_panel(wh: Warehouse, n_firms: int = 12, seed: int = 0, items=ITEMS, test_q=TEST_Q) -> None:
    """panel.firms, values, item_k, origin_params, origins, truth for a few firms."""
    rng = np.random.default_rng(seed)
    ids = dict(wh.fetchall("SELECT item, item_id FROM ref.items"))
    wh.execute("CREATE SCHEMA IF NOT EXISTS panel")
    firms = pa.table(
        {
            "firm_id": pa.array(range(1, n_firms + 1), pa.int32()),
            "gvkey": [f"{1000 + f:06d}" for f in range(1, n_firms + 1)],
            "sic": pa.array([3000 + f for f in range(n_firms)], pa.int32()),
            "ff48": pa.array([(f % 48) + 1 for f in range(n_firms)], pa.int16()),
        }
    )
    wh.write_arrow("panel.firms", firms, mode="replace")
    quarters = np.arange(7990, max(test_q) + 21)
    rows: dict[str, list[Any]] = {"firm_id": [], "q": [], "item_id": [], "v": []}
    for f in range(1, n_firms + 1):
        size = np.exp(rng.normal(5, 1))
        level = {i: size * rng.uniform(0.1, 1.0) for i in items}
        for q in quarters:
            for i in items:
                level[i] *= np.exp(rng.normal(0.01, 0.08))
                if rng.random() < 0.05 and i not in ("ltq", "seqq"):
                    continue  # not reported this quarter
                sign = -1 if (i == "niq" and rng.random() < 0.3) else 1
                rows["firm_id"].append(f)
                rows["q"].append(int(q))
                rows["item_id"].append(ids[i])
                rows["v"].append(sign * level[i])
    wh.write_arrow(
        "panel.values",
        pa.table(
            {
                "firm_id": pa.array(rows["firm_id"], pa.int32()),
                "q": pa.array(rows["q"], pa.int32()),
                "item_id": pa.array(rows["item_id"], pa.int16()),
                "v": pa.array(rows["v"], pa.float64()),
            }
        ),
        mode="replace",
    )
    wh.write_arrow(
        "panel.item_k",
        pa.table(
            {
                "item_id": pa.array(sorted(ids[i] for i in items), pa.int16()),
                "k": pa.array([1.0 + 0.1 * j for j in range(len(items))], pa.float64()),
            }
        ),
        mode="replace",
    )
    wh.execute(
        """
        CREATE OR REPLACE TABLE panel.origin_params AS
        SELECT CAST(k.item_id AS SMALLINT) AS item_id, CAST(q.q AS INTEGER) AS q,
               CAST(0.2 + 0.001 * (q.q - 8000) AS DOUBLE) AS mu,
               CAST(0.9 + 0.01 * k.item_id AS DOUBLE) AS sigma
        FROM panel.item_k k, (SELECT unnest(range(7990, 8100)) AS q) q
        """
    )
    # the standardization macros a build defines; the panel records a build made without
    # a rule set, so it scores under the rules of an unrecorded build
    wh.run_step(
        "build/110_standardize", {"rules": UNRECORDED_RULES.name, **UNRECORDED_RULES.variables()}
    )
    splits = (
        [(q, "train") for q in TRAIN_Q]
        + [(q, "val") for q in VAL_Q]
        + [(q, "test") for q in test_q]
    )
    wh.execute("CREATE OR REPLACE TEMP TABLE split_q (q INTEGER, split VARCHAR)")
    wh.con.executemany("INSERT INTO split_q VALUES (?, ?)", splits)
    wh.execute(
        """
        CREATE OR REPLACE TABLE panel.origins AS
        SELECT CAST(l.firm_id AS INTEGER) AS firm_id, CAST(l.q AS INTEGER) AS origin_q, s.split,
               abs(l.v) + abs(e.v) + 1e-3 AS z, f.ff48
        FROM panel.values l
        JOIN panel.values e ON e.firm_id = l.firm_id AND e.q = l.q
        JOIN split_q s ON s.q = l.q
        JOIN panel.firms f ON f.firm_id = l.firm_id
        WHERE l.item_id = (SELECT item_id FROM ref.items WHERE item = 'ltq')
          AND e.item_id = (SELECT item_id FROM ref.items WHERE item = 'seqq')
        """
    )
    wh.execute(
        """
        CREATE OR REPLACE TABLE panel.truth AS
        WITH std AS (
            SELECT o.firm_id, o.origin_q, o.split, v.item_id, v.q - o.origin_q AS rel,
                   greatest(-6.0, least(6.0, (asinh(k.k * v.v / o.z) - p.mu) / p.sigma)) AS x
            FROM panel.origins o
            JOIN panel.values v ON v.firm_id = o.firm_id AND v.q BETWEEN o.origin_q AND o.origin_q + 20
            JOIN panel.item_k k ON k.item_id = v.item_id
            JOIN panel.origin_params p ON p.item_id = v.item_id AND p.q = o.origin_q
        )
        SELECT a.firm_id, a.origin_q, CAST(a.item_id AS SMALLINT) AS item_id,
               CAST(a.rel AS TINYINT) AS horizon, a.split,
               a.x AS actual, b.x AS baseline, a.x - b.x AS change
        FROM std a JOIN std b
          ON b.firm_id = a.firm_id AND b.origin_q = a.origin_q AND b.item_id = a.item_id AND b.rel = 0
        WHERE a.rel BETWEEN 1 AND 20
          AND (a.split <> 'train' OR a.origin_q + a.rel <= 8007)
          AND (a.split <> 'val' OR a.origin_q + a.rel <= 8039)
        """
    )


def truth_cells(wh: Warehouse, split: str = "test") -> pa.Table:
    return wh.arrow(
        "SELECT firm_id, origin_q, item_id, horizon, actual, baseline, change FROM panel.truth "
        "WHERE split = ? ORDER BY firm_id, origin_q, item_id, horizon",
        [split],
    )


def forecasts_from(cells: pa.Table, mu, sigma=None, component: int = 0) -> pa.Table:
    n = cells.num_rows
    return pa.table(
        {
            "firm_id": cells["firm_id"].cast(pa.int32()),
            "origin_q": cells["origin_q"].cast(pa.int32()),
            "item_id": cells["item_id"].cast(pa.int16()),
            "horizon": cells["horizon"].cast(pa.int8()),
            "component": pa.array(np.full(n, component), pa.int16()),
            "mu": pa.array(np.asarray(mu, float)),
            "sigma": pa.array(None if sigma is None else np.asarray(sigma, float), pa.float64())
            if sigma is not None
            else pa.nulls(n, pa.float64()),
        }
    )


def module_warehouse(tmp_path_factory, name: str):
    """A migrated warehouse with the tiny panel, for one test module (built once)."""
    from proforma.app.flows.warehouse import prepare
    from proforma.app.store.warehouse import connect

    folder = tmp_path_factory.mktemp(name)
    settings = temp_settings(folder)
    wh = connect(settings)
    prepare(wh)
    make_panel(wh)
    return wh


def cell_scores(wh: Warehouse, footprint: str, submission_ids: list[int]) -> pa.Table:
    """Per-cell scores (sql/eval/050 over 054, 056, 057: stored rows, or an upload's cells met by
    position) of the submissions on a footprint's common sample (040, 055, 058), with the
    cell's keys and change y, for exact checks."""
    from proforma.app.scoring.cells import cell_score_rows, ensure_cell_scores, scoring_context
    from proforma.app.scoring.footprints.store import get_footprint
    from proforma.app.scoring.sample import common_sample, prepare_footprint_cells, prepare_run_subs

    ensure_cell_scores(wh, submission_ids, scoring_context(wh))
    fp = get_footprint(wh, footprint)
    parts = []
    for sid in submission_ids:
        scores = cell_score_rows(wh, sid, fp["split"])
        parts.append(
            scores.add_column(0, "submission_id", pa.array([sid] * scores.num_rows, pa.int32()))
        )
    rows = pa.concat_tables(parts)
    prepare_footprint_cells(wh, fp)
    prepare_run_subs(wh, submission_ids)
    common_sample(wh, None)
    with wh.registered("fixture_cell_scores", rows) as view:
        return wh.arrow(
            "SELECT s.submission_id, c.origin_q, c.item_id, c.horizon, c.change AS y, s.* "
            f"EXCLUDE (submission_id, cell) FROM {view} s JOIN common_cells c USING (cell) "
            "ORDER BY s.submission_id, c.origin_q, c.item_id, c.horizon, y"
        )


def good_columns(n: int = 40) -> dict[str, list]:
    """n valid submission rows as columns of a parquet file (on make_panel's panel): firms
    001001.., items revtq/niq, origins 2010Q1.., horizons 1..20."""
    return {
        "firm": [f"{1001 + i % 5:06d}" for i in range(n)],
        "target": ["revtq" if i % 2 else "niq" for i in range(n)],
        "origin": [dt.date(2010, 3, 31) + dt.timedelta(days=91 * (i // 20)) for i in range(n)],
        "horizon": [i % 20 + 1 for i in range(n)],
        "prediction": [0.1 * (i % 7) for i in range(n)],
    }


def upload_file(
    wh: Warehouse,
    path: Any,
    seed: int,
    *,
    component: bool = False,
    sigma: bool = False,
    drop: int | None = None,
) -> Any:
    """A submission file of every scoreable test cell (actual + noise; with a component
    column, a sigma, or without row `drop`), written to `path`."""
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    cells = wh.arrow(
        "SELECT f.gvkey AS firm, i.item AS target, qend(t.origin_q) AS origin, "
        "CAST(t.horizon AS BIGINT) AS horizon, t.actual FROM panel.truth t "
        "JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        "WHERE t.split = 'test' AND isfinite(t.actual) "
        "ORDER BY t.firm_id, t.origin_q, t.item_id, t.horizon"
    )
    cols = {c: cells[c] for c in ("firm", "target", "origin", "horizon")}
    cols["prediction"] = pa.array(cells["actual"].to_numpy() + rng.normal(0, 0.4, cells.num_rows))
    if component:
        cols["component"] = pa.array(np.zeros(cells.num_rows, np.int64))
    if sigma:
        cols["sigma"] = pa.array(np.exp(rng.normal(-1, 0.3, cells.num_rows)))
    table = pa.table(cols)
    if drop is not None:
        table = table.filter(pa.array([i != drop for i in range(table.num_rows)]))
    pq.write_table(table, path, row_group_size=1000)
    return path
