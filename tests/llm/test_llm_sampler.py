"""The LLM sampler (sql/eval/047): eligibility, one block of consecutive origins per
firm, seeded, calendar-balanced, frozen by gvkey as the `llm` footprint."""

from __future__ import annotations

from proforma.app import scoring
from proforma.app.scoring.footprints.llm import (
    LLM_ORIGINS,
    MAX_BLOCK,
    MIN_BLOCK,
    create_llm_footprint,
    sample_counts,
)
from proforma.app.scoring.footprints.store import footprint_definition


def sample(wh, fid):
    return wh.fetchall(
        "SELECT gvkey, firm_id, origin_q FROM eval.footprint_origins "
        "WHERE footprint_id = ? ORDER BY gvkey, origin_q",
        [fid],
    )


def blocks(rows):
    out: dict[str, list[int]] = {}
    for gvkey, _, q in rows:
        out.setdefault(gvkey, []).append(q)
    return out


def eligible(wh) -> set[tuple[int, int]]:
    """The protocol's pool, restated: test origin, >= 4 panel quarters through q0, and a
    scoreable future cell."""
    return set(
        wh.fetchall(
            """SELECT o.firm_id, o.origin_q FROM panel.origins o
           WHERE o.split = 'test'
             AND (SELECT count(DISTINCT q) FROM panel.values v
                  WHERE v.firm_id = o.firm_id AND v.q <= o.origin_q) >= 4
             AND EXISTS (SELECT 1 FROM panel.truth t WHERE t.firm_id = o.firm_id
                         AND t.origin_q = o.origin_q AND isfinite(t.actual)
                         AND isfinite(t.baseline))"""
        )
    )


def test_blocks_of_consecutive_eligible_origins_one_per_firm(panel_wh) -> None:
    fid = create_llm_footprint(panel_wh, n_origins=60, seed=11)
    rows = sample(panel_wh, fid)
    assert len(rows) == 60 and all(g is not None for g, _, _ in rows)
    pool = eligible(panel_wh)
    assert {(f, q) for _, f, q in rows} <= pool
    for gvkey, qs in blocks(rows).items():
        assert MIN_BLOCK <= len(qs) <= MAX_BLOCK, gvkey
        assert qs == list(range(qs[0], qs[0] + len(qs))), gvkey  # consecutive quarters
    counts = sample_counts(panel_wh, fid)
    assert counts["origins"] == 60 and counts["firms"] == len(blocks(rows))
    assert counts["pool_origins"] == len(pool) and counts["pool_firms"] == len({f for f, _ in pool})
    assert sum(counts["by_year"].values()) == 60


def test_seeded_and_pinned(panel_wh) -> None:
    a = sample(panel_wh, create_llm_footprint(panel_wh, n_origins=50, seed=1))
    b = sample(panel_wh, create_llm_footprint(panel_wh, n_origins=50, seed=1))
    c = sample(panel_wh, create_llm_footprint(panel_wh, n_origins=50, seed=2))
    assert a == b != c
    fp = scoring.get_footprint(panel_wh, "llm")
    assert fp["version"] == 3 and fp["kind"] == "origins"
    definition = footprint_definition(fp)
    assert definition["sampler"] == "llm-blocks" and definition["seed"] == 2


def test_a_small_panel_gives_every_firm_one_block_spread_over_the_calendar(panel_wh) -> None:
    fid = create_llm_footprint(panel_wh, n_origins=LLM_ORIGINS)
    rows = sample(panel_wh, fid)
    pool = eligible(panel_wh)
    pool_firms = {f for f, _ in pool}
    firms = {f for _, f, _ in rows}
    assert firms <= pool_firms and len(firms) >= len(pool_firms) - 3  # firms w/o a 4-run drop
    assert len(rows) < len(pool)  # one block each, not every origin
    per_q: dict[int, int] = {}
    for _, _, q in rows:
        per_q[q] = per_q.get(q, 0) + 1
    pool_q = sorted({q for _, q in pool})
    # every quarter with eligible origins is sampled, within half of the mean either way
    # (blocks of up to 20 quarters in this panel's 19-quarter window must overlap mid-window)
    assert set(per_q) == set(pool_q)
    mean = len(rows) / len(pool_q)
    assert 0.5 * mean <= min(per_q.values()) and max(per_q.values()) <= 1.5 * mean


def test_standard_footprints_replace_an_older_generic_llm_sample(panel_wh) -> None:
    old = scoring.create_footprint(panel_wh, "llm", n_origins=30, seed=5)
    assert scoring.ensure_standard_footprints(panel_wh) == ["full", "geert", "llm"]
    fp = scoring.get_footprint(panel_wh, "llm")
    assert fp["footprint_id"] != old and fp["version"] == 2
    assert footprint_definition(fp)["sampler"] == "llm-blocks"
    assert "llm" not in scoring.ensure_standard_footprints(panel_wh)  # drawn once, then kept
