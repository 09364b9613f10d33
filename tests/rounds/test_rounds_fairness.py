"""A round is fair to its entrants (issue 47): one entry that fails to score is isolated,
recorded and retried while the others resolve; a partial entry is ranked on its own
cells and never shrinks the others' common sample; the public live and round boards
withhold small groups and coarsen uploads' numbers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rounds_helpers import grow, open_tiny_round

from proforma.app.read.disclosure import disclosed_live, disclosed_round, fallback_sigma
from proforma.app.rounds import leaderboard, live_leaderboard, resolve, submit_file
from proforma.app.rounds.resolve import resolution_health
from proforma.app.rounds.store import close_round
from proforma.app.scoring import cells as cells_module
from proforma.app.store.warehouse import Warehouse


def _cells(tmp_path: Path, rnd: dict) -> pa.Table:
    return pq.read_table(tmp_path / "rounds" / rnd["name"] / f"cells__{rnd['name']}.parquet")


def _submit(
    wh: Warehouse,
    rnd: dict,
    tmp_path: Path,
    name: str,
    rows: int | None = None,
    drop: int | None = None,
) -> dict:
    """A round file of `rnd`'s cells (the first `rows`, or all but row `drop`)."""
    cells = _cells(tmp_path, rnd)
    if rows is not None:
        cells = cells.slice(0, rows)
    if drop is not None:
        cells = cells.filter(pa.array([i != drop for i in range(cells.num_rows)]))
    n = cells.num_rows
    table = cells.append_column("prediction", pa.array([0.05] * n)).append_column(
        "sigma", pa.array([1.0] * n)
    )
    path = tmp_path / f"{name}.parquet"
    pq.write_table(table, path)
    return submit_file(wh, rnd["name"], path, name, now=rnd["opened_at"] + dt.timedelta(minutes=1))


def _resolved_then_reopened(wh: Warehouse, tmp_path: Path, *entries: str) -> tuple[dict, dict]:
    """A tiny round with `entries`, closed and resolved through 2011Q2, its board then, and
    the round opened again (one round per origin: a later file enters this one)."""
    rnd = open_tiny_round(wh, tmp_path / "rounds")
    for name in entries:
        _submit(wh, rnd, tmp_path, name)
    close_round(wh, rnd["name"])
    grow(wh, "2011Q2")
    resolve(wh)
    before = {m["name"]: m for m in leaderboard(wh, rnd["name"])["models"]}
    wh.execute(
        "UPDATE rounds.rounds SET deadline = ? WHERE round_id = ?",
        [dt.datetime(2100, 1, 1), rnd["round_id"]],
    )
    return rnd, before


def test_a_failing_entry_is_isolated_recorded_and_retried(
    wh: Warehouse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds")
    poison = _submit(wh, rnd, tmp_path, "poison")
    close_round(wh, rnd["name"])
    grow(wh, "2011Q2")
    real = cells_module.cell_terms

    def failing(wh_, sub, one, *args, **kwargs):
        if int(sub["submission_id"]) == poison["submission_id"]:
            wh_.execute("SELECT CAST(1e39 AS FLOAT)")  # what a sigma past FLOAT did
        return real(wh_, sub, one, *args, **kwargs)

    monkeypatch.setattr(cells_module, "cell_terms", failing)
    out = resolve(wh)
    assert out["cells_new"] > 0
    assert [f["name"] for f in out["failed"]] == ["poison"]
    assert "Conversion" in out["failed"][0]["error"]
    recorded = wh.fetchall("SELECT submission_id, error FROM rounds.entry_failures")
    assert [r[0] for r in recorded] == [poison["submission_id"]]
    health = resolution_health(wh)  # what /api/v1/health reports
    assert health["status"] == "failing"
    assert [e["name"] for e in health["failed_entries"]] == ["poison"]
    board = {m["name"]: m for m in leaderboard(wh, rnd["name"])["models"]}
    assert board["poison"]["n"] == 0 and not board["poison"]["common_sample"]
    # the oracle forecasts its own origin sample only: it too is ranked on its own cells
    assert not board["oracle"]["common_sample"] and board["oracle"]["coverage"] < 0.95
    others = [m for m in board.values() if m["name"] not in ("poison", "oracle")]
    assert others and all(m["n"] > 0 and m["common_sample"] for m in others), [
        (m["name"], m["n"], m["coverage"], m["common_sample"]) for m in others
    ]
    assert len({m["n"] for m in others}) == 1  # one common sample, the poison not in it

    # the cause gone, the next resolution scores the entry's cells it missed
    monkeypatch.setattr(cells_module, "cell_terms", real)
    again = resolve(wh)
    assert again["cells_new"] == 0 and again["failed"] == []
    assert again["scores_new"] == out["cells_new"]  # the poison's cells, scored late
    board = {m["name"]: m for m in leaderboard(wh, rnd["name"])["models"]}
    assert board["poison"]["common_sample"] and board["poison"]["n"] == others[0]["n"]
    assert resolution_health(wh)["status"] == "ok"


def test_a_partial_entry_never_shrinks_the_common_sample(wh: Warehouse, tmp_path: Path) -> None:
    rnd, before = _resolved_then_reopened(wh, tmp_path, "whole")
    partial = _submit(wh, {**rnd, "opened_at": dt.datetime.now()}, tmp_path, "partial", rows=50)
    close_round(wh, rnd["name"])
    resolve(wh)
    after = leaderboard(wh, rnd["name"])
    by = {m["name"]: m for m in after["models"]}
    assert not by["partial"]["common_sample"] and "own cells" in by["partial"]["note"]
    assert 0 < by["partial"]["n"] <= 50 and by["partial"]["coverage"] < 0.95
    assert after["models"][-1]["name"] == "partial"  # below the common board
    for name, m in before.items():
        assert by[name]["common_sample"] == m["common_sample"], name
        assert by[name]["n"] == m["n"], name  # the others keep their sample
        assert by[name]["mse"] == pytest.approx(m["mse"], rel=1e-12), name
    stored = wh.fetchall(
        "SELECT DISTINCT sample FROM rounds.metrics WHERE submission_id = ?",
        [partial["submission_id"]],
    )
    assert stored == [("own",)]


def test_an_upload_one_cell_short_moves_no_other_entrys_numbers(
    wh: Warehouse, tmp_path: Path
) -> None:
    """An upload that covers the round but one cell is on the common board, scored on its
    own cells; the baselines' exact numbers keep every cell (else the two boards, before
    and after it, would differ by that one cell's loss: its truth)."""
    rnd, before = _resolved_then_reopened(wh, tmp_path)
    first_h1 = _cells(tmp_path, rnd)["horizon"].to_pylist().index(1)  # a resolved cell
    _submit(wh, {**rnd, "opened_at": dt.datetime.now()}, tmp_path, "short", drop=first_h1)
    close_round(wh, rnd["name"])
    resolve(wh)
    by = {m["name"]: m for m in leaderboard(wh, rnd["name"])["models"]}
    assert by["short"]["common_sample"] and by["short"]["coverage"] >= 0.95
    for name, m in before.items():
        assert by[name]["n"] == m["n"], name
        assert by[name]["mse"] == pytest.approx(m["mse"], rel=1e-12), name
    common = [m["n"] for name, m in before.items() if m["common_sample"]]
    assert common and by["short"]["n"] == common[0] - 1


def test_public_round_boards_withhold_small_groups_and_coarsen_uploads(
    wh: Warehouse, tmp_path: Path
) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds")
    _submit(wh, rnd, tmp_path, "upload-a")
    close_round(wh, rnd["name"])
    grow(wh, "2011Q2")
    resolve(wh)
    exact = {m["name"]: m for m in live_leaderboard(wh)}
    live = {m["name"]: m for m in disclosed_live(wh, live_leaderboard(wh), min_cells=5)}
    # an upload's pooled numbers are coarsened; a baseline's stay exact
    assert live["upload-a"]["mse"] != exact["upload-a"]["mse"]
    # (entered without the service: no grant, the fallback's noise, within 6 sd)
    scale = fallback_sigma() * 144.0 / exact["upload-a"]["n"]
    assert abs(live["upload-a"]["mse"] - exact["upload-a"]["mse"]) <= 6 * scale
    assert live["Fade / AR(1)"]["mse"] == exact["Fade / AR(1)"]["mse"]
    # too few cells: every metric withheld, whoever entered
    tiny = disclosed_live(wh, live_leaderboard(wh), min_cells=10**9)
    assert all(m["mse"] is None and m["r2"] is None and m["dm_p"] is None for m in tiny)
    board = disclosed_round(wh, leaderboard(wh, rnd["name"]), min_cells=10**9)
    assert all(m["mse"] is None for m in board["models"])
    assert all(h["mse"] is None for m in board["models"] for h in m["by_horizon"])
