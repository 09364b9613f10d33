"""Table 1, panel C: the oracle's density is the spread of its simulated paths; where all
paths agree its sigma sits at the 1e-4 floor (a point mass) and a realized value off that
point costs ~(r / 1e-4)^2 / 2 of NLL (the demo's 195,713 mean). The panel shows no NLL
for it, says why with the count of such cells, and keeps its CRPS and coverage."""

from __future__ import annotations

from proforma.app.report import data, tables
from proforma.app.report.data import ORACLE_SIGMA_FLOOR, Run, Submission
from proforma.app.store.warehouse import Warehouse, connect


def _subs() -> dict[int, Submission]:
    return {
        1: Submission(1, "Fade / AR(1)", "reference", "gaussian", True, 1, {"model": "fade"}),
        2: Submission(2, "oracle", "model", "gaussian", True, 1, {"model": "oracle"}),
    }


def _run() -> Run:
    run = Run(7, "oracle", 1, 100, [1, 2], None)
    run.metrics[(1, "global", None)] = {"nll": 1.25, "crps": 0.4, "cov50": 0.5, "cov90": 0.9}
    run.metrics[(2, "global", None)] = {
        "nll": 195712.924,
        "crps": 0.19,
        "cov50": 0.66,
        "cov90": 0.94,
    }
    return run


def _forecasts(wh: Warehouse) -> None:
    wh.execute("CREATE SCHEMA IF NOT EXISTS eval")
    wh.execute(
        "CREATE TABLE eval.forecasts (submission_id INTEGER, firm_id INTEGER, origin_q INTEGER, "
        "item_id SMALLINT, horizon TINYINT, component SMALLINT, mu DOUBLE, sigma DOUBLE)"
    )
    # the oracle: 3 cells at the floor of 10; the fade model's own small sigma is its claim
    rows = [(2, 1, 100, i, 1, 0, 0.0, ORACLE_SIGMA_FLOOR if i < 3 else 0.5) for i in range(10)]
    rows += [(1, 1, 100, i, 1, 0, 0.0, 1e-5) for i in range(4)]
    wh.con.executemany("INSERT INTO eval.forecasts VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def test_point_masses_are_counted_for_the_oracle_only(settings) -> None:
    wh = connect(settings)
    try:
        _forecasts(wh)
        subs = data.point_masses(wh, _subs())
    finally:
        wh.close()
    assert (subs[2].point_mass_cells, subs[2].density_cells) == (3, 10)
    assert subs[1].point_mass_cells == 0  # a model's own tiny sigma is scored as it is


def test_panel_c_shows_no_nll_for_the_oracle_and_says_why() -> None:
    subs = _subs()
    subs[2] = Submission(2, "oracle", "model", "gaussian", True, 1, {"model": "oracle"}, 3, 10)
    part = tables._density_panel([_run()], subs, [1, 2])
    by_model = {row[0].text: [c.text for c in row[1:]] for row in part.rows}
    assert by_model["oracle"] == ["—", "0.190", "0.660", "0.940"]
    assert by_model["Fade / AR(1)"][0] == "1.250"
    assert not [d for d in part.data if d["model"] == "oracle" and d["metric"] == "nll"]
    assert any(d["model"] == "oracle" and d["metric"] == "crps" for d in part.data)
    note = next(n for n in part.notes if n.startswith("oracle: no NLL"))
    assert "3 of its 10 cells (30.0%)" in note and "1e-4 floor" in note
    # without point masses the oracle's NLL is shown like any model's
    shown = tables._density_panel([_run()], _subs(), [1, 2])
    assert {row[0].text: row[1].text for row in shown.rows}["oracle"] == "195712.924"
