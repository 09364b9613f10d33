"""The 55 primitives / 23 rebuilt items split and the rebuild through the identities."""

from __future__ import annotations

import csv
from collections import defaultdict

import numpy as np
import pytest

from proforma.contracts import ROOT
from proforma.models.llm.items import (
    DERIVED,
    HIDDEN_DERIVED,
    PRIMITIVES,
    SHOWN_DERIVED,
    rebuild_statements,
)


def _reference_items() -> list[str]:
    with open(ROOT / "reference" / "items.csv") as f:
        return [r["item"] for r in csv.DictReader(f)]


def _identities() -> dict[str, list[tuple[str, int]]]:
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    with open(ROOT / "reference" / "identities.csv") as f:
        for r in csv.DictReader(f):
            out[r["identity"]].append((r["item"], int(r["sign"])))
    return out


def test_primitives_and_rebuilt_items_partition_the_78_targets() -> None:
    assert len(PRIMITIVES) == len(set(PRIMITIVES)) == 55
    assert len(DERIVED) == 23 and len(SHOWN_DERIVED) == 18
    assert set(HIDDEN_DERIVED) == {"ancq", "wcapq", "aoq_ex_intanq", "loq_ex_dr", "xsgaq_ex_rd"}
    assert not set(PRIMITIVES) & set(DERIVED)
    assert sorted(PRIMITIVES + tuple(DERIVED)) == sorted(_reference_items())


def _residuals(values: dict[str, np.ndarray]) -> dict[str, float]:
    out = {}
    for identity, terms in _identities().items():
        residual = sum(sign * values[item] for item, sign in terms)
        scale = sum(abs(values[item]) for item, _ in terms)
        out[identity] = float(np.max(np.abs(residual) / scale))
    return out


def test_rebuilt_statements_satisfy_every_identity_exactly() -> None:
    rng = np.random.default_rng(0)
    primitives = {i: rng.normal(100, 50, size=20) for i in PRIMITIVES}
    values = rebuild_statements(primitives, set(PRIMITIVES), 20)
    assert set(values) == set(_reference_items())
    residuals = _residuals(values)
    # The accounting equation (BS13) links the two sides of the balance sheet: it is a
    # check the model's primitives must pass, not a construction of the rebuild.
    assert residuals.pop("BS13") > 1e-3
    assert max(residuals.values()) <= 1e-12
    # Primitives that balance (retained earnings set by the equation) satisfy it too.
    primitives["req"] = primitives["req"] + (
        values["atq"] - values["ltq"] - primitives["mibtq"] - values["seqq"]
    )
    assert max(_residuals(rebuild_statements(primitives, set(PRIMITIVES), 20)).values()) <= 1e-12


def test_absent_primitives_count_as_zero_and_missing_ones_are_left_out() -> None:
    reported = {"revtq", "cogsq", "xsgaq"}
    primitives = {
        "revtq": np.array([10.0, 11.0]),
        "cogsq": np.array([4.0, np.nan]),
        "xsgaq": np.array([1.0, 1.0]),
    }
    values = rebuild_statements(primitives, reported, 2)
    assert "xrdq" not in values and "dpq" not in values  # absent: not forecast themselves
    assert values["xsgaq_ex_rd"].tolist() == [1.0, 1.0]  # xrdq absent: zero
    assert values["gpq"][0] == 6.0 and np.isnan(values["gpq"][1])  # cogsq missing at h=2
    assert values["oiadpq"][0] == 5.0 and np.isnan(values["niq"][1])
    assert values["atq"].tolist() == [0.0, 0.0]  # no balance-sheet primitive reported
    assert values["xoprq"][0] == 5.0 and np.isnan(values["xoprq"][1])


def test_rebuild_rejects_a_wrong_number_of_horizons() -> None:
    with pytest.raises(ValueError, match="revtq"):
        rebuild_statements({"revtq": np.zeros(3)}, {"revtq"}, 20)
