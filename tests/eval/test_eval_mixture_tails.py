"""Mixture scores far in the tails, and the cell ids decoded from the packed cell key."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from scipy import special, stats
from scoring_fixtures import cell_scores, forecasts_from, module_warehouse

from proforma.app import scoring

SMALL = "horizon IN (1, 7) AND item IN ('atq', 'niq')"


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "mixture_tails")
    scoring.create_footprint(w, "small", predicate=SMALL)
    yield w
    w.close()


def _far_tails(wh, name: str):
    """A two-component mixture whose components lie 30-60 sigmas from the truth: (the
    submission, the cells, the components' means and sds)."""
    cells = wh.arrow(
        "SELECT t.firm_id, t.origin_q, t.item_id, t.horizon, t.actual FROM panel.truth t "
        "JOIN ref.items i USING (item_id) WHERE t.split = 'test' AND t.horizon IN (1, 7) "
        "AND i.item IN ('atq', 'niq') ORDER BY t.firm_id, t.origin_q, t.item_id, t.horizon"
    )
    actual = cells["actual"].to_numpy()
    rng = np.random.default_rng(11)
    sds = np.stack([np.full(actual.size, 0.01), np.full(actual.size, 0.02)])
    mus = actual[None, :] + np.stack(
        [rng.uniform(0.3, 0.6, actual.size), -rng.uniform(0.6, 1.2, actual.size)]
    )
    table = pa.concat_tables([forecasts_from(cells, mus[j], sds[j], component=j) for j in range(2)])
    return scoring.ingest_forecasts(wh, name, table), actual, mus, sds


def test_far_tail_mixture_nll_is_finite_and_exact(wh):
    """Components 30-60 sigmas away: a naive sum of densities underflows to log(0)."""
    sid, actual, mus, sds = _far_tails(wh, "far tails")
    run = scoring.score(wh, "small", [sid], coherence=False)
    g = wh.arrow(
        "SELECT nll, crps FROM eval.metrics WHERE score_run_id = ? AND level = 'global'", [run]
    ).to_pylist()[0]
    logpdf = stats.norm.logpdf(actual[None, :], mus, sds)
    want = -(special.logsumexp(logpdf, axis=0) - np.log(2))
    assert np.isfinite(g["nll"])
    assert g["nll"] == pytest.approx(want.mean(), rel=1e-9)
    # Far from both components the CRPS is about the distance to the mixture's mass.
    assert g["crps"] > 0


def test_mixture_cell_ids_round_trip(wh):
    """The mixture scores decode origin, item and horizon from the packed cell key."""
    sid = _far_tails(wh, "far tails, cell ids")[0]
    scores = cell_scores(wh, "small", [sid])
    truth = wh.arrow(
        "SELECT t.origin_q, t.item_id, t.horizon FROM panel.truth t JOIN ref.items i "
        "USING (item_id) WHERE t.split = 'test' AND t.horizon IN (1, 7) "
        "AND i.item IN ('atq', 'niq')"
    )
    got = sorted(
        zip(
            scores["origin_q"].to_pylist(),
            scores["item_id"].to_pylist(),
            scores["horizon"].to_pylist(),
            strict=True,
        )
    )
    want = sorted(
        zip(
            truth["origin_q"].to_pylist(),
            truth["item_id"].to_pylist(),
            truth["horizon"].to_pylist(),
            strict=True,
        )
    )
    assert got == want
