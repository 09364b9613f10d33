"""Footprints: safe predicates, Geert. items, the seeded LLM origin sample, frozen cells."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
import pytest
from scoring_fixtures import forecasts_from, module_warehouse, truth_cells

from proforma.app import scoring
from proforma.app.scoring.footprints.standard import GEERT_ITEMS
from proforma.app.scoring.footprints.store import validate_predicate
from proforma.contracts.errors import UserError


@pytest.fixture(scope="module")
def wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "footprints")
    yield w
    w.close()


@pytest.mark.parametrize(
    "text",
    [
        "item IN ('revtq', 'niq') AND horizon BETWEEN 1 AND 4",
        "origin >= DATE '2012-01-01'",
        "NOT (firm = '001001') OR horizon <> 3",
        "TRUE",
    ],
)
def test_allowed_predicates(text):
    assert validate_predicate(text)


def test_the_whole_split_needs_no_parse():
    # the standard footprint's predicate is answered without sqlglot; anything added to it
    # is parsed and checked as before
    assert validate_predicate("  true ") == "TRUE"
    with pytest.raises(UserError):
        validate_predicate("TRUE; DROP TABLE eval.forecasts")
    with pytest.raises(UserError):
        validate_predicate("TRUE OR secret = 1")


@pytest.mark.parametrize(
    "text",
    [
        "1; DROP TABLE eval.forecasts",
        "horizon IN (SELECT 1)",
        "lower(item) = 'x'",
        "t.horizon = 1",
        "secret = 1",
        "read_parquet('x') IS NULL",
        "horizon + 1 = 2",
        "horizon",
        "",
    ],
)
def test_rejected_predicates(text):
    with pytest.raises(UserError):
        validate_predicate(text)


def _fp(wh, name):
    return scoring.get_footprint(wh, name)


def test_standard_footprints(wh):
    scoring.ensure_standard_footprints(wh)
    truth = truth_cells(wh)
    items = dict(wh.fetchall("SELECT item_id, item FROM ref.items"))
    geert = sum(items[i] in GEERT_ITEMS for i in truth["item_id"].to_pylist())
    assert 0 < geert < truth.num_rows
    assert _fp(wh, "geert")["n_cells"] == geert
    assert _fp(wh, "full")["n_cells"] == truth.num_rows
    llm = _fp(wh, "llm")
    assert llm["kind"] == "origins"
    # Fewer than 2,103 test origins in the tiny panel: one block of 4-20 consecutive test
    # origins from every firm (docs/llm.md, "The sampler").
    blocks = wh.fetchall(
        "SELECT count(*), max(origin_q) - min(origin_q) + 1 FROM eval.footprint_origins "
        "WHERE footprint_id = ? GROUP BY gvkey",
        [llm["footprint_id"]],
    )
    n_firms = wh.scalar("SELECT count(DISTINCT firm_id) FROM panel.origins WHERE split = 'test'")
    assert len(blocks) == n_firms and all(4 <= n == span <= 20 for n, span in blocks)


def test_origin_sample_is_seeded_and_calendar_balanced(wh):
    a = scoring.create_footprint(wh, "sample", n_origins=60, seed=7)
    b = scoring.create_footprint(wh, "sample", n_origins=60, seed=7)
    c = scoring.create_footprint(wh, "sample", n_origins=60, seed=8)

    def origins(fid):
        return wh.fetchall(
            "SELECT firm_id, origin_q FROM eval.footprint_origins "
            "WHERE footprint_id = ? ORDER BY 1, 2",
            [fid],
        )

    assert len(origins(a)) == 60 and origins(a) == origins(b) != origins(c)
    per_q = [
        n
        for (n,) in wh.fetchall(
            "SELECT count(*) FROM eval.footprint_origins WHERE footprint_id = ? GROUP BY origin_q",
            [a],
        )
    ]
    assert len(per_q) == 20 and max(per_q) - min(per_q) <= 1
    assert _fp(wh, "sample")["version"] == 3
    assert scoring.get_footprint(wh, "sample@1")["footprint_id"] == a


def test_frozen_common_sample_and_scores_tied_to_version(wh):
    cells = truth_cells(wh)
    early = cells.filter(pc.less(cells["origin_q"], 8044))
    s1 = scoring.ingest_forecasts(wh, "early", forecasts_from(early, early["actual"]))
    s2 = scoring.ingest_forecasts(wh, "everything", forecasts_from(cells, cells["actual"]))
    fid = scoring.create_footprint(wh, "frozen", submissions=[s1, s2])
    assert _fp(wh, "frozen")["kind"] == "cells"
    assert _fp(wh, "frozen")["n_cells"] == early.num_rows
    run = scoring.score(wh, "frozen", [s2], coherence=False)
    info = scoring.run_summary(wh, run)
    assert info["footprint_id"] == fid and info["footprint_version"] == 1
    assert info["n_cells"] == early.num_rows
    assert info["coverage"][0]["coverage"] == 1.0

    fid2 = scoring.create_footprint(wh, "dated", predicate="origin < DATE '2011-01-01'")
    run = scoring.score(wh, "dated", [s2], coherence=False)
    n = int(np.sum(cells["origin_q"].to_numpy() < 8044))
    assert scoring.run_summary(wh, run)["n_cells"] == n
    assert scoring.run_summary(wh, run)["footprint_id"] == fid2
    with pytest.raises(UserError, match="No footprint"):
        scoring.score(wh, "nope", [s2])


@pytest.fixture
def renumbered_wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "renumber")
    yield w
    w.close()


def _fp_keys(wh, name: str) -> set[tuple]:
    """The footprint's scoreable cells as (gvkey, origin_q, item_id, horizon)."""
    from proforma.app.scoring.footprints.store import drop_footprint_temp, prepare_footprint

    prepare_footprint(wh, scoring.get_footprint(wh, name))
    keys = set(
        wh.fetchall(
            "SELECT f.gvkey, t.origin_q, t.item_id, t.horizon FROM fp_truth t "
            "JOIN panel.firms f USING (firm_id)"
        )
    )
    drop_footprint_temp(wh)
    return keys


def test_frozen_footprints_follow_gvkeys_when_a_rebuild_renumbers_firms(renumbered_wh):
    wh = renumbered_wh
    cells = truth_cells(wh)
    early = cells.filter(pc.less(cells["origin_q"], 8044))
    s1 = scoring.ingest_forecasts(wh, "early", forecasts_from(early, early["actual"]))
    scoring.create_footprint(wh, "frozen", submissions=[s1])
    scoring.create_footprint(wh, "sample", n_origins=30, seed=7)
    before = {name: _fp_keys(wh, name) for name in ("frozen", "sample")}
    assert len(before["frozen"]) == early.num_rows and before["sample"]
    sample_before = set(
        wh.fetchall(
            "SELECT gvkey, origin_q FROM eval.footprint_origins o JOIN eval.footprints f "
            "USING (footprint_id) WHERE f.name = 'sample'"
        )
    )

    # A rebuild on a panel with one more firm sorting first shifts every firm id.
    for table in ("panel.firms", "panel.truth", "panel.origins"):
        wh.execute(f"UPDATE {table} SET firm_id = firm_id + 1")
    after = {name: _fp_keys(wh, name) for name in ("frozen", "sample")}
    assert after == before
    # The same seed draws the same (gvkey, origin) sample from the renumbered build.
    fid = scoring.create_footprint(wh, "sample", n_origins=30, seed=7)
    assert (
        set(
            wh.fetchall(
                "SELECT gvkey, origin_q FROM eval.footprint_origins WHERE footprint_id = ?", [fid]
            )
        )
        == sample_before
    )


@pytest.fixture
def stale_wh(tmp_path_factory):
    w = module_warehouse(tmp_path_factory, "stale")
    yield w
    w.close()


def test_submissions_of_another_panel_are_not_scored(stale_wh):
    from proforma.app.scoring.submissions.current import active_submissions, stale_submissions

    wh = stale_wh

    def add_build(raw_ingest_id: int) -> None:
        wh.execute(
            "INSERT INTO meta.builds (status, sql_checksum, parameters, reg_stats, "
            "raw_ingest_id, started_at) VALUES ('succeeded', 'abc', '{\"k\": 1}', "
            "'estimate', ?, now())",
            [raw_ingest_id],
        )

    add_build(1)
    cells = truth_cells(wh)
    old = scoring.ingest_forecasts(wh, "old", forecasts_from(cells, cells["actual"]))
    add_build(1)  # the same panel rebuilt: same SQL, parameters and raw ingest
    assert stale_submissions(wh) == {} and old in active_submissions(wh)
    add_build(2)  # a new raw ingest: firm ids and standardization may differ
    new = scoring.ingest_forecasts(wh, "new", forecasts_from(cells, cells["actual"]))
    assert set(stale_submissions(wh)) == {old}
    assert active_submissions(wh) == [new]
    runs_before = wh.scalar("SELECT count(*) FROM eval.score_runs")
    with pytest.raises(UserError, match="'old' was ingested against build 1 .* now build 3"):
        scoring.score(wh, "full", [old, new], coherence=False)
    assert wh.scalar("SELECT count(*) FROM eval.score_runs") == runs_before  # nothing written
    run = scoring.score(wh, "full", coherence=False, baselines=False)
    assert scoring.run_summary(wh, run)["submission_ids"] == [new]
