"""Student-t, mixture and quantile submissions to a round: accepted like the static
scorer's files, refused with one line when malformed, and scored, once the round is fully
resolved, exactly as the static scorer scores the same cells."""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rounds_helpers import grow, open_tiny_round, static_by_board

from proforma.app import scoring
from proforma.app.rounds import leaderboard, resolve, submit_file
from proforma.app.rounds.store import close_round
from proforma.app.store.migrations import MIGRATIONS_DIR, migrate
from proforma.app.store.settings import Settings
from proforma.app.store.warehouse import Warehouse, connect
from proforma.contracts.errors import UserError, ValidationError
from proforma.contracts.forecasts import FORECAST_SCHEMA, QUANTILE_SCHEMA

T = 2010 * 4 + 3
#: an asymmetric grid, so that its mean and its median differ (the MSE and MAE tracks)
LEVELS = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)
SKEW = {0.05: -2.2, 0.1: -1.5, 0.25: -0.6, 0.5: 0.0, 0.75: 0.8, 0.9: 1.7, 0.95: 2.6}


def _oracle(wh: Warehouse, round_id: int) -> dict[str, np.ndarray]:
    rows = wh.arrow(
        """SELECT f.gvkey, i.item AS target, f.horizon, f.mu, f.sigma FROM rounds.forecasts f
           JOIN rounds.submissions s USING (submission_id) JOIN ref.items i USING (item_id)
           WHERE s.round_id = ? AND s.name = 'oracle' ORDER BY ALL""",
        [round_id],
    )
    return {c: rows.column(c).to_numpy(zero_copy_only=False) for c in rows.column_names}


def _files(wh: Warehouse, round_id: int, folder: Path) -> dict[str, tuple[Path, dict]]:
    """A Student-t file, a two-component Gaussian mixture and a quantile forecast, all made
    from the oracle's entry."""
    o = _oracle(wh, round_id)
    n = len(o["mu"])
    keys = {
        "firm": o["gvkey"],
        "target": o["target"],
        "origin": ["2010Q4"] * n,
        "horizon": o["horizon"],
    }
    out: dict[str, tuple[Path, dict]] = {}
    t = pa.table({**keys, "prediction": o["mu"], "sigma": o["sigma"] * 0.8})
    pq.write_table(t, folder / "t.parquet")
    out["t5"] = (folder / "t.parquet", {"family": "student_t", "df": 5.0})
    mix = pa.concat_tables(
        [
            pa.table(
                {
                    **keys,
                    "prediction": o["mu"] - 0.1,
                    "sigma": o["sigma"],
                    "component": np.zeros(n, np.int16),
                }
            ),
            pa.table(
                {
                    **keys,
                    "prediction": o["mu"] + 0.2,
                    "sigma": o["sigma"] * 0.6,
                    "component": np.ones(n, np.int16),
                }
            ),
        ]
    )
    pq.write_table(mix, folder / "mix.parquet")
    out["mix"] = (folder / "mix.parquet", {})
    grid = pa.concat_tables(
        [
            pa.table(
                {
                    **keys,
                    "prediction": o["mu"] + SKEW[tau] * o["sigma"],
                    "quantile_level": np.full(n, tau),
                }
            )
            for tau in LEVELS
        ]
    )
    pq.write_table(grid, folder / "q.parquet")
    out["q"] = (folder / "q.parquet", {})
    return out


def _static(
    wh: Warehouse, sid: int, name: str, family: str, df: float | None, levels: list[float] | None
) -> int:
    """The round's stored forecasts of one submission, ingested by the static scorer."""
    comp = wh.scalar("SELECT n_components FROM rounds.submissions WHERE submission_id = ?", [sid])
    source = (
        "rounds.forecast_components" if family == "quantile" or comp > 1 else "rounds.forecasts"
    )
    component = "c.component" if source.endswith("components") else "0"
    table = wh.arrow(
        f"SELECT f.firm_id, ?::INTEGER AS origin_q, c.item_id, c.horizon, "
        f"{component}::SMALLINT AS component, c.mu, c.sigma FROM {source} c "
        "JOIN panel.firms f USING (gvkey) WHERE c.submission_id = ? ORDER BY ALL",
        [T, sid],
    )
    if family == "quantile":
        assert levels is not None
        lv = pa.array([levels[k] for k in table.column("component").to_pylist()], pa.float64())
        q = pa.table(
            {
                "firm_id": table["firm_id"],
                "origin_q": table["origin_q"],
                "item_id": table["item_id"],
                "horizon": table["horizon"],
                "quantile_level": lv,
                "mu": table["mu"],
            }
        ).cast(QUANTILE_SCHEMA)
        return scoring.ingest_forecasts(wh, f"static_{name}", q, family="quantile")
    static_family = "gaussian" if family == "point" else family
    return scoring.ingest_forecasts(
        wh, f"static_{name}", table.cast(FORECAST_SCHEMA), family=static_family, df=df
    )


@pytest.mark.parametrize("rules", ["paper", "published"])
def test_new_families_score_as_static(wh: Warehouse, tmp_path: Path, rules: str) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds", rules=rules)
    for name, (path, opts) in _files(wh, rnd["round_id"], tmp_path).items():
        rec = submit_file(wh, rnd["name"], path, name, **opts)
        assert rec["family"] == {"t5": "student_t", "mix": "gaussian", "q": "quantile"}[name]
    assert dict(
        wh.fetchall(
            "SELECT name, n_components FROM rounds.submissions WHERE round_id = ?",
            [rnd["round_id"]],
        )
    ) == {
        "Seasonal random walk": 1,
        "Fade / AR(1)": 1,
        "oracle": 1,
        "t5": 1,
        "mix": 2,
        "q": len(LEVELS),
    }
    close_round(wh, rnd["name"])
    grow(wh, "2015Q4", rules=rules)
    resolve(wh)
    lookahead = [
        r[0]
        for r in wh.fetchall(
            "SELECT i.item FROM panel.item_k k JOIN ref.items i USING (item_id) "
            "WHERE k.k_rule LIKE 'whole_panel%'"
        )
    ]
    items = ", ".join(f"'{i}'" for i in lookahead) or "''"
    ids: dict[str, int] = {}
    for sid, name, family, df, levels in wh.fetchall(
        "SELECT submission_id, name, family, df, quantile_levels FROM rounds.submissions "
        "WHERE round_id = ?",
        [rnd["round_id"]],
    ):
        ids[name] = _static(wh, sid, name, family, df, levels)
    predicate = f"origin = CAST('{wh.scalar('SELECT qend(?)', [T])}' AS DATE)"
    if lookahead:
        predicate += f" AND item NOT IN ({items})"
        wh.execute(
            "DELETE FROM rounds.cell_scores WHERE item_id IN "
            f"(SELECT item_id FROM ref.items WHERE item IN ({items}))"
        )
    scoring.create_footprint(wh, "round_cells", predicate=predicate)
    whole = leaderboard(wh, rnd["name"])
    by_track = static_by_board(wh, whole, ids, ("squared", "absolute", "density"))
    squared, absolute, density = by_track["squared"], by_track["absolute"], by_track["density"]
    board = {m["name"]: m for m in whole["models"]}
    assert set(board) == set(squared)
    for name, m in board.items():
        assert m["n"] == squared[name]["n"], name
        for key in ("r2", "mse"):
            assert m[key] == pytest.approx(squared[name][key], rel=1e-9, abs=1e-12), (name, key)
    for name in ("t5", "mix", "q"):
        for key in ("crps", "nll"):
            want = density[name].get(key)
            if want is None or (isinstance(want, float) and math.isnan(want)):
                assert board[name][key] is None or math.isnan(board[name][key]), (name, key)
            else:
                assert board[name][key] == pytest.approx(want, rel=1e-9), (name, key)
    assert not math.isnan(board["t5"]["crps"]) and board["q"]["nll"] is None

    # The absolute track and the coverages from the cells' r_abs and interval flags
    # (a quantile forecast's MAE is its median's, its coverage its level pairs'), on the
    # round's common sample
    def cell_means(sids: list[int]) -> dict[str, list[Any]]:
        return {
            name: row
            for name, *row in wh.fetchall(
                """WITH subs AS (SELECT unnest(?::INTEGER[]) AS submission_id),
                   common AS (
                       SELECT gvkey, item_id, horizon FROM rounds.cell_scores JOIN subs
                       USING (submission_id)
                       GROUP BY ALL HAVING count(*) = (SELECT count(*) FROM subs))
                   SELECT s.name, avg(abs(c.r_abs)), avg(c.in50::INT), avg(c.in90::INT)
                   FROM rounds.cell_scores c JOIN subs USING (submission_id)
                   JOIN common USING (gvkey, item_id, horizon)
                   JOIN rounds.submissions s USING (submission_id) GROUP BY s.name""",
                [sids],
            )
        }

    # on the board's samples: the covering entries' common one, each other entry's own
    cells = cell_means([m["submission_id"] for m in board.values() if m["common_sample"]])
    for m in board.values():
        if not m["common_sample"]:
            cells.update(cell_means([m["submission_id"]]))
    for name, (mae, cov50, cov90) in cells.items():
        assert mae == pytest.approx(absolute[name]["mae"], rel=1e-9), name
        if name in ("t5", "mix", "q", "oracle"):
            assert cov50 == pytest.approx(density[name]["cov50"], rel=1e-12), name
            assert cov90 == pytest.approx(density[name]["cov90"], rel=1e-12), name
    # the round's own board takes them from the same stored columns: a grid's MAE is its
    # median's (its mean's residual would give another number), its coverage its pairs'
    for name, (mae, cov50, cov90) in cells.items():
        assert board[name]["mae"] == pytest.approx(mae, rel=1e-12), name
        if name in ("t5", "mix", "q", "oracle"):
            assert board[name]["cov50"] == pytest.approx(cov50, rel=1e-12), name
            assert board[name]["cov90"] == pytest.approx(cov90, rel=1e-12), name
    mean_mae = wh.fetchall(
        """SELECT avg(abs(c.r)) FROM rounds.cell_scores c
           JOIN rounds.submissions s USING (submission_id)
           WHERE s.round_id = ? AND s.name = 'q' AND c.r_abs IS NOT NULL""",
        [rnd["round_id"]],
    )[0][0]
    assert mean_mae != pytest.approx(cells["q"][0], rel=1e-6)


def test_malformed_family_files_are_refused(wh: Warehouse, tmp_path: Path) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds")
    files = _files(wh, rnd["round_id"], tmp_path)
    before = wh.scalar("SELECT count(*) FROM rounds.submissions")
    path, _ = files["t5"]
    with pytest.raises(UserError, match="student_t needs --df"):
        submit_file(wh, rnd["name"], path, "t", family="student_t")
    path, _ = files["q"]
    with pytest.raises(UserError, match="quantile forecast"):
        submit_file(wh, rnd["name"], path, "q", family="gaussian")
    grid = pq.read_table(path)
    # a cell that lacks one level
    pq.write_table(grid.slice(1), tmp_path / "q_missing.parquet")
    with pytest.raises(ValidationError, match="without every level of the grid"):
        submit_file(wh, rnd["name"], tmp_path / "q_missing.parquet", "q1")
    # decreasing values: the grid's levels reversed
    lv = grid.column("quantile_level").to_numpy()
    flipped = grid.set_column(
        grid.schema.get_field_index("quantile_level"), "quantile_level", pa.array(1.0 - lv)
    )
    pq.write_table(flipped, tmp_path / "q_down.parquet")
    with pytest.raises(ValidationError, match="decrease as the level rises"):
        submit_file(wh, rnd["name"], tmp_path / "q_down.parquet", "q2")
    bad = grid.set_column(
        grid.schema.get_field_index("quantile_level"),
        "quantile_level",
        pa.array(np.where(lv == 0.5, 1.5, lv)),
    )
    pq.write_table(bad, tmp_path / "q_level.parquet")
    with pytest.raises(ValidationError, match="missing or outside"):
        submit_file(wh, rnd["name"], tmp_path / "q_level.parquet", "q3")
    path, _ = files["mix"]
    mix = pq.read_table(path)
    pq.write_table(mix.slice(1), tmp_path / "mix_missing.parquet")
    with pytest.raises(ValidationError, match="without all 2 components"):
        submit_file(wh, rnd["name"], tmp_path / "mix_missing.parquet", "m1")
    pq.write_table(mix.drop_columns(["sigma"]), tmp_path / "mix_point.parquet")
    with pytest.raises(ValidationError, match="needs a sigma per component"):
        submit_file(wh, rnd["name"], tmp_path / "mix_point.parquet", "m2")
    assert wh.scalar("SELECT count(*) FROM rounds.submissions") == before
    assert wh.scalar("SELECT count(*) FROM rounds.forecast_components") == 0


def test_v0121_backfills_the_cells_scored_before_it(settings: Settings, tmp_path: Path) -> None:
    """A warehouse that scored rounds before V0121 gets r_abs = r and the interval flags
    from u for those cells (the families it held: Gaussian, Laplace, point)."""
    before = tmp_path / "migrations"
    before.mkdir()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        if int(path.name[1:5]) <= 120:
            shutil.copy(path, before / path.name)
    with connect(settings) as w:
        migrate(w, before)
        w.execute(
            "INSERT INTO rounds.cell_scores VALUES (1, '001004', 1, 1, -0.5, 1.0, 0.3, -0.5, "
            "0.3), (1, '001004', 1, 2, 0.25, NULL, NULL, NULL, NULL)"
        )
        assert 121 in [m.version for m in migrate(w)]
        rows = w.fetchall(
            "SELECT horizon, r_abs, in50, in80, in90, in95 FROM rounds.cell_scores ORDER BY 1"
        )
    assert rows == [(1, -0.5, True, True, True, True), (2, 0.25, None, None, None, None)]
