"""Issue 34, item 3: a run tests each submission against what the board shows (each
group's leader, the in-house submissions), not against every other upload, so a run does
not grow with the board; the leaderboard's Diebold-Mariano columns are the same numbers
as testing every pair, computed on demand for a reference the run does not hold."""

from __future__ import annotations

import numpy as np
import pytest
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring
from proforma.app.scoring.leaderboard import leaderboard
from proforma.app.scoring.significance import dm_test_rows


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "dm_board")
    yield w
    w.close()


def _stored(wh, run: int) -> dict[tuple, tuple]:
    return {
        (min(a, b), max(a, b), loss, h): (stat if a < b else (None if stat is None else -stat), p)
        for a, b, loss, h, stat, p in wh.fetchall(
            "SELECT submission_a, submission_b, loss, horizon, dm_stat, p_value "
            "FROM eval.dm_tests WHERE score_run_id = ?",
            [run],
        )
    }


def _every_pair(wh, run: int, ids: list[int]) -> dict[tuple, tuple]:
    pairs = [(a, b) for a in sorted(ids) for b in sorted(ids) if a < b]
    got = dm_test_rows(wh, run, pairs)
    return {
        (a, b, loss, h): (stat, p)
        for a, b, loss, h, stat, p in zip(
            got["submission_a"],
            got["submission_b"],
            got["loss"],
            got["horizon"],
            got["dm_stat"],
            got["p_value"],
            strict=True,
        )
    }


def _same(got: tuple, want: tuple) -> bool:
    return all(
        (g is None and w is None) or (g is not None and w is not None and g == pytest.approx(w))
        for g, w in zip(got, want, strict=True)
    )


def _leaders(wh, run: int) -> dict[tuple[str, int], int]:
    return {
        (loss, int(h)): int(sid)
        for loss, h, sid in wh.fetchall(
            "SELECT l.loss, coalesce(m.horizon, 0), "
            "arg_min(m.submission_id, CASE l.loss WHEN 'squared' THEN m.mse ELSE m.mae END) "
            "FROM eval.metrics m CROSS JOIN (VALUES ('squared'), ('absolute')) l(loss) "
            "WHERE m.score_run_id = ? AND m.level IN ('global', 'horizon') GROUP BY ALL",
            [run],
        )
    }


def test_runs_test_against_the_leaders_and_in_house_models_only(wh):
    cells = truth_cells(wh)
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(3)
    sig = np.full(actual.size, 0.4)

    def upload(name: str, scale: float) -> int:
        mu = actual + rng.normal(0, scale, actual.size)
        return scoring.ingest_forecasts(wh, name, forecasts_from(cells, mu, sig), source="upload")

    house = [
        scoring.ingest_forecasts(
            wh, f"house {j}", forecasts_from(cells, actual + rng.normal(0, 0.5, actual.size), sig)
        )
        for j in range(2)
    ]
    uploads = [upload(f"up {j}", 0.6 + 0.05 * j) for j in range(4)]
    run = scoring.score(wh, "full", coherence=False, baselines=False)
    members = house + uploads
    stored = _stored(wh, run)
    full = _every_pair(wh, run, members)
    # what is stored equals testing every pair, and holds what the board needs
    for key, value in stored.items():
        assert _same(value, full[key]), key
    leaders = _leaders(wh, run)
    for (loss, h), lead in leaders.items():
        hubs = set(house) | {lead}
        for x in hubs:
            for y in members:
                if x != y:
                    assert (min(x, y), max(x, y), loss, h) in stored, (loss, h, x, y)
    # two uploads neither of which is a hub of any group: no test stored
    hub_ids = set(house) | set(leaders.values())
    idle = [s for s in uploads if s not in hub_ids]
    assert len(idle) >= 2
    assert not [k for k in stored if k[0] in idle and k[1] in idle]
    n_before = len(stored)

    # A better upload leads every group: its tests against every member are added; a
    # worse one only gets its tests against the leaders and the in-house models.
    best = upload("best", 0.05)
    worse = upload("worse", 0.9)
    run2 = scoring.score(wh, "full", coherence=False, baselines=False)
    members2 = members + [best, worse]
    assert set(_leaders(wh, run2).values()) == {best}
    stored2 = _stored(wh, run2)
    full2 = _every_pair(wh, run2, members2)
    for key, value in stored2.items():
        assert _same(value, full2[key]), key
    for y in members2:
        if y != best:
            assert (min(best, y), max(best, y), "squared", 0) in stored2
    assert {k[:2] for k in stored2 if worse in k[:2]} == {
        (min(worse, x), max(worse, x)) for x in set(house) | {best}
    }
    # the run wrote only the new pairs (tests before are referenced, not repeated)
    written = wh.scalar("SELECT count(*) FROM eval.dm_test_rows WHERE score_run_id = ?", [run2])
    assert written == len(stored2) - n_before

    # The leaderboard shows the same numbers as testing every pair, against the leader
    # and against any reference, also one whose tests the run does not hold.
    for against in (None, idle[0]):
        checked = 0  # (the pooled test has no statistic on 20 quarters: HLN factor 0)
        for by in (None, "horizon"):
            table = leaderboard(wh, "full", "squared", by, against=against).to_pylist()
            col = "dm_vs_leader" if against is None else "dm_vs_reference"
            lead_of: dict = {}
            for row in table:
                if row["rank"] == 1 or row["submission_id"] == against:
                    lead_of.setdefault(row.get("horizon"), row["submission_id"])
            if against is not None:
                lead_of = {row.get("horizon"): against for row in table}
            for row in table:
                lead, sid = lead_of[row.get("horizon")], row["submission_id"]
                if sid == lead:
                    assert row[col] is None
                    continue
                h = row.get("horizon") or 0
                stat, p = full2[(min(lead, sid), max(lead, sid), "squared", h)]
                want = None if stat is None else (stat if sid > lead else -stat)
                assert _same((row[col], row["p_value"]), (want, p)), (by, against, row)
                checked += want is not None
        assert checked > 0
