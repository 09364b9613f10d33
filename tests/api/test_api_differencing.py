"""The differencing probe (issue 34, item 2; issue 47, item 2; docs/service.md, "The truth:
threat model").

A non-admin user spends its daily limit (4 uploads in the tests) on two days in a row on
pairs of uploads that differ in a few target cells only (+60 in one, -60 in the other, a
tiny sigma there), each target with its own horizon and item, so that every public number
of a pair that holds a target is a linear equation in the targets' truths: MSE, MAE and
CRPS at every level the snapshot publishes (the whole footprint, per horizon, item,
statement, item x horizon), the numbers the API and the leaderboards show too. The attack
(tests/differencing_attack.py) solves them all at once by generalized least squares,
weighted by each upload's grant, and must miss the truth by at least the stated
tolerance (RMS). The same attack on the warehouse's exact numbers recovers every target
to 1e-6, so the probe can fail. bench/differencing.py runs it over a whole week.
"""

from __future__ import annotations

from differencing_probe import run_probe
from service_helpers import Api

from proforma.app.read import noise_budget


def test_every_public_channel_combined_recovers_no_truth(api: Api) -> None:
    got = run_probe(api, days=2, pairs_a_day=2, daily_limit=4)
    assert got.exact_rms < 1e-6  # the attack works on exact numbers
    print(f"differencing probe: RMS error {got.public_rms:.3f} over {got.targets} targets")
    assert got.public_rms >= noise_budget.TOLERANCE
