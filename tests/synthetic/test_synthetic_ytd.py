"""Year-to-date cash-flow columns: differencing within a fiscal year gives the flows."""

from __future__ import annotations

import itertools

import numpy as np

from proforma.app.sources.synthetic.reporting import CF


def test_ytd_differences_reproduce_quarterly_flows(recorded):
    t = recorded.fundq
    firm, q = recorded.firm_quarter()
    fy = t["fyearq"].to_numpy()
    fq = t["fqtr"].to_numpy()
    # the build keeps the highest (fyearq, fqtr) per firm and calendar quarter
    order = np.lexsort((fq, fy, q, firm))
    last = np.r_[(firm[order][1:] != firm[order][:-1]) | (q[order][1:] != q[order][:-1]), True]
    kept = order[last]
    checked_first = checked_diff = 0
    for it in CF:
        ytd = t[it.ytd_source].to_numpy(zero_copy_only=False)
        for a, b in itertools.pairwise(kept):
            true = recorded.values[q[b]][it.item][firm[b]]
            if np.isnan(ytd[b]):
                continue
            if fq[b] == 1:
                assert abs(ytd[b] - true) <= 1e-9 * (1 + abs(true))
                checked_first += 1
            elif (
                firm[a] == firm[b]
                and fy[a] == fy[b]
                and fq[a] == fq[b] - 1
                and not np.isnan(ytd[a])
            ):
                assert abs((ytd[b] - ytd[a]) - true) <= 1e-9 * (1 + abs(ytd[b]))
                checked_diff += 1
    assert checked_first > 100 and checked_diff > 300


def test_fiscal_quarters_follow_the_fiscal_year_end(recorded):
    t = recorded.fundq
    month = t["datadate"].to_numpy().astype("datetime64[M]").astype(np.int64) % 12 + 1
    fyr = t["fyr"].to_numpy()
    fqtr = t["fqtr"].to_numpy()
    assert np.array_equal(fqtr, ((month - fyr - 1) % 12) // 3 + 1)
    assert 0.5 < (recorded.sim.traits["fyr"] == 12).mean() < 0.8
