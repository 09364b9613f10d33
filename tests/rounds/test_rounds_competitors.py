"""The learned competitors enter a round through the registry's forecast-at-origins entry
point (`suite.forecast_at_origins`): fit on the train and val splits of the build the
round was opened on, forecasting the round's frozen origins. Nothing they read depends on
a quarter after the round's open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rounds_helpers import SEEN, grow, open_tiny_round
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.rounds import get_round, leaderboard, resolve, round_submissions
from proforma.app.rounds.entries import enter_competitors
from proforma.app.rounds.store import close_round
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, connect
from proforma.contracts.errors import UserError
from proforma.models.baselines import suite

T = 2010 * 4 + 3


def _last_quarter_seen(data: Any) -> int:
    """The latest quarter a tabular view's rows reveal: their origins, and origin + h for
    every target they hold."""
    rows, _, hs = np.nonzero(np.isfinite(data.Y))
    last = int(data.origin_q.max()) if data.n else -1
    return max(last, int((data.origin_q[rows] + hs + 1).max()) if len(rows) else last)


def test_competitors_enter_from_data_known_at_the_open(
    wh: Warehouse, tmp_path: Path, probe: suite.ModelSpec
) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds")
    entered = enter_competitors(wh, rnd["name"], ["probe"], "demo")
    assert [e["name"] for e in entered] == ["probe-demo"]
    (seen,) = SEEN
    # the fit sees train and val only, and no quarter after the round's origin
    assert set(seen["train"].split) == {"train"} and set(seen["val"].split) == {"val"}
    assert _last_quarter_seen(seen["train"]) <= T and _last_quarter_seen(seen["val"]) <= T
    # it forecasts exactly the round's frozen origins, whose futures are all unknown
    origins = seen["test"]
    assert set(origins.origin_q) == {T} and not np.isfinite(origins.Y).any()
    gvkeys = dict(wh.fetchall("SELECT firm_id, gvkey FROM panel.firms"))
    frozen = {
        g
        for (g,) in wh.fetchall(
            "SELECT gvkey FROM rounds.origins WHERE round_id = ?", [rnd["round_id"]]
        )
    }
    assert {gvkeys[int(f)] for f in origins.firm_id} == frozen
    cells = wh.scalar("SELECT count(*) FROM rounds.baselines WHERE round_id = ?", [rnd["round_id"]])
    rec = entered[0]
    assert rec["rows"] == cells * 20 and rec["family"] == "gaussian"
    # entered once: a second call keeps the entry as it is
    assert enter_competitors(wh, rnd["name"], ["probe"], "demo") == []
    # a real competitor (the elastic net, demo preset, two cells for speed) enters as points
    (enet,) = enter_competitors(
        wh, rnd["name"], ["enet"], "demo", items=("revtq",), horizons=(1, 2)
    )
    assert enet["name"] == "enet-demo" and enet["family"] == "point"
    assert 0 < enet["rows"] <= 2 * len(frozen)
    close_round(wh, rnd["name"])
    grow(wh, "2011Q2")
    # the warehouse moved on: no competitor enters from a later build
    with pytest.raises(UserError, match="moved on"):
        enter_competitors(wh, rnd["name"], ["probe"], "paper")
    resolve(wh)
    board = {m["name"]: m for m in leaderboard(wh, rnd["name"], ["probe-demo", "fade"])["models"]}
    assert board["probe-demo"]["n"] == board["fade"]["n"] > 0
    scored = {s["name"]: s["scored"] for s in round_submissions(wh, rnd["round_id"])}
    assert scored["probe-demo"] > 0 and scored["enet-demo"] > 0


def test_round_open_enters_competitors(
    wh: Warehouse, settings: Settings, probe: suite.ModelSpec
) -> None:
    grow(wh, "2010Q4")
    wh.close()
    bad = CliRunner().invoke(app, ["round", "open", "--days", "1", "--competitors", "nope"])
    assert isinstance(bad.exception, UserError) and "Unknown model" in str(bad.exception)
    with connect(settings) as w:
        assert w.scalar("SELECT count(*) FROM rounds.rounds") == 0
    res = CliRunner().invoke(
        app, ["round", "open", "--days", "1", "--competitors", "probe", "--preset", "demo"]
    )
    assert res.exit_code == 0, res.output
    assert "entered probe-demo" in res.output
    with connect(settings) as w:
        names = {s["name"] for s in round_submissions(w, get_round(w, "2010Q4")["round_id"])}
    assert names == {"seasonal_rw", "fade", "oracle", "probe-demo"}
