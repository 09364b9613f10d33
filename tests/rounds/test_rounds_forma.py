"""Forma enters a round (`round open --forma PRESET`): one pass over the round's origins with the future grid cut at
the round's twentieth quarter, kept for the round's cells, scored as they resolve."""

from __future__ import annotations

import math

from rounds_helpers import grow
from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.rounds import get_round, leaderboard, resolve, round_submissions
from proforma.app.rounds.store import close_round
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, connect


def test_forma_enters_a_round(wh: Warehouse, settings: Settings) -> None:
    grow(wh, "2010Q4")
    wh.close()
    res = CliRunner().invoke(
        app,
        [
            "train",
            "forma",
            "--preset",
            "small",
            "--seeds",
            "60",
            "--epochs",
            "1",
            "--origins-per-epoch",
            "8",
            "--threads",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    opened = CliRunner().invoke(app, ["round", "open", "--days", "1", "--forma", "small"])
    assert opened.exit_code == 0, opened.output
    assert "entered forma-small-gaussian" in opened.output
    with connect(settings) as w:
        rnd = get_round(w, "2010Q4")
        rec = next(s for s in round_submissions(w, rnd["round_id"]) if s["kind"] == "model")
        assert rec["name"] == "forma-small-gaussian"
        cells = w.scalar(
            "SELECT count(*) FROM rounds.baselines WHERE round_id = ?", [rnd["round_id"]]
        )
        assert 0 < rec["rows"] <= cells * 20
        horizons = w.scalar(
            "SELECT count(DISTINCT horizon) FROM rounds.forecasts WHERE submission_id = ?",
            [rec["submission_id"]],
        )
        assert horizons == 20
        close_round(w, rnd["name"])
        grow(w, "2011Q2")
        assert resolve(w)["scores_new"] > 0
        board = {m["name"]: m for m in leaderboard(w, rnd["name"])["models"]}
        forma = board["forma-small-gaussian"]
        assert forma["n"] > 0 and math.isfinite(forma["r2"]) and math.isfinite(forma["crps"])
