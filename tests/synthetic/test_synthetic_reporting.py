"""Reporting like Compustat: duplicates, gaps, era availability, links, industries."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc
from synthetic_helpers import Recorded, tiny_config

from proforma.app.sources.synthetic import reporting
from proforma.app.sources.synthetic.reporting import draw_links, in_link_window


def test_fiscal_year_changes_make_two_rows_and_the_kept_one_is_true(monkeypatch):
    monkeypatch.setattr(reporting, "P_FYR_CHANGE", 0.05)
    rec = Recorded(tiny_config(seed=11))
    t = rec.fundq
    firm, q = rec.firm_quarter()
    key = firm * 100_000 + q
    uniq, counts = np.unique(key, return_counts=True)
    dup_keys = uniq[counts == 2]
    assert dup_keys.size >= 5
    assert counts.max() == 2
    fy, fq = t["fyearq"].to_numpy(), t["fqtr"].to_numpy()
    at = t["atq"].to_numpy(zero_copy_only=False)
    for k in dup_keys:
        rows = np.flatnonzero(key == k)
        hi = max(rows, key=lambda r: (fy[r], fq[r]))
        lo = min(rows, key=lambda r: (fy[r], fq[r]))
        assert (fy[hi], fq[hi]) > (fy[lo], fq[lo])
        assert fq[hi] == 1  # the new fiscal year starts with the kept filing
        true_at = rec.values[q[hi]]["atq"][firm[hi]]
        if not np.isnan(at[hi]):
            assert at[hi] == true_at
        if not np.isnan(at[lo]):
            assert at[lo] != true_at  # the superseded filing covers another period


def test_skipped_filings_and_item_gaps(monkeypatch):
    monkeypatch.setattr(reporting, "P_SKIP", 0.05)
    rec = Recorded(tiny_config(seed=12))
    firm, q = rec.firm_quarter()
    tr = rec.sim.traits
    alive = sum(
        int(((tr["entry_q"] <= qq) & (qq <= tr["exit_q"])).sum())
        for qq in range(1998 * 4, 2014 * 4)
    )
    filed = np.unique(firm * 100_000 + q).size
    assert 0.9 * alive < filed < 0.99 * alive
    t = rec.fundq
    # a filing without balance sheet exists, and atq is there whenever any BS item is
    bs_any = np.zeros(t.num_rows, dtype=bool)
    for name in ("ltq", "seqq", "cheq", "ppentq"):
        bs_any |= ~np.isnan(t[name].to_numpy(zero_copy_only=False))
    atq = ~np.isnan(t["atq"].to_numpy(zero_copy_only=False))
    assert (atq >= bs_any).all() and (~atq).any()
    # random item gaps: revtq missing in some rows of firms that do report it
    rev = t["revtq"].to_numpy(zero_copy_only=False)
    reporters = np.unique(firm[~np.isnan(rev)])
    assert np.isnan(rev[np.isin(firm, reporters)]).any()


def test_modern_items_and_structural_absence(recorded):
    t = recorded.fundq
    firm, q = recorded.firm_quarter()
    early = q < 2002 * 4
    for name in ("stkcoq", "drcq", "txbcofy"):
        col = t[name].to_numpy(zero_copy_only=False)
        assert np.isnan(col[early]).mean() > 0.95
        assert (~np.isnan(col[~early])).mean() > 0.3
    xrd = t["xrdq"].to_numpy(zero_copy_only=False)
    no_rd = ~recorded.sim.traits["has_rd"][firm]
    assert np.isnan(xrd[no_rd]).all()


def test_links_and_industries():
    cfg = tiny_config(firms=400)
    from proforma.app.sources.synthetic import Simulation
    from proforma.app.sources.synthetic.reporting import ccm_link_table, company_industry_table

    sim = Simulation(cfg)
    tr = sim.traits
    links = sim.links
    assert 0.5 < tr["linked"].mean() < 0.75
    table = ccm_link_table(cfg, tr, links, sim.gvkeys)
    assert set(table["linktype"].to_pylist()) == {"LU", "LC"}
    assert set(table["linkprim"].to_pylist()) <= {"P", "C"}
    assert table["linkenddt"].null_count > 0  # still-active links
    assert pc.min(pc.utf8_length(table["gvkey"])).as_py() == 6
    # link windows trim some quarters of linked firms, never of unlinked ones
    firm = np.repeat(np.arange(cfg.firms), 8)
    qq = np.tile(np.arange(cfg.q_start, cfg.q_start + 8), cfg.firms)
    inside = in_link_window(links, firm, qq)
    assert inside[~tr["linked"][firm]].all() and not inside[tr["linked"][firm]].all()
    ci = company_industry_table(cfg, tr, sim.gvkeys, np.random.default_rng(0))
    sics = np.array(ci["sich"].to_pylist())
    assert ((sics >= 6000) & (sics <= 6999)).mean() > 0.03  # financial firms exist
    with_record = set(ci["gvkey"].to_pylist())
    assert len(with_record) < cfg.firms  # firms with missing SIC have no record


def test_draw_links_deterministic():
    cfg = tiny_config(firms=50)
    from proforma.app.sources.synthetic import Simulation

    a, b = Simulation(cfg), Simulation(cfg)
    for k in a.links:
        assert np.array_equal(a.links[k], b.links[k])
    assert callable(draw_links)
