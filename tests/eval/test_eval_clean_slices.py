"""Issue 49, item 3: each submission's declared training cutoff selects its clean slice
(the origins after it), scored beside all its cells; a board can rank on a slice; a
cutoff at or after the test split's first origin is flagged on every board."""

from __future__ import annotations

import numpy as np
import pytest
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring
from proforma.contracts.errors import UserError
from proforma.contracts.quarters import parse_quarter


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    wh = module_warehouse(tmp_path_factory, "clean_slices")
    cells = truth_cells(wh)
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(4)
    mus = {}

    def add(name: str, scale: float, cutoff: str | None) -> int:
        mus[name] = actual + rng.normal(0, scale, actual.size)
        meta = {"training_cutoff": cutoff} if cutoff else {}
        return scoring.ingest_forecasts(
            wh, name, forecasts_from(cells, mus[name]), source="upload", metadata=meta
        )

    mus["house"] = actual + rng.normal(0, 0.5, actual.size)
    scoring.ingest_forecasts(wh, "house", forecasts_from(cells, mus["house"]))
    add("clean", 0.6, "2009Q4")
    add("leaky", 0.2, "2011-09-30")  # a date: its quarter
    scoring.score(wh, "full", coherence=False, baselines=False)
    yield wh, cells, mus
    wh.close()


def _hand(cells, mu, after: int) -> dict[str, float]:
    """R2, MSE and MAE over the cells with an origin after `after`, by hand."""
    keep = cells["origin_q"].to_numpy() > after
    y = (cells["actual"].to_numpy() - cells["baseline"].to_numpy())[keep]
    r = (mu - cells["actual"].to_numpy())[keep]
    ss = (y * y).sum() - y.sum() ** 2 / y.size
    return {
        "n": int(keep.sum()),
        "r2": 1 - (r * r).sum() / (ss + 1e-12),
        "mse": (r * r).mean(),
        "mae": np.abs(r).mean(),
    }


def test_every_row_has_its_cutoff_flag_and_clean_score(board):
    wh, cells, mus = board
    for by in (None, "horizon"):
        rows = scoring.leaderboard(wh, "full", "squared", by).to_pylist()
        flags = {r["model"]: (r["training_cutoff"], r["after_test_start"]) for r in rows}
        # the test split starts at 2010Q1: a cutoff in 2011 trained on test-period targets
        assert flags == {
            "house": (None, False),
            "clean": ("2009Q4", False),
            "leaky": ("2011Q3", True),
        }
    rows = {r["model"]: r for r in scoring.leaderboard(wh, "full", "squared").to_pylist()}
    want = _hand(cells, mus["leaky"], parse_quarter("2011Q3"))
    leaky = rows["leaky"]
    assert leaky["clean_cells"] == want["n"] < leaky["n"]
    for m in ("r2", "mse", "mae"):
        assert leaky[f"{m}_clean"] == pytest.approx(want[m], rel=1e-9), m
    # a cutoff before the split (or none): the clean slice is every cell
    for name in ("house", "clean"):
        assert rows[name]["clean_cells"] == rows[name]["n"]
        assert rows[name]["r2_clean"] == pytest.approx(rows[name]["r2"])


def test_a_board_ranks_on_a_slice_among_its_clean_entrants(board):
    wh, cells, mus = board
    after = parse_quarter("2011Q3")
    table = scoring.leaderboard(wh, "full", "squared", clean_after="2011Q3")
    rows = table.to_pylist()
    assert [r["model"] for r in rows] == ["leaky", "house", "clean"]  # by R2 on the slice
    for r in rows:
        want = _hand(cells, mus[r["model"]], after)
        assert r["clean_after"] == "2011Q3"
        assert r["n"] == want["n"] and r["r2"] == pytest.approx(want["r2"], rel=1e-9)
    # an earlier slice: the leaky model is not an entrant
    earlier = scoring.leaderboard(wh, "full", "absolute", clean_after="2010Q2").to_pylist()
    assert sorted(r["model"] for r in earlier) == ["clean", "house"]
    assert earlier[0]["mae"] <= earlier[1]["mae"]
    with pytest.raises(UserError, match="Not a quarter"):
        scoring.leaderboard(wh, "full", clean_after="later")
    with pytest.raises(UserError, match="leave out --by"):
        scoring.leaderboard(wh, "full", by="horizon", clean_after="2011Q3")
