"""The generated statements add up: all 26 identities, exactly, in every firm-quarter."""

from __future__ import annotations

import csv
import itertools

import numpy as np

from proforma.app.sources.synthetic.items import derived_values, items
from proforma.app.store.reference import REFERENCE_DIR


def _identities() -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = {}
    with open(REFERENCE_DIR / "identities.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            out.setdefault(r["identity"], []).append((r["item"], int(r["sign"])))
    return out


def test_all_identities_hold_exactly_before_gaps(recorded):
    ids = _identities()
    assert len(ids) == 26
    tr = recorded.sim.traits
    checked = 0
    for q, values in recorded.values.items():
        alive = (tr["entry_q"] <= q) & (q <= tr["exit_q"])
        if not alive.any():
            continue
        v = dict(values)
        v.update(derived_values(values))
        for name, terms in ids.items():
            resid = sum(sign * v[item][alive] for item, sign in terms)
            scale = np.max(np.abs([v[item][alive] for item, _ in terms]), axis=0)
            assert np.all(np.abs(resid) <= 1e-9 * np.maximum(scale, 1e-9)), (name, q)
        checked += int(alive.sum())
    assert checked > 1000


def test_all_78_items_generated_finite(recorded):
    names = {it.item for it in items()}
    assert len(names) == 78
    tr = recorded.sim.traits
    for q, values in recorded.values.items():
        alive = (tr["entry_q"] <= q) & (q <= tr["exit_q"])
        v = dict(values)
        v.update(derived_values(values))
        assert names <= set(v)
        for name in names:
            assert np.isfinite(v[name][alive]).all(), (name, q)


def test_balance_sheet_rolls_forward_from_flows(recorded):
    """Cash moves with the three cash-flow sections, retained earnings with income less
    dividends, net PP&E with capex, depreciation, impairments and disposals."""
    tr = recorded.sim.traits
    qs = sorted(recorded.values)
    for q0, q1 in itertools.pairwise(qs):
        a, b = recorded.values[q0], recorded.values[q1]
        alive = (tr["entry_q"] <= q0) & (q1 <= tr["exit_q"])
        d_cash = b["cheq"] - a["cheq"]
        flows = b["oancfq"] + b["ivncfq"] + b["fincfq"] + b["exreq"]
        np.testing.assert_allclose(d_cash[alive], flows[alive], rtol=1e-9, atol=1e-7)
        np.testing.assert_allclose(
            (b["req"] - a["req"])[alive], (b["niq"] - b["dvq"])[alive], rtol=1e-9, atol=1e-7
        )
        debt_a, debt_b = a["dlcq"] + a["dlttq"], b["dlcq"] + b["dlttq"]
        np.testing.assert_allclose(
            (debt_b - debt_a)[alive],
            (b["dltisq"] - b["dltrq"] + b["dlcchq"])[alive],
            rtol=1e-9,
            atol=1e-7,
        )
        assert (b["tstkq"] - a["tstkq"] >= -1e-9)[alive].all()  # buybacks only add
        assert (b["capxq"] >= 0).all() and (b["dvq"] >= 0).all()
