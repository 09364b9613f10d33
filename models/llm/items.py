"""The one home of the LLM protocol's item split: 55 primitives the model forecasts and
the 23 other targets rebuilt from them through the accounting identities.

The statement blocks list every item the prompt shows, in the glossary's order:
primitives first within each group, then the derived subtotals shown as context. Five
derived items are never shown (ancq, wcapq and the three carve-outs) but are rebuilt
all the same, so an LLM is scored on the same 78-target grid as every other model.
A test checks that the rebuilt statements satisfy every identity of
reference/identities.csv exactly.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

#: (prompt block title, primitives, derived items shown as context) in glossary order.
STATEMENT_BLOCKS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "INCOME STATEMENT",
        (
            "revtq",
            "cogsq",
            "xsgaq",
            "xrdq",
            "dpq",
            "stkcoq",
            "xintq",
            "nopiq",
            "spiq",
            "txtq",
            "miiq",
            "xidoq",
        ),
        ("gpq", "oibdpq", "oiadpq", "piq", "ibq", "niq", "xoprq"),
    ),
    (
        "BALANCE SHEET - ASSETS",
        ("cheq", "rectq", "invtq", "acoq", "ppentq", "dpactq", "gdwlq", "intanoq", "aoq"),
        ("intanq", "ppegtq", "actq", "atq"),
    ),
    (
        "BALANCE SHEET - LIABILITIES",
        ("apq", "dlcq", "txpq", "drcq", "lcoq", "drltq", "dlttq", "txditcq", "loq"),
        ("lctq", "ltq"),
    ),
    (
        "BALANCE SHEET - EQUITY",
        ("cstkq", "capsq", "req", "acomincq", "tstkq", "pstkq", "mibtq"),
        ("ceqq", "seqq"),
    ),
    (
        "CASH FLOW",
        (
            "oancfq",
            "fopoq",
            "capxq",
            "ivchq",
            "aqcq",
            "sivq",
            "sppeq",
            "ivstchq",
            "ivacoq",
            "sstkq",
            "prstkcq",
            "dltisq",
            "dltrq",
            "dlcchq",
            "dvq",
            "txbcofq",
            "fiaoq",
            "exreq",
        ),
        ("ivncfq", "fincfq", "fcfq"),
    ),
)

#: The 55 primitives in glossary order (the order of the prompt's item list).
PRIMITIVES: tuple[str, ...] = tuple(i for _, prims, _ in STATEMENT_BLOCKS for i in prims)

#: Derived items as signed sums of primitives and earlier derived items, in an order
#: where every term is known before it is used (the prompt glossary's formulas).
DERIVED: dict[str, tuple[tuple[int, str], ...]] = {
    "gpq": ((1, "revtq"), (-1, "cogsq")),
    "oibdpq": ((1, "gpq"), (-1, "xsgaq")),
    "oiadpq": ((1, "oibdpq"), (-1, "dpq")),
    "piq": ((1, "oiadpq"), (-1, "xintq"), (1, "nopiq"), (1, "spiq")),
    "ibq": ((1, "piq"), (-1, "txtq"), (-1, "miiq")),
    "niq": ((1, "ibq"), (1, "xidoq")),
    "xoprq": ((1, "cogsq"), (1, "xsgaq")),
    "xsgaq_ex_rd": ((1, "xsgaq"), (-1, "xrdq")),
    "intanq": ((1, "gdwlq"), (1, "intanoq")),
    "aoq_ex_intanq": ((1, "aoq"), (-1, "intanq")),
    "ppegtq": ((1, "ppentq"), (1, "dpactq")),
    "actq": ((1, "cheq"), (1, "rectq"), (1, "invtq"), (1, "acoq")),
    "atq": ((1, "actq"), (1, "ppentq"), (1, "aoq")),
    "ancq": ((1, "atq"), (-1, "actq")),
    "lctq": ((1, "apq"), (1, "dlcq"), (1, "txpq"), (1, "lcoq")),
    "ltq": ((1, "lctq"), (1, "dlttq"), (1, "txditcq"), (1, "loq")),
    "wcapq": ((1, "actq"), (-1, "lctq")),
    "loq_ex_dr": ((1, "loq"), (-1, "drltq")),
    "ceqq": ((1, "cstkq"), (1, "capsq"), (1, "req"), (-1, "tstkq")),
    "seqq": ((1, "ceqq"), (1, "pstkq")),
    "ivncfq": (
        (-1, "capxq"),
        (-1, "ivchq"),
        (-1, "aqcq"),
        (1, "sivq"),
        (1, "sppeq"),
        (1, "ivstchq"),
        (1, "ivacoq"),
    ),
    "fincfq": (
        (1, "sstkq"),
        (-1, "prstkcq"),
        (1, "dltisq"),
        (-1, "dltrq"),
        (1, "dlcchq"),
        (-1, "dvq"),
        (1, "txbcofq"),
        (1, "fiaoq"),
    ),
    "fcfq": ((1, "oancfq"), (-1, "capxq")),
}

#: Derived items the prompt shows as context (18); the other 5 are rebuilt unseen.
SHOWN_DERIVED: tuple[str, ...] = tuple(i for _, _, der in STATEMENT_BLOCKS for i in der)
HIDDEN_DERIVED: tuple[str, ...] = tuple(i for i in DERIVED if i not in SHOWN_DERIVED)


def rebuild_statements(
    primitives: Mapping[str, np.ndarray], reported: set[str] | frozenset[str], horizons: int
) -> dict[str, np.ndarray]:
    """All 78 items per horizon from forecast primitives.

    `primitives` maps a primitive to its forecasts (length `horizons`, NaN where the
    answer gave none); `reported` is the firm's reported subset. A primitive outside it
    is structurally absent and counts as zero in every sum (it is not returned itself);
    a missing forecast of a reported primitive stays NaN and makes every item built
    from it NaN, so it is left out rather than guessed.
    """
    values: dict[str, np.ndarray] = {}
    for item in PRIMITIVES:
        if item in reported:
            v = np.asarray(primitives.get(item, np.full(horizons, np.nan)), dtype=np.float64)
            if v.shape != (horizons,):
                raise ValueError(f"{item}: expected {horizons} horizons, got shape {v.shape}")
            values[item] = v
    zero = np.zeros(horizons)
    for item, terms in DERIVED.items():
        total = np.zeros(horizons)
        for sign, term in terms:
            total = total + sign * values.get(term, zero)
        values[item] = total
    return values
