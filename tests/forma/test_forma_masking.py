"""Identity-aware grouped masking and pinned-future masking."""

from __future__ import annotations

import numpy as np

from proforma.models.forma.masking import Identities, complete_instances, mask_future, mask_history
from tests.forma.conftest import TOY_IDENTITIES


def _window(items=(1, 2, 3, 4, 5, 6), drop=()):
    """Every item at every historical quarter -11..0, except the (item, q) pairs in drop."""
    rq, it = [], []
    for q in range(-11, 1):
        for i in items:
            if (i, q) not in drop:
                rq.append(q)
                it.append(i)
    return np.array(rq), np.array(it)


def test_selected_instances_never_mask_exactly_one_member():
    rq, it = _window()
    rng = np.random.default_rng(0)
    ks = set()
    for _ in range(300):
        hidden = mask_history(rq, it, TOY_IDENTITIES, rng, p_select=1.0, p_ungrouped=0.0)
        for members in TOY_IDENTITIES.members:
            for q in range(-11, 1):
                sel = (rq == q) & np.isin(it, members)
                k = int(hidden[sel].sum())
                assert k >= 2  # every instance is selected, so each hides k in {2..N}
                ks.add(k)
        assert not hidden[it == 6].any()  # ungrouped item, p_ungrouped = 0
    assert ks == {2, 3}  # k in 2..N with N = 3 (overlaps only add members of the other instance)


def test_disjoint_identities_at_random_selection_mask_zero_or_at_least_two():
    ids = Identities.from_arrays(["A"] * 3 + ["B"] * 3, [1, 2, 3, 4, 5, 6])
    rq, it = _window()
    rng = np.random.default_rng(1)
    counts = []
    for _ in range(200):
        hidden = mask_history(rq, it, ids, rng, p_select=0.1, p_ungrouped=0.05)
        for members in ids.members:
            for q in range(-11, 1):
                counts.append(int(hidden[(rq == q) & np.isin(it, members)].sum()))
    hidden_counts = np.array(counts)
    assert 1 not in hidden_counts
    assert abs((hidden_counts > 0).mean() - 0.1) < 0.02  # selection rate 0.1


def test_incomplete_instances_are_never_selected():
    # item 2 missing at q=-3: instance (A, -3) is incomplete; item 1 stays grouped (A is
    # complete elsewhere) so it is not singleton-masked either: never hidden at q=-3.
    rq, it = _window(drop={(2, -3)})
    complete, _ = complete_instances(rq, it, TOY_IDENTITIES, 12)
    assert not complete[-3 + 11, 0] and complete[-3 + 11, 1] and complete.sum() == 23
    rng = np.random.default_rng(2)
    for _ in range(100):
        hidden = mask_history(rq, it, TOY_IDENTITIES, rng, p_select=1.0, p_ungrouped=1.0)
        assert not hidden[(rq == -3) & (it == 1)].any()
        assert hidden[it == 6].all()  # ungrouped item 6 at p_ungrouped = 1


def test_ungrouped_rule_covers_items_with_no_complete_instance_in_the_window():
    # item 2 never reported: identity A is never complete, so items 1 and 6 are ungrouped
    # (masked as singletons at 5%); items 3, 4, 5 stay grouped through B.
    rq, it = _window(items=(1, 3, 4, 5, 6, 0))
    rng = np.random.default_rng(3)
    hid = np.zeros(len(rq))
    n = 400
    for _ in range(n):
        hid += mask_history(rq, it, TOY_IDENTITIES, rng, p_select=0.0, p_ungrouped=0.05)
    rate = hid / n
    for item in (1, 6, 0):  # the scale token (item 0) is maskable like any ungrouped tuple
        assert abs(rate[it == item].mean() - 0.05) < 0.01
    for item in (3, 4, 5):
        assert rate[it == item].max() == 0


def test_future_masking_reveals_about_five_percent_outside_the_block():
    rng = np.random.default_rng(4)
    observed = np.ones(400, dtype=bool)
    observed[::10] = False  # unrealized query slots
    blocks, visible = 0, []
    for _ in range(600):
        h = mask_future(observed, rng)
        assert h[~observed].all()  # unrealized queries are always hidden
        if h.all():
            blocks += 1
        else:
            visible.append((~h[observed]).mean())
    assert abs(blocks / 600 - 0.5) < 0.07
    assert abs(np.mean(visible) - 0.05) < 0.005
