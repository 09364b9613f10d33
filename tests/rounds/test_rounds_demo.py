"""The demo's round: opened at the panel's last quarter, closed, resolved from the next
vintage (the panel grown by four quarters in a warehouse of its own): served partly
resolved; a second run changes nothing."""

from __future__ import annotations

from typing import Any

from typer.testing import CliRunner

from proforma.app.cli import app
from proforma.app.cli.rounds import demo_round, next_vintage_path
from proforma.app.flows.build import run_build
from proforma.app.rounds import get_round, leaderboard
from proforma.app.sources import ingest
from proforma.app.sources.synthetic import SyntheticConfig, SyntheticSource
from proforma.app.store.settings import Settings, get_settings
from proforma.app.store.warehouse import Warehouse, connect


def test_demo_round(wh: Warehouse, settings: Settings, probe: Any) -> None:
    ingest(wh, SyntheticSource(SyntheticConfig.for_scale("demo", firms=30, oracle_origins=0)))
    run_build(wh)
    wh.close()
    calls: list[list[str]] = []

    def run(args: list[str], env: dict[str, str] | None = None) -> None:
        calls.append(args)
        get_settings.cache_clear()
        result = CliRunner().invoke(app, args, env=env)
        get_settings.cache_clear()
        assert result.exit_code == 0, result.output

    # the demo opens, enters and closes the round and builds the next vintage beside
    # Forma's forecasts, and resolves it at the end
    demo_round(run, 30, competitors=("probe",), resolve=False)
    assert next_vintage_path().is_file() and ["round", "resolve"] not in [c[:2] for c in calls]
    with connect(settings) as w:
        assert get_round(w, "demo")["state"] == "closed"
    prepared = len(calls)
    demo_round(run, 30, competitors=("probe",))
    assert [c[:2] for c in calls[prepared:]] == [["round", "resolve"]]  # nothing redone
    with connect(settings) as w:
        rnd = get_round(w, "demo")
        assert rnd["origin"] == "2024Q4" and rnd["state"] == "resolving"
        assert [n > 0 for n in rnd["resolved_by_horizon"]] == [True] * 4 + [False] * 16
        assert rnd["submissions"] == 3  # seasonal_rw, fade and the demo's competitor
        board = {m["name"]: m for m in leaderboard(w, "demo")["models"]}
        assert set(board) == {"Seasonal random walk", "Fade / AR(1)", "probe (demo)"}
        assert board["probe (demo)"]["n"] > 0
        raw_last = w.scalar("SELECT max(datadate) FROM raw.fundq")
    assert raw_last.year == 2024  # the main warehouse keeps its vintage
    done = len(calls)
    demo_round(run, 30, competitors=("probe",))
    assert len(calls) == done
    ran: Any = [c[:2] for c in calls]
    assert ran[0] == ["round", "open"] and ran[1] == ["round", "enter"]
    assert ran[2] == ["round", "close"] and ran[-1] == ["round", "resolve"]
