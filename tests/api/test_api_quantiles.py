"""A quantile submission through the REST API: validated, scored on all three tracks,
on the leaderboards (API and page) with a dash for its NLL; a bad grid is refused."""

from __future__ import annotations

import io
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from service_helpers import Api

LEVELS = [0.1, 0.5, 0.9]


def quantile_bytes(api: Api, *, decreasing: bool = False) -> bytes:
    """Long form: one row per (cell, level) of every test cell, zstd to stay under the
    tests' 256 KiB upload limit."""
    cells = api.wh.arrow(
        "SELECT f.gvkey AS firm, i.item AS target, qlabel(t.origin_q) AS origin, "
        "CAST(t.horizon AS INTEGER) AS horizon, t.actual FROM panel.truth t "
        "JOIN panel.firms f USING (firm_id) JOIN ref.items i USING (item_id) "
        "WHERE t.split = 'test' ORDER BY 1, 2, 3, 4"
    )
    n = cells.num_rows
    rng = np.random.default_rng(0)
    centre = np.round(cells["actual"].to_numpy().astype(float) + rng.normal(0, 0.3, n), 2)
    values = centre[:, None] + np.array([-0.5, 0.0, 0.5])
    if decreasing:
        values[5] = values[5][::-1]
    rep = pa.array(np.repeat(np.arange(n), len(LEVELS)))
    table = pa.table(
        {
            "firm": cells["firm"].take(rep),
            "target": cells["target"].take(rep),
            "origin": cells["origin"].take(rep),
            "horizon": cells["horizon"].take(rep),
            "quantile_level": pa.array(np.tile(LEVELS, n)),
            "prediction": pa.array(values.reshape(-1)),
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def test_quantile_upload_is_scored_on_every_track_with_a_dash_for_nll(api: Api) -> None:
    c = api.client
    job = api.wait(api.upload(quantile_bytes(api), name="grid-model").json()["job_id"])
    assert job["status"] == "done", job
    sid = job["submission_id"]
    detail = c.get(f"/api/v1/submissions/{sid}").json()
    assert detail["submission"]["family"] == "quantile"
    assert detail["submission"]["n_components"] == len(LEVELS)

    rows = {
        t: next(
            r
            for r in c.get(f"/api/v1/leaderboards/full?track={t}").json()["rows"]
            if r["model"] == "grid-model"
        )
        for t in ("squared", "absolute", "density")
    }
    assert rows["squared"]["r2"] is not None and rows["absolute"]["mae"] > 0
    assert rows["density"]["crps"] > 0 and rows["density"]["cov80"] is not None
    assert rows["density"]["nll"] is None and rows["density"]["cov50"] is None

    page = c.get("/?footprint=full&track=density").text
    row = re.search(rf'<tr data-submission="{sid}">(.*?)</tr>', page, re.DOTALL)
    head = re.search(r"<thead>(.*?)</thead>", page, re.DOTALL)
    assert row is not None and head is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.DOTALL)
    labels = [h.strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", head.group(1), re.DOTALL)]
    # (each metric's header carries its direction, issue 49)
    assert cells[labels.index("NLL ↓")].strip() == "–"
    assert cells[labels.index("CRPS ↓")].strip() not in ("", "–")
    assert "quantile levels" in c.get(f"/submissions/{sid}").text


def test_decreasing_quantiles_are_refused(api: Api) -> None:
    job = api.wait(
        api.upload(quantile_bytes(api, decreasing=True), name="bad-grid").json()["job_id"]
    )
    assert job["status"] == "failed" and job["report"]["valid"] is False
    problem = job["report"]["problems"][0]
    assert problem["problem"].startswith("quantile values decrease") and problem["count"] == 1
    assert problem["examples"][0].startswith("firm=")
    assert api.wh.scalar("SELECT count(*) FROM eval.submissions WHERE name = 'bad-grid'") == 0
