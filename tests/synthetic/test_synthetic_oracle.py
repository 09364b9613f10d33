"""The oracle: sampled test origins, paths simulated from the true state at the origin."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from synthetic_helpers import tiny_config

from proforma.app.sources.synthetic import Simulation
from proforma.app.sources.synthetic import economics as econ
from proforma.app.sources.synthetic.items import derived_values, items
from proforma.app.sources.synthetic.oracle import origins_table, path_batches
from proforma.app.sources.synthetic.reporting import in_link_window


def test_origins_are_eligible_test_firm_quarters():
    cfg = tiny_config(firms=200, oracle_origins=40)
    sim = Simulation(cfg)
    tr, f, q = sim.traits, sim.origin_firm, sim.origin_q
    assert f.size == 40
    assert len(set(zip(f.tolist(), q.tolist(), strict=True))) == 40
    assert (q >= 2010 * 4).all() and (q < cfg.q_end).all()
    assert (q >= tr["entry_q"][f] + 3).all() and (q <= tr["exit_q"][f]).all()
    sic = tr["sic"][f]
    assert not (((sic >= 6000) & (sic <= 6999)) & ~tr["sic_missing"][f]).any()
    assert in_link_window(sim.links, f, q).all()


def test_oracle_starts_from_the_true_state(recorded):
    sim = recorded.sim
    cap = sim.ensure_captured()
    for i, (f, q) in enumerate(zip(sim.origin_firm, sim.origin_q, strict=True)):
        for k in econ.STATE_KEYS:
            assert cap["state"][k][i] == recorded.states[q][k][f], k
    batches = list(path_batches(sim))
    h0 = pa.Table.from_batches(batches[:1])
    assert set(h0["horizon"].to_pylist()) == {0}
    truth = {q: dict(v, **derived_values(v)) for q, v in recorded.values.items()}
    names = [it.item for it in items()]
    assert h0.num_rows == sim.origin_q.size
    for row in h0.to_pylist():
        i = row["origin_id"]
        for name in names:
            assert row[name] == np.float32(truth[sim.origin_q[i]][name][sim.origin_firm[i]]), name


def test_same_shocks_from_the_true_state_reproduce_the_realized_future(recorded):
    """The oracle's simulator, started from the captured state with the history's own
    shocks, walks exactly the realized path: the paths differ only by their draws."""
    sim = recorded.sim
    q = int(sim.origin_q[0])
    not_reinit = np.maximum(sim.traits["entry_q"] - 4, sim.q0) != q + 1
    st = econ.copy(recorded.states[q])
    rng = np.random.Generator(np.random.PCG64())
    rng.bit_generator.state = recorded.rng_states[q + 1]
    values = econ.step(
        sim.traits,
        st,
        np.full(sim.n, (q + 1) % 4),
        (q + 1) // 4,
        np.full(sim.n, sim.macro(q + 1)),
        rng,
    )
    for name, v in values.items():
        np.testing.assert_array_equal(
            v[not_reinit], recorded.values[q + 1][name][not_reinit], err_msg=name
        )


def test_paths_cover_items_horizons_and_spread(recorded):
    sim = recorded.sim
    cfg = sim.cfg
    t = pa.Table.from_batches(list(path_batches(sim)))
    k = sim.origin_q.size
    assert t.num_rows == k * (1 + cfg.oracle_paths * cfg.oracle_horizon)
    assert t.column_names[3:] == [it.item for it in items()]
    h, origin, v = np.array(t["horizon"]), np.array(t["origin_id"]), np.array(t["revtq"])
    sel = (h == cfg.oracle_horizon) & (origin == 0)
    assert sel.sum() == cfg.oracle_paths and np.std(v[sel]) > 0
    for name in t.column_names[3:]:
        assert np.isfinite(np.array(t[name])).all(), name
    o = origins_table(sim)
    assert o.num_rows == k and o["gvkey"].to_pylist() == sim.gvkeys[sim.origin_firm].tolist()
