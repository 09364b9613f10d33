"""The generator's variations for edge-rule checks (docs/synthetic.md): modern items
without training data, items only in test, single-quarter firms, the fiscal-year change
rate; at their defaults the panel and its recorded parameters are unchanged."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest
from synthetic_helpers import tiny_config

from proforma.app.sources.synthetic import Simulation, SyntheticSource
from proforma.contracts.errors import UserError


def _fundq(**overrides):
    import pyarrow as pa

    return pa.Table.from_batches(list(Simulation(tiny_config(**overrides)).history()))


def _years_reported(t, column: str) -> set[int]:
    rows = t.filter(pc.is_valid(t[column]))
    return {d.year for d in rows["datadate"].to_pylist()}


def test_defaults_leave_the_panel_and_its_parameters_alone():
    base = _fundq()
    same = _fundq(no_train_items=(), test_only_items=(), single_quarter_share=0.0)
    assert base.equals(same)
    params = SyntheticSource(tiny_config()).parameters()
    assert not {"no_train_items", "test_only_items", "single_quarter_share"} & set(params)
    assert "fyr_change_rate" not in params
    varied = SyntheticSource(tiny_config(no_train_items=("stkcoq",))).parameters()
    assert varied["no_train_items"] == ["stkcoq"]


def test_items_without_training_data_and_only_in_test():
    base = _fundq()
    t = _fundq(no_train_items=("revtq",), test_only_items=("oancfq",))
    assert min(_years_reported(base, "revtq")) < 2002  # reported before, in the default
    assert min(_years_reported(t, "revtq")) >= 2002
    assert min(_years_reported(t, "oancfy")) >= 2010
    # availability is masked, nothing else drawn differently
    assert t["atq"].equals(base["atq"]) and t["gvkey"].equals(base["gvkey"])


def test_single_quarter_firms():
    t = _fundq(single_quarter_share=0.3)
    counts = pc.value_counts(t["gvkey"]).field("counts").to_numpy()
    base = pc.value_counts(_fundq()["gvkey"]).field("counts").to_numpy()
    assert (counts == 1).sum() >= 10 > (base == 1).sum()


def test_fiscal_year_change_rate():
    def dups(t) -> int:
        keys = [
            (g, d.year, (d.month - 1) // 3)
            for g, d in zip(t["gvkey"].to_pylist(), t["datadate"].to_pylist(), strict=True)
        ]
        return len(keys) - len(set(keys))

    assert dups(_fundq(fyr_change_rate=0.05)) > 5 * max(dups(_fundq()), 1)


@pytest.mark.parametrize(
    "bad",
    [
        {"no_train_items": ("gpq",)},
        {"test_only_items": ("nope",)},
        {"single_quarter_share": 1.5},
        {"fyr_change_rate": -0.1},
    ],
)
def test_bad_variations_are_refused(bad):
    with pytest.raises(UserError):
        tiny_config(**bad)
