"""Strict parsing of good and bad answers."""

from __future__ import annotations

import numpy as np

from proforma.models.llm.parsing import better_of, parse_answer

ITEMS = ["revtq", "cogsq", "cheq"]


def answer(horizons=range(1, 21), line=lambda h: f"revtq={100 + h}.25, cogsq=-{h}.5, cheq=1e3"):
    return "\n".join(f"Q{h}: {line(h)}" for h in horizons)


def test_a_good_answer_parses_every_cell() -> None:
    parsed = parse_answer(answer(), ITEMS)
    assert parsed.complete and parsed.cells == parsed.expected == 60
    assert parsed.reason is None and parsed.notes == []
    assert parsed.values["revtq"][0] == 101.25 and parsed.values["cogsq"][19] == -20.5
    assert parsed.values["cheq"].tolist() == [1000.0] * 20


def test_spacing_order_and_surrounding_text_lose_nothing() -> None:
    text = (
        "```\n"
        + "\n".join(f"  Q{h} :cheq = 5 ,revtq=+1.,  cogsq=.5, " for h in range(1, 21))
        + "\n```\nHope this helps.\n"
    )
    parsed = parse_answer(text, ITEMS)
    assert parsed.complete and parsed.values["revtq"][5] == 1.0 and parsed.values["cogsq"][0] == 0.5
    assert parsed.notes == ["3 line(s) of other text ignored: '```', '```', 'Hope this helps.'"]


def test_items_outside_the_list_and_derived_items_are_ignored_with_a_note() -> None:
    parsed = parse_answer(
        answer(line=lambda h: "revtq=1, cogsq=2, cheq=3, xrdq=0, atq=9, foo=1"), ITEMS
    )
    assert parsed.complete and parsed.cells == 60
    assert parsed.notes == [
        "items outside the firm's list ignored: xrdq",
        "derived items ignored: atq",
        "unknown names ignored: foo",
    ]


def test_a_partial_answer_is_incomplete_and_keeps_what_it_has() -> None:
    parsed = parse_answer(answer(range(1, 17)), ITEMS)
    assert not parsed.complete and parsed.cells == 48
    assert parsed.reason == "horizons missing: Q17, Q18, Q19 and 1 more"
    assert np.isnan(parsed.values["revtq"][16:]).all()


def test_a_missing_item_is_named() -> None:
    parsed = parse_answer(
        answer(line=lambda h: "revtq=1, cheq=3" if h == 7 else "revtq=1, cogsq=2, cheq=3"), ITEMS
    )
    assert parsed.cells == 59 and parsed.reason == "1 item(s) missing on some Q-lines: cogsq"
    assert np.isnan(parsed.values["cogsq"][6])


def test_non_numeric_values_are_never_read_as_numbers() -> None:
    parsed = parse_answer(
        answer(
            line=lambda h: (
                f"revtq={'n/a' if h == 2 else 'nan' if h == 3 else 1}, cogsq=$4, cheq=inf"
            )
        ),
        ITEMS,
    )
    assert parsed.cells == 18  # only revtq, at the 18 other horizons
    assert parsed.reason == (
        "42 non-numeric value(s): cogsq at Q1 '$4', cheq at Q1 'inf', revtq at Q2 'n/a' and 39 more"
    )


def test_a_thousands_separator_drops_the_whole_line() -> None:
    parsed = parse_answer(
        answer(
            line=lambda h: (
                "revtq=1,203.40, cogsq=2, cheq=3" if h == 4 else "revtq=1, cogsq=2, cheq=3"
            )
        ),
        ITEMS,
    )
    assert parsed.cells == 57 and np.isnan(parsed.values["revtq"][3])  # never 1.0
    assert parsed.reason == "1 Q-line(s) dropped for a field that is not item=value: Q4 '203.40'"


def test_repeated_lines_and_fields_keep_the_first_and_are_problems() -> None:
    text = answer() + "\nQ3: revtq=999, cogsq=1, cheq=1"
    text = text.replace("Q5: revtq=105.25", "Q5: revtq=105.25, revtq=7")
    parsed = parse_answer(text, ITEMS)
    assert parsed.values["revtq"][2] == 103.25 and parsed.values["revtq"][4] == 105.25
    assert parsed.cells == 60 and not parsed.complete
    assert parsed.reason == "repeated (first kept): revtq at Q5, Q3"


def test_no_q_lines_and_horizons_out_of_range() -> None:
    assert parse_answer("", ITEMS).reason == "no Q-lines for Q1..Q20 in the answer"
    assert parse_answer("I cannot forecast this firm.", ITEMS).cells == 0
    parsed = parse_answer(answer() + "\nQ21: revtq=1, cogsq=1, cheq=1\nQ0: revtq=1", ITEMS)
    assert parsed.cells == 60 and parsed.reason == (
        "horizon Q21 outside Q1..Q20; horizon Q0 outside Q1..Q20"
    )


def test_the_better_attempt_is_used_whole() -> None:
    partial, complete = parse_answer(answer(range(1, 10)), ITEMS), parse_answer(answer(), ITEMS)
    worse = parse_answer(answer(range(1, 3)), ITEMS)
    assert better_of(partial, complete) is complete
    assert better_of(complete, partial) is complete
    assert better_of(partial, worse) is partial
    assert better_of(worse, partial) is partial
    assert better_of(partial, parse_answer(answer(range(1, 10)), ITEMS)) is partial  # tie: first
