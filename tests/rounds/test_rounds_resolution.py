"""Resolution: incremental (each ingest that adds quarters resolves only the newly
realized cells), once per cell (a later restatement does not change a resolved cell), and,
for a round whose quarters are all realized, equal to the static scorer on the same cells."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest
from rounds_helpers import grow, open_tiny_round, static_by_board

from proforma.app import scoring
from proforma.app.flows.build import run_build
from proforma.app.rounds import leaderboard, live_leaderboard, resolve
from proforma.app.rounds.store import close_round
from proforma.app.sources import ingest
from proforma.app.sources.base import RawTables, Source
from proforma.app.store.warehouse import Warehouse
from proforma.contracts.forecasts import FORECAST_SCHEMA

T = 2010 * 4 + 3


class _Fixed(Source):
    name = "fixed"

    def __init__(self, tables: RawTables):
        self.raw = tables

    def parameters(self) -> dict:
        return {}

    def tables(self) -> RawTables:
        return self.raw


def _truth(wh: Warehouse) -> pa.Table:
    return wh.arrow("SELECT * FROM rounds.truth ORDER BY ALL")


def test_incremental_resolution_first_value_counts(wh: Warehouse, tmp_path: Path) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds")
    close_round(wh, rnd["name"])
    grow(wh, "2011Q2")
    first = resolve(wh)
    assert first["cells_new"] > 0 and first["waiting"] == []
    horizons = {h for (h,) in wh.fetchall("SELECT DISTINCT horizon FROM rounds.truth")}
    assert horizons == {1, 2}
    entries = wh.scalar("SELECT count(*) FROM rounds.submissions")
    assert first["scores_new"] <= first["cells_new"] * entries
    again = resolve(wh)
    assert (again["cells_new"], again["scores_new"]) == (0, 0)
    resolved = _truth(wh)

    # a restatement of a resolved quarter: the next vintage changes revtq at 2011Q1
    fundq = wh.arrow("SELECT * FROM raw.fundq ORDER BY gvkey, datadate")
    revt = fundq.column("revtq").to_pylist()
    dates = fundq.column("datadate").to_pylist()
    changed = [i for i, d in enumerate(dates) if d.year == 2011 and d.month <= 3 and revt[i]]
    for i in changed:
        revt[i] *= 1.5
    fundq = fundq.set_column(fundq.schema.get_field_index("revtq"), "revtq", pa.array(revt))
    raw = RawTables(
        fundq=fundq,
        company_industry=wh.arrow("SELECT * FROM raw.company_industry"),
        ccm_link=wh.arrow("SELECT * FROM raw.ccm_link"),
    )
    ingest(wh, _Fixed(raw))
    run_build(wh)
    assert resolve(wh)["cells_new"] == 0
    assert _truth(wh).equals(resolved)
    assert wh.scalar("SELECT rows_restated FROM raw.vintages ORDER BY ingest_id DESC LIMIT 1")

    # two more quarters: only horizons 3 and 4 are new, the earlier cells stay as they were
    grow(wh, "2011Q4")
    later = resolve(wh)
    new = {
        h
        for (h,) in wh.fetchall(
            "SELECT DISTINCT horizon FROM rounds.truth WHERE resolution_id = ?",
            [later["resolution_id"]],
        )
    }
    assert new == {3, 4}
    kept = wh.arrow(
        "SELECT * FROM rounds.truth WHERE resolution_id < ? ORDER BY ALL", [later["resolution_id"]]
    )
    assert kept.equals(resolved)
    board = leaderboard(wh, rnd["name"])
    assert board["round"]["state"] == "resolving"
    assert [n > 0 for n in board["round"]["resolved_by_horizon"]] == [True] * 4 + [False] * 16
    by_name = {m["name"]: m for m in board["models"]}
    assert by_name["oracle"]["r2"] > by_name["Seasonal random walk"]["r2"]
    assert {m["n"] for m in board["models"] if m["common_sample"]} == {board["n_common"]}
    live = live_leaderboard(wh)
    assert {r["name"] for r in live} == {"Seasonal random walk", "Fade / AR(1)", "oracle"}
    # one round: each model's pooled live metrics (sql/rounds/055) are the round's metrics
    # (050) of that model alone, on all of its cells, both from the metric definitions
    from proforma.app.rounds.resolve import _metric_rows

    for row in live:
        sid = wh.scalar(
            "SELECT submission_id FROM rounds.submissions WHERE round_id = ? AND name = ?",
            [rnd["round_id"], row["name"]],
        )
        alone = _metric_rows(wh, rnd["round_id"], [sid])[0]
        assert alone["horizon"] is None and row["rounds"] == 1 and row["n"] == alone["n"]
        for key in ("r2", "mse", "mae", "nll", "crps", "z2", "cov50", "cov90"):
            if alone[key] is None:
                assert row[key] is None, (row["name"], key)
            else:
                assert row[key] == pytest.approx(alone[key], rel=1e-12), (row["name"], key)


def _static_ids(wh: Warehouse, round_id: int) -> dict[str, int]:
    """The round's entries submitted to the static scorer (its public entry points)."""
    ids = {}
    for sid, name, family in wh.fetchall(
        "SELECT submission_id, name, family FROM rounds.submissions WHERE round_id = ?",
        [round_id],
    ):
        table = wh.arrow(
            "SELECT f.firm_id, ?::INTEGER AS origin_q, c.item_id, c.horizon, "
            "0::SMALLINT AS component, c.mu, c.sigma FROM rounds.forecasts c "
            "JOIN panel.firms f USING (gvkey) WHERE c.submission_id = ? ORDER BY ALL",
            [T, sid],
        ).cast(FORECAST_SCHEMA)
        ids[name] = scoring.ingest_forecasts(
            wh,
            f"static_{name}",
            table,
            family="gaussian",
            source="model",
        )
        assert family in ("gaussian", "point")
    return ids


@pytest.mark.parametrize("rules", ["paper", "published"])
def test_fully_resolved_round_scores_as_static(wh: Warehouse, tmp_path: Path, rules: str) -> None:
    rnd = open_tiny_round(wh, tmp_path / "rounds", rules=rules)
    close_round(wh, rnd["name"])
    grow(wh, "2015Q4", rules=rules)
    resolve(wh)
    assert leaderboard(wh, rnd["name"])["round"]["state"] == "resolved"
    # the static truth of the round's origin quarter is the round's (its parameters
    # depend on no later quarter), except where `published` searches an item's k on the
    # whole panel (a look-ahead fallback): there the later panel differs, and those items
    # are left out of the comparison
    lookahead = [
        r[0]
        for r in wh.fetchall(
            "SELECT i.item FROM panel.item_k k JOIN ref.items i USING (item_id) "
            "WHERE k.k_rule LIKE 'whole_panel%'"
        )
    ]
    if rules == "paper":
        assert lookahead == []
    items = ", ".join(f"'{i}'" for i in lookahead) or "''"
    same = wh.one(
        f"""SELECT count(*), count(*) FILTER (WHERE s.actual = r.actual AND s.baseline = r.baseline)
            FROM rounds.truth r JOIN ref.items i USING (item_id)
            JOIN panel.firms f USING (gvkey)
            FULL JOIN (SELECT * FROM panel.truth WHERE origin_q = {T}) s
              ON s.firm_id = f.firm_id AND s.item_id = r.item_id AND s.horizon = r.horizon
            WHERE coalesce(i.item, '') NOT IN ({items})
              AND coalesce(s.item_id, r.item_id) NOT IN
                  (SELECT item_id FROM ref.items WHERE item IN ({items}))"""
    )
    assert same[0] > 1000 and same[0] == same[1]
    ids = _static_ids(wh, rnd["round_id"])
    qend = wh.scalar("SELECT qend(?)", [T])
    predicate = f"origin = CAST('{qend}' AS DATE)"
    if lookahead:
        predicate += f" AND item NOT IN ({items})"
        wh.execute(
            "DELETE FROM rounds.cell_scores WHERE item_id IN "
            f"(SELECT item_id FROM ref.items WHERE item IN ({items}))"
        )
    scoring.create_footprint(wh, "round_cells", predicate=predicate)
    board = leaderboard(wh, rnd["name"])
    by_track = static_by_board(wh, board, ids, ("squared", "density"))
    static, density = by_track["squared"], by_track["density"]
    assert {m["name"] for m in board["models"]} == set(static)
    for m in board["models"]:
        s = static[m["name"]]
        assert m["n"] == s["n"]
        for key in ("r2", "mae", "mse"):
            assert m[key] == pytest.approx(s[key], rel=1e-9, abs=1e-12), (m["name"], key)
    oracle = next(m for m in board["models"] if m["name"] == "oracle")
    for key in ("crps", "nll", "cov90"):
        if key in density["oracle"]:
            assert oracle[key] == pytest.approx(density["oracle"][key], rel=1e-9), key
    assert not math.isnan(oracle["crps"])


def test_two_rounds_live_leaderboard(wh: Warehouse, tmp_path: Path) -> None:
    first = open_tiny_round(wh, tmp_path / "rounds")
    close_round(wh, first["name"])
    grow(wh, "2011Q2")
    from proforma.app.rounds import open_round
    from proforma.app.rounds.entries import enter_entries

    second = open_round(wh, tmp_path / "rounds", days=1)
    assert second["origin"] == "2011Q2"
    entered = {e["name"] for e in enter_entries(wh, second["name"])}
    assert entered == {"Seasonal random walk", "Fade / AR(1)", "oracle"}  # the frontier at 2011Q2
    close_round(wh, second["name"])
    grow(wh, "2012Q2")
    out = resolve(wh)
    assert set(out["per_round"]) == {"2010Q4", "2011Q2"}
    live = {r["name"]: r for r in live_leaderboard(wh)}
    assert {r["rounds"] for r in live.values()} == {2}
    leader = min(live.values(), key=lambda r: r["mse"])
    others = [r for r in live.values() if r["name"] != leader["name"]]
    assert all(r["dm_periods"] == 2 for r in others)
    assert all(r["dm_p"] is None or 0 <= r["dm_p"] <= 1 for r in others)
    assert any(r["dm_p"] is not None and not math.isnan(r["dm_p"]) for r in others)
