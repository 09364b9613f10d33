"""`proforma scenario` pieces: the seeds it uses and its table at 80 and 120 columns."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from report_helpers import save_checkpoint as save_small_checkpoint
from rich.console import Console

from proforma.app.flows.scenario import Scenario, available_seeds, load_forma, scenario_view
from proforma.contracts.errors import UserError

ITEMS = ["aoq_ex_intanq", "xsgaq_ex_rd", "revtq", "loq_ex_dr", "acomincq"]


def save_checkpoint(seed: int, complete: bool = True) -> None:
    save_small_checkpoint(seed, complete, d_model=8, n_layers=1, n_heads=1, d_ff=8)


def test_a_scenario_uses_the_seeds_that_were_trained(settings):
    with pytest.raises(UserError, match="No Forma checkpoint for preset 'small'.*train one"):
        load_forma("small", "gaussian", None)
    save_checkpoint(60)
    save_checkpoint(63)
    save_checkpoint(64, complete=False)  # still training
    assert available_seeds("small", "gaussian") == [60, 63, 64]
    models, seeds, _ = load_forma("small", "gaussian", None)
    assert seeds == [60, 63] and len(models) == 2  # the demo's one seed works, unfinished skipped
    with pytest.raises(
        UserError, match=r"seed\(s\) 61, 62 .*trained: 60, 63, 64.*Leave --seeds out"
    ):
        load_forma("small", "gaussian", [60, 61, 62])
    with pytest.raises(UserError, match="stopped after epoch"):
        load_forma("small", "gaussian", [64])


def scenario(n_horizons: int = 20) -> Scenario:
    rows: dict[str, list[Any]] = {
        k: []
        for k in ("item_id", "horizon", "item", "pinned", "expected_usd", "lo_80_usd", "hi_80_usd")
    }
    for i, name in enumerate(ITEMS, 1):
        for h in range(1, n_horizons + 1):
            base = 123456.789 * (i + h) * (-1 if name == "acomincq" else 1)
            rows["item_id"].append(i)
            rows["horizon"].append(h)
            rows["item"].append(name)
            rows["pinned"].append(name == "revtq" and h <= 4)
            rows["expected_usd"].append(base)
            rows["lo_80_usd"].append(base * 0.83 - 1e4)
            rows["hi_80_usd"].append(base * 1.21 + 1e4)
    return Scenario("001004", 2015 * 4 + 3, 4, pa.table(rows), pa.table({"violation": [0.01]}))


@pytest.mark.parametrize("width", [80, 120])
def test_the_table_keeps_every_item_name_at_narrow_widths(width):
    console = Console(width=width, record=True, color_system=None)
    console.print(scenario_view(scenario(), [1, 4, 8, 12, 20], 80))
    text = console.export_text()
    for name in ITEMS:
        assert name in text, (width, text)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "*" in text and "[" in text  # a pinned cell and an interval


def test_dollar_cells_are_short():
    from proforma.app.flows.scenario import short_number

    assert short_number(1234.5) == "1234" or short_number(1234.5) == "1235"
    assert short_number(-2.5e7) == "-25M" and short_number(3.21e10) == "32.1B"
    assert short_number(float("inf")) == "inf" and short_number(np.nan) == "nan"
