"""Opening a round freezes its origins, parameters, deadline and inputs; submissions are
accepted until the deadline and refused, with nothing written, when late, duplicate,
changed, for another round or for cells the round does not have."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rounds_helpers import grow, open_tiny_round

from proforma.app.rounds import get_round, open_round, resolve, submit_file
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.errors import UserError
from proforma.contracts.provenance import file_sha256, utcnow

T = 2010 * 4 + 3


def _frozen(wh: Warehouse, rid: int) -> dict[str, pa.Table]:
    return {
        t: wh.arrow(f"SELECT * FROM rounds.{t} WHERE round_id = ? ORDER BY ALL", [rid])
        for t in ("origins", "params", "baselines")
    }


def _written(wh: Warehouse) -> tuple:
    return wh.one(
        "SELECT (SELECT count(*) FROM rounds.submissions), (SELECT count(*) FROM rounds.forecasts)"
    )


def test_open_freezes_and_submissions_refuse_cleanly(wh: Warehouse, tmp_path: Path) -> None:
    opened = utcnow()
    rnd = open_tiny_round(wh, tmp_path / "rounds", now=opened)
    rid = rnd["round_id"]
    assert rnd["origin_q"] == T and rnd["state"] == "open" and rnd["n_origins"] > 5
    # parameters: the panel's own at the origin quarter (the panel ends there)
    mismatch = wh.scalar(
        "SELECT count(*) FROM rounds.params r JOIN panel.origin_params p "
        "ON p.item_id = r.item_id AND p.q = ? JOIN panel.item_k k ON k.item_id = r.item_id "
        "WHERE r.round_id = ? AND (r.mu <> p.mu OR r.sigma <> p.sigma OR r.k <> k.k)",
        [T, rid],
    )
    assert mismatch == 0
    assert rnd["n_cells"] == 20 * wh.scalar(
        "SELECT count(*) FROM rounds.baselines WHERE round_id = ?", [rid]
    )
    inputs = json.loads(rnd["inputs"])
    folder = Path(inputs["folder"])
    for name, rec in inputs["files"].items():
        assert file_sha256(folder / name) == rec["sha256"]
    cells = pq.read_table(folder / "cells__2010Q4.parquet")
    assert cells.num_rows == rnd["n_cells"]
    tuples = pq.read_table(folder / "tuples__2010Q4.parquet")
    quarters = set(tuples.column("quarter").to_pylist())
    assert max(quarters) == T - (1969 * 4 + 3) and min(quarters) >= T - 11 - (1969 * 4 + 3)
    tab = pq.read_table(folder / "tabular__2010Q4.parquet")
    assert tab.num_rows == rnd["n_origins"] and "revtq_level_0" in tab.column_names
    before = _frozen(wh, rid)

    # a second round at the same quarter, a deadline in the past
    with pytest.raises(UserError, match="already freezes origin 2010Q4"):
        open_round(wh, tmp_path / "rounds", name="again", days=1)
    with pytest.raises(UserError, match="has passed"):
        open_round(wh, tmp_path / "other", name="late", deadline=opened - dt.timedelta(hours=1))
    assert wh.scalar("SELECT count(*) FROM rounds.rounds") == 1

    # a valid submission
    good = cells.append_column("prediction", pa.array([0.1] * cells.num_rows)).append_column(
        "sigma", pa.array([1.0] * cells.num_rows)
    )
    pq.write_table(good, tmp_path / "good.parquet")
    now = opened + dt.timedelta(minutes=5)
    rec = submit_file(wh, "2010Q4", tmp_path / "good.parquet", "mine", now=now)
    assert rec["rows"] == cells.num_rows and rec["family"] == "gaussian"
    written = _written(wh)

    changed = good.set_column(
        good.schema.get_field_index("prediction"), "prediction", pa.array([0.2] * good.num_rows)
    )
    pq.write_table(changed, tmp_path / "changed.parquet")
    wrong = good.set_column(
        good.schema.get_field_index("origin"), "origin", pa.array(["2010Q3"] * good.num_rows)
    )
    pq.write_table(wrong, tmp_path / "wrong.parquet")
    foreign = good.set_column(0, "firm", pa.array(["999999"] * good.num_rows))
    pq.write_table(foreign, tmp_path / "foreign.parquet")
    # a firm of the panel that is not among the round's cells
    outsider = wh.scalar(
        "SELECT min(gvkey) FROM panel.firms WHERE gvkey NOT IN "
        "(SELECT gvkey FROM rounds.baselines WHERE round_id = ?)",
        [rid],
    )
    pq.write_table(
        good.set_column(0, "firm", pa.array([outsider] * good.num_rows)),
        tmp_path / "outsider.parquet",
    )
    missing = good.drop(["horizon"])
    pq.write_table(missing, tmp_path / "missing.parquet")
    text = good.set_column(
        good.schema.get_field_index("prediction"), "prediction", pa.array(["x"] * good.num_rows)
    )
    pq.write_table(text, tmp_path / "text.parquet")
    dup = pa.concat_tables([good.slice(0, 3), good.slice(0, 3)])
    pq.write_table(dup, tmp_path / "dup.parquet")
    cases = [
        ("good.parquet", "mine", now, "Duplicate"),
        ("changed.parquet", "mine", now, "Changed"),
        ("wrong.parquet", "other", now, "Wrong round"),
        ("foreign.parquet", "other", now, "unknown firm"),
        ("outsider.parquet", "other", now, "not a cell of round"),
        ("missing.parquet", "other", now, "missing column"),
        ("dup.parquet", "other", now, "duplicate"),
        ("text.parquet", "other", now, "wrong type: column 'prediction'"),
        ("changed.parquet", "late", rnd["deadline"] + dt.timedelta(seconds=1), "closed"),
        ("changed.parquet", "late", rnd["deadline"], "closed"),
    ]
    for file, name, when, message in cases:
        with pytest.raises(UserError, match=message):
            submit_file(wh, "2010Q4", tmp_path / file, name, now=when)
        assert _written(wh) == written, file
    with pytest.raises(UserError, match="No round"):
        submit_file(wh, "2001Q1", tmp_path / "good.parquet", "x", now=now)

    # nothing resolves before the deadline, even when the quarters are there
    grow(wh, "2011Q2")
    out = resolve(wh, now=now)
    assert out["cells_new"] == 0 and out["waiting"] == ["2010Q4"]
    # the frozen parts never change with later data
    after = _frozen(wh, rid)
    for t in before:
        assert after[t].equals(before[t]), t
    for name, rec in inputs["files"].items():
        assert file_sha256(folder / name) == rec["sha256"]
    assert get_round(wh, "2010Q4", now)["state"] == "open"
    # entries entered at the open
    names = {r[0] for r in wh.fetchall("SELECT name FROM rounds.submissions")}
    assert {"Seasonal random walk", "Fade / AR(1)", "oracle", "mine"} <= names
