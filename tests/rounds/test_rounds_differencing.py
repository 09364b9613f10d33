"""The differencing probe on a resolved round (issue 47, item 2): a user enters pairs of
round files that differ in one target cell per horizon (+60 against -60, a tiny sigma
there); once the round resolves, every public number of each pair (the round board's
MSE, MAE and CRPS for the round and per horizon, the live board's pooled ones, the
snapshot's round_metrics) is a linear equation in the targets' future truths. The best
weighted combination of all of them (tests/differencing_attack.py) must miss the truth
by at least the stated tolerance; on the warehouse's exact numbers it recovers it."""

from __future__ import annotations

import io
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from differencing_attack import Reading, estimate, rms
from fastapi.testclient import TestClient
from rounds_helpers import grow

from proforma.app.api.auth import add_user
from proforma.app.read import noise_budget
from proforma.app.rounds import resolve
from proforma.app.rounds.store import close_round
from proforma.app.server.main import create_app
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import connect
from proforma.contracts.metrics import METRICS

LINEAR = ("mse", "mae", "crps")
SENSITIVITY = {m: float(METRICS[m].sensitivity or 0.0) for m in LINEAR}
RESOLVED = (1, 2)  # the horizons 2011Q2 resolves for a round at 2010Q4


def _file(cells: pa.Table, rows: list[int], sign: float) -> bytes:
    n = cells.num_rows
    pred, sigma = np.zeros(n), np.ones(n)
    pred[rows], sigma[rows] = 60.0 * sign, 1e-3
    table = cells.append_column("prediction", pa.array(pred)).append_column(
        "sigma", pa.array(sigma)
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _readings(model: dict, live: dict) -> dict[tuple, Reading]:
    out = {}
    rows = [(("round", None), model)] + [(("round", r["horizon"]), r) for r in model["by_horizon"]]
    rows.append((("live", None), live))
    for group, r in rows:
        for m in LINEAR:
            if r.get(m) is not None:
                out[(group, m)] = Reading(group, m, int(r["n"]), float(r[m]))
    return out


def test_every_public_round_channel_combined_recovers_no_truth(served: Settings) -> None:
    cells = pq.read_table(served.warehouse.parent / "rounds" / "2010Q4" / "cells__2010Q4.parquet")
    horizons = cells["horizon"].to_pylist()
    rows = [horizons.index(h) for h in RESOLVED]  # one target per resolving horizon
    names = []
    with TestClient(create_app(served)) as client:
        cur = client.app.state.wh.cursor()  # type: ignore[attr-defined]
        try:
            _, token = add_user(cur, "mallory", daily_limit=4)
        finally:
            cur.close()
        for k in range(2):
            for sign, tag in ((1.0, "plus"), (-1.0, "minus")):
                name = f"p{k}-{tag}"
                r = client.post(
                    "/api/v1/rounds/2010Q4/submissions",
                    headers={"Authorization": f"Bearer {token}"},
                    data={"name": name},
                    files={"file": ("f.parquet", _file(cells, rows, sign), "application/x")},
                )
                assert r.status_code == 201, r.text
                names.append(name)
    wh = connect(served)
    close_round(wh, "2010Q4")
    grow(wh, "2011Q2")
    assert resolve(wh)["cells_new"] > 0
    ids = dict(wh.fetchall("SELECT name, submission_id FROM rounds.submissions"))
    sigma = dict(
        wh.fetchall("SELECT submission_id, sigma FROM service.upload_noise WHERE door = 'round'")
    )
    truth = []
    for row in rows:
        firm, item, h = (cells[c][row].as_py() for c in ("firm", "target", "horizon"))
        truth.append(
            wh.scalar(
                "SELECT t.actual FROM rounds.truth t JOIN ref.items i USING (item_id) "
                "WHERE t.gvkey = ? AND i.item = ? AND t.horizon = ?",
                [firm, item, h],
            )
        )
    exact: dict[str, dict[str, Any]] = {name: {"by_horizon": []} for name in names}
    for name, sid in ids.items():
        if name not in exact:
            continue
        for h, n, mse, mae, crps in wh.fetchall(
            "SELECT horizon, n, mse, mae, crps FROM rounds.metrics WHERE submission_id = ?", [sid]
        ):
            got = {"horizon": h, "n": n, "mse": mse, "mae": mae, "crps": crps}
            if h is None:
                exact[name].update(got)
            else:
                exact[name]["by_horizon"].append(got)
    wh.close()
    pairs = [(names[i], names[i + 1]) for i in range(0, len(names), 2)]
    sigmas = [(sigma[ids[a]], sigma[ids[b]]) for a, b in pairs]
    targets_in: dict[tuple, list[int]] = {("round", None): [0, 1], ("live", None): [0, 1]}
    targets_in |= {("round", h): [i] for i, h in enumerate(RESOLVED)}

    def attack(boards: dict[str, dict], live: dict[str, dict]) -> float:
        readings = [
            (_readings(boards[a], live[a]), _readings(boards[b], live[b])) for a, b in pairs
        ]
        return rms(estimate(readings, sigmas, targets_in, 2, SENSITIVITY), truth)

    assert attack(exact, {k: {**v} for k, v in exact.items()}) < 1e-6
    with TestClient(create_app(served)) as client:
        deadline = time.monotonic() + 60
        while (
            not client.post(
                "/api/v1/query", json={"sql": "SELECT * FROM round_metrics WHERE model = 'p0-plus'"}
            )
            .json()
            .get("rows")
        ):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        board = {m["name"]: m for m in client.get("/api/v1/rounds/2010Q4").json()["models"]}
        live = {m["name"]: m for m in client.get("/api/v1/rounds/live").json()["models"]}
        body = client.post(
            "/api/v1/query",
            json={"sql": "SELECT model, horizon, mse FROM round_metrics WHERE model LIKE 'p%'"},
        ).json()
    # the snapshot publishes the board's numbers
    for model, h, mse in body["rows"]:
        row = (
            board[model]
            if h is None
            else next(r for r in board[model]["by_horizon"] if r["horizon"] == h)
        )
        assert row["mse"] == mse
    assert all(live[n]["dm_stat"] is None for n in names)
    found = attack(board, live)
    print(f"round differencing probe: RMS error {found:.3f} over 2 future cells")
    assert np.isfinite(found) and found >= noise_budget.TOLERANCE
