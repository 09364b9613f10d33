"""The learned competitors enter a round through the suite's forecast-at-origins entry
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
from proforma.app.flows.baselines import run_baselines
from proforma.app.rounds import get_round, leaderboard, resolve, round_submissions
from proforma.app.rounds.entries import enter_competitors, round_views
from proforma.app.rounds.store import close_round
from proforma.app.rounds.submit import RoundClosed
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, connect
from proforma.contracts.errors import UserError
from proforma.models.baselines import suite
from proforma.models.baselines.fanout import FanOut, Tracker

T = 2010 * 4 + 3


def _last_quarter_seen(data: Any) -> int:
    """The latest quarter a tabular view's rows reveal: their origins, and origin + h for
    every target they hold."""
    rows, _, hs = np.nonzero(np.isfinite(data.Y))
    last = int(data.origin_q.max()) if data.n else -1
    return max(last, int((data.origin_q[rows] + hs + 1).max()) if len(rows) else last)


def test_competitors_enter_from_data_known_at_the_open(
    wh: Warehouse, settings: Settings, tmp_path: Path, probe: suite.ModelSpec
) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds")
    entered = enter_competitors(wh, rnd["name"], ["probe"], "demo")
    assert [e["name"] for e in entered] == ["probe (demo)"]
    (seen,) = SEEN
    # the fit sees the splits of the build at the open, as the static fit does: train and
    # val to fit on, and the test split, whose last quarter is the round's origin
    assert set(seen["train"].split) == {"train"} and set(seen["val"].split) == {"val"}
    for split in ("train", "val", "test"):
        assert _last_quarter_seen(seen[split]) <= T, split
    assert seen["test"].origin_q.max() == T
    # its forecasts are those of the round's frozen origins, row by row
    gvkeys = dict(wh.fetchall("SELECT firm_id, gvkey FROM panel.firms"))
    frozen = {
        g
        for (g,) in wh.fetchall(
            "SELECT gvkey FROM rounds.origins WHERE round_id = ?", [rnd["round_id"]]
        )
    }
    stored = wh.fetchall(
        "SELECT f.firm_id, c.item_id, c.horizon, c.mu FROM rounds.forecasts c "
        "JOIN panel.firms f USING (gvkey) WHERE c.submission_id = ?",
        [entered[0]["submission_id"]],
    )
    assert {gvkeys[r[0]] for r in stored} == frozen
    Y = np.concatenate([seen["train"].Y, seen["val"].Y])
    with np.errstate(all="ignore"):
        mean = np.nan_to_num(np.nanmean(Y, axis=0))
    for firm_id, item_id, h, mu in stored[:50]:
        assert mu == pytest.approx(mean[item_id - 1, h - 1] + firm_id / 1000.0, abs=1e-5)
    cells = wh.scalar("SELECT count(*) FROM rounds.baselines WHERE round_id = ?", [rnd["round_id"]])
    rec = entered[0]
    assert rec["rows"] == cells * 20 and rec["family"] == "gaussian"
    # entered once: a second call keeps the entry as it is
    assert enter_competitors(wh, rnd["name"], ["probe"], "demo") == []
    # a real competitor (the elastic net, demo preset, two cells for speed) enters as points
    (enet,) = enter_competitors(
        wh, rnd["name"], ["enet"], "demo", items=("revtq",), horizons=(1, 2)
    )
    assert enet["name"] == "enet (demo)" and enet["family"] == "point"
    assert 0 < enet["rows"] <= 2 * len(frozen)
    # the static run of the same preset on the same build reuses the round's fits (and
    # the other way round): one fit cache run, no new fit
    runs = list((settings.models_dir / "baselines" / "enet").iterdir())
    fits = sorted(p.name for p in runs[0].rglob("*.joblib"))
    run_baselines(wh, ["enet"], "demo", score=False, items=("revtq",), horizons=(1, 2))
    assert list((settings.models_dir / "baselines" / "enet").iterdir()) == runs
    assert sorted(p.name for p in runs[0].rglob("*.joblib")) == fits
    close_round(wh, rnd["name"])
    with pytest.raises(RoundClosed):
        enter_competitors(wh, rnd["name"], ["rf"], "demo")
    grow(wh, "2011Q2")
    # the warehouse moved on: no competitor enters from a later build
    wh.execute("UPDATE rounds.rounds SET deadline = deadline + INTERVAL 1 DAY")  # reopened
    with pytest.raises(UserError, match="moved on"):
        enter_competitors(wh, rnd["name"], ["probe"], "paper")
    close_round(wh, rnd["name"])
    resolve(wh)
    board = {
        m["name"]: m
        for m in leaderboard(wh, rnd["name"], ["probe (demo)", "Fade / AR(1)"])["models"]
    }
    assert board["probe (demo)"]["n"] == board["Fade / AR(1)"]["n"] > 0
    scored = {s["name"]: s["scored"] for s in round_submissions(wh, rnd["round_id"])}
    assert scored["probe (demo)"] > 0 and scored["enet (demo)"] > 0


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
    assert "entered probe (demo)" in res.output
    with connect(settings) as w:
        names = {s["name"] for s in round_submissions(w, get_round(w, "2010Q4")["round_id"])}
    assert names == {"Seasonal random walk", "Fade / AR(1)", "oracle", "probe (demo)"}


def test_origins_outside_the_test_split_are_forecast_by_a_fit_on_them(
    wh: Warehouse, tmp_path: Path, probe: suite.ModelSpec
) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds")
    views = round_views(wh, rnd, "tabular")
    origins = views["origins"]
    empty = views["test"].rows(views["test"].origin_q < 0)
    request = suite.FitRequest(
        views["train"],
        views["val"],
        empty,
        {},
        tmp_path,
        FanOut("joblib", 1),
        Tracker(),
    )
    forecast = suite.forecast_at_origins(probe, request, origins)
    assert SEEN[-1]["test"] is origins and forecast.test is origins
    with pytest.raises(UserError, match="no origin"):
        suite.forecast_at_origins(probe, request, empty)
