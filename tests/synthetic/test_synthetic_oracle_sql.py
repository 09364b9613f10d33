"""`proforma oracle`: paths standardized with the ORIGIN's parameters, averaged, submitted."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import proforma.app.scoring  # noqa: F401
from proforma import app
from proforma.app.flows.build import BuildParams
from proforma.app.flows.oracle import oracle_forecasts, submit_oracle
from proforma.contracts.errors import UserError


def _panel(wh):
    wh.execute("CREATE SCHEMA IF NOT EXISTS panel")
    wh.write_arrow(
        "panel.firms",
        pa.table(
            {
                "firm_id": pa.array([1, 2], pa.int32()),
                "gvkey": ["001001", "001002"],
                "sic": pa.array([3000, 3100], pa.int32()),
                "ff48": pa.array([1, 2], pa.int16()),
            }
        ),
        mode="replace",
    )
    wh.write_arrow(
        "panel.origins",
        pa.table(
            {
                "firm_id": pa.array([1, 2, 2], pa.int32()),
                "origin_q": pa.array([8044, 8044, 8050], pa.int32()),
                "split": ["test", "test", "test"],
                "z": [100.0, 50.0, 55.0],
                "ff48": pa.array([1, 2, 2], pa.int16()),
            }
        ),
        mode="replace",
    )
    wh.write_arrow(
        "panel.item_k",
        pa.table({"item_id": pa.array([5, 9], pa.int16()), "k": [2.0, 0.5]}),
        mode="replace",
    )
    wh.write_arrow(
        "panel.origin_params",
        pa.table(
            {
                "item_id": pa.array([5, 9, 5, 9], pa.int16()),
                "q": pa.array([8044, 8044, 8050, 8050], pa.int32()),
                "mu": [0.1, -0.2, 0.3, 0.0],
                "sigma": [0.5, 2.0, 1.0, 1e-3],
            }
        ),
        mode="replace",
    )
    # the standardization macros every build defines (the oracle applies them)
    wh.run_step("build/110_standardize", BuildParams().variables(pinned=False))


def _paths(wh):
    # origin 0: firm 001001 at 8044; origin 1: 001002 at 8050; origin 2: unknown firm
    wh.write_arrow(
        "raw.oracle_origins",
        pa.table(
            {
                "origin_id": pa.array([0, 1, 2], pa.int32()),
                "gvkey": ["001001", "001002", "009999"],
                "origin_q": pa.array([8044, 8050, 8044], pa.int32()),
            }
        ),
    )
    rng = np.random.default_rng(0)
    rows: dict[str, list[Any]] = {
        "origin_id": [],
        "item_id": [],
        "horizon": [],
        "path": [],
        "v": [],
    }
    wide: dict[str, list[Any]] = {"origin_id": [], "horizon": [], "path": [], "aoq": [], "atq": []}
    for o in (0, 1, 2):
        for h in (0, 1, 2):
            for p in [0] if h == 0 else range(3):
                wide["origin_id"].append(o)
                wide["horizon"].append(h)
                wide["path"].append(p)
                for item, name in ((5, "aoq"), (9, "atq")):
                    v = (
                        10.0
                        if h == 0
                        else (5.0 if (o == 1 and item == 9) else float(rng.normal(10, 40)))
                    )
                    if o == 0 and item == 5 and h == 2 and p == 0:
                        v = 1e9  # far beyond the clip
                    wide[name].append(v)
                    rows["origin_id"] += [o]
                    rows["item_id"] += [item]
                    rows["horizon"] += [h]
                    rows["path"] += [p]
                    rows["v"] += [v]
    # a narrow stand-in for the 78-column table: the SQL unpivots whatever item columns exist
    wh.write_arrow(
        "raw.oracle_paths",
        pa.table(
            {
                "origin_id": pa.array(wide["origin_id"], pa.int32()),
                "horizon": pa.array(wide["horizon"], pa.int8()),
                "path": pa.array(wide["path"], pa.int16()),
                "aoq": pa.array(wide["aoq"], pa.float32()),
                "atq": pa.array(wide["atq"], pa.float32()),
            }
        ),
        mode="replace",
    )
    rows["v"] = [float(np.float32(v)) for v in rows["v"]]
    return rows


def _expected(rows):
    z = {0: (1, 8044, 100.0), 1: (2, 8050, 55.0)}
    k = {5: 2.0, 9: 0.5}
    par = {
        (5, 8044): (0.1, 0.5),
        (9, 8044): (-0.2, 2.0),
        (5, 8050): (0.3, 1.0),
        (9, 8050): (0.0, 1e-3),
    }
    xs: dict[tuple, list[float]] = {}
    for o, item, h, v in zip(
        rows["origin_id"], rows["item_id"], rows["horizon"], rows["v"], strict=True
    ):
        if o not in z or h == 0:
            continue
        firm, q, zz = z[o]
        mu, sigma = par[(item, q)]
        x = float(np.clip((np.arcsinh(k[item] * v / zz) - mu) / sigma, -6, 6))
        xs.setdefault((firm, q, item, h), []).append(x)
    return {key: (np.mean(x), max(np.std(x, ddof=1), 1e-4)) for key, x in xs.items()}


def test_standardize_with_origin_parameters(wh):
    _panel(wh)
    rows = _paths(wh)
    got = oracle_forecasts(wh).to_pylist()
    exp = _expected(rows)
    assert len(got) == len(exp) == 2 * 2 * 2
    for r in got:
        mu, sigma = exp[(r["firm_id"], r["origin_q"], r["item_id"], r["horizon"])]
        assert r["mu"] == pytest.approx(mu, abs=1e-12)
        assert r["sigma"] == pytest.approx(sigma, abs=1e-12)
        assert r["component"] == 0
    clipped = next(r for r in got if (r["firm_id"], r["item_id"], r["horizon"]) == (1, 5, 2))
    assert clipped["mu"] <= 6
    constant = [r for r in got if (r["firm_id"], r["item_id"]) == (2, 9)]
    assert all(r["sigma"] == 1e-4 for r in constant)  # identical paths: the floor


def test_submit_needs_matching_synthetic_ingest(wh, monkeypatch):
    _panel(wh)
    _paths(wh)
    with pytest.raises(UserError, match="only for synthetic"):
        submit_oracle(wh)
    params = {"seed": 1, "firms": 2}
    wh.execute("INSERT INTO raw.oracle_meta VALUES (?)", [json.dumps(params)])
    wh.execute(
        "INSERT INTO raw.ingests (source, parameters, started_at, finished_at) "
        "VALUES ('synthetic', ?, now()::TIMESTAMP, now()::TIMESTAMP)",
        [json.dumps({"seed": 2, "firms": 2})],
    )
    with pytest.raises(UserError, match="older ingest"):
        submit_oracle(wh)
    wh.execute(
        "INSERT INTO raw.ingests (source, parameters, started_at, finished_at) "
        "VALUES ('synthetic', ?, now()::TIMESTAMP, now()::TIMESTAMP)",
        [json.dumps(params)],
    )
    calls = []

    def fake_ingest(wh_, name, batches, **kw):
        calls.append((name, pa.Table.from_batches(list(batches)), kw))
        return 7

    monkeypatch.setattr(app.scoring, "ingest_forecasts", fake_ingest)
    sid, n = submit_oracle(wh, "oracle")
    assert (sid, n) == (7, 8)
    name, table, kw = calls[0]
    assert name == "oracle" and kw["family"] == "gaussian" and kw["source"] == "model"
    assert table.column_names == [
        "firm_id",
        "origin_q",
        "item_id",
        "horizon",
        "component",
        "mu",
        "sigma",
    ]
    assert kw["metadata"]["synthetic"] == params


def test_oracle_needs_the_build(wh):
    wh.execute("DROP TABLE IF EXISTS panel.origin_params")
    with pytest.raises(UserError, match="proforma build"):
        oracle_forecasts(wh)
