"""The two system prompts and the per-origin user message (golden text)."""

from __future__ import annotations

import hashlib
import re

import pytest

from proforma.models.llm.items import DERIVED, HIDDEN_DERIVED, PRIMITIVES, SHOWN_DERIVED
from proforma.models.llm.prompts import OriginHistory, format_value, system_prompt, user_message

GOLDEN_USER_MESSAGE = """\
Forecast horizons: Q1 through Q20.

Firm industry (Fama-French 48): Retail.

This firm reports 5 primitive line items. Forecast ONLY these
items -- do not output any other primitives:

revtq, cogsq, spiq, cheq, dvq

Items not in this list are structurally absent for this firm
(consistently null in history); they will be treated as 0.

Historical data:

=== INCOME STATEMENT ===
Account,Q-11,Q-10,Q-9,Q-8,Q-7,Q-6,Q-5,Q-4,Q-3,Q-2,Q-1,Q0
revtq,1203.40,,,,,,,,,,1456.10,1502.77
cogsq,742.10,,,,,,,,,,,910.55
spiq,,,,,,,-12.30,,,,,
niq,,,,,,,,,,,,87.50
=== BALANCE SHEET - ASSETS ===
Account,Q-11,Q-10,Q-9,Q-8,Q-7,Q-6,Q-5,Q-4,Q-3,Q-2,Q-1,Q0
cheq,,,,,,,,,,310.22,,419.88
=== CASH FLOW ===
Account,Q-11,Q-10,Q-9,Q-8,Q-7,Q-6,Q-5,Q-4,Q-3,Q-2,Q-1,Q0
dvq,,,,,,,,,0.00,,,"""

#: sha256 of each arm's rendered system prompt: the paper's text, character for character.
GOLDEN_SYSTEM_SHA256 = {
    "unstructured": "654ac922c23820fd65dd71c31630d8a36f6e5a73db3c0e4fac4745d75dbbc0c5",
    "structured": "b3ac80cbc39edeae7eb5add8bd063fe200ef736e722933c90c07c9e366ef9942",
}


def golden_history() -> OriginHistory:
    return OriginHistory(
        firm_id=7,
        origin_q=8063,
        industry="Retail",
        values={
            "revtq": {-11: 1203.4, -1: 1456.1, 0: 1502.771},
            "cogsq": {-11: 742.1, 0: 910.549},
            "xrdq": {},  # never reported: structurally absent
            "spiq": {-5: -12.3},
            "niq": {0: 87.5},  # a derived subtotal, shown as context
            "cheq": {-2: 310.22, 0: 419.88},
            "dvq": {-3: -0.001},  # reported (a rounded zero), so in the list
            "req": {0: float("nan")},  # null: not reported
            "ancq": {0: 5.0},  # rebuilt downstream, never shown
        },
    )


def test_user_message_golden_text_for_one_firm() -> None:
    history = golden_history()
    assert history.reported_primitives == ("revtq", "cogsq", "spiq", "cheq", "dvq")
    assert user_message(history) == GOLDEN_USER_MESSAGE


def test_user_message_carries_no_identifier_or_date() -> None:
    text = user_message(golden_history())
    assert "8063" not in text and "2015" not in text and "firm_id" not in text
    assert not re.search(r"\b(19|20)\d\d\b", text)


@pytest.mark.parametrize("arm", ["unstructured", "structured"])
def test_system_prompts_are_the_papers_text(arm: str) -> None:
    text = system_prompt(arm)
    assert hashlib.sha256(text.encode()).hexdigest() == GOLDEN_SYSTEM_SHA256[arm]
    assert text.startswith(
        "You are a financial forecasting model. Given 12 quarters of "
        "historical\nfinancial data (Q-11 through Q0) for one company, "
        "forecast forward\nquarters Q1 through Q20.\n\n"
    )
    assert "{" not in text and "}" not in text
    assert text.endswith(
        "Output ONLY the Q-line forecasts. No markdown, no commentary, no code fences."
    )
    assert ("PROJECTION METHOD" in text) == (arm == "structured")
    assert ("Forecasting these line items accurately" in text) == (arm == "unstructured")


def test_arms_differ_only_in_the_steering_block() -> None:
    a, b = system_prompt("unstructured"), system_prompt("structured")
    tail = a[a.index("Each user message states the firm's industry") :]
    assert b.endswith(tail) and len(tail) > 7000
    head = "quarters Q1 through Q20.\n\n"
    assert a[: a.index(head)] == b[: b.index(head)]


def test_glossary_lists_the_primitives_and_shown_derived_items_in_order() -> None:
    text = system_prompt("unstructured")
    glossary = text[text.index("GLOSSARY") : text.index("ACCOUNTING CONSISTENCY CHECKS")]
    marked = re.findall(r"^  \[P\] (\w+)", glossary, re.MULTILINE)
    derived = re.findall(r"^      (\w+) ", glossary, re.MULTILINE)
    assert tuple(marked) == PRIMITIVES
    assert set(derived) == set(SHOWN_DERIVED) and len(derived) == 18
    for item in HIDDEN_DERIVED:
        assert item not in text
    assert set(SHOWN_DERIVED) | set(HIDDEN_DERIVED) == set(DERIVED)


def test_values_render_with_two_decimals_and_blanks() -> None:
    assert [format_value(v) for v in (1234567.891, -0.004, 0.0, None, float("nan"), -3.1)] == [
        "1234567.89",
        "0.00",
        "0.00",
        "",
        "",
        "-3.10",
    ]


def test_unknown_arm_is_refused() -> None:
    with pytest.raises(ValueError, match="structured"):
        system_prompt("freeform")
