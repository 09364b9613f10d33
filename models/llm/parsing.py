"""Strict parsing of an LLM answer in the protocol's output format.

The format (system prompt, OUTPUT FORMAT): one line per horizon,
`Q<h>: item=value, item=value, ...`, for Q1..Q20 and exactly the firm's reported
primitives. Anything that loses a cell is a problem: a missing or repeated horizon, a
missing item, a field that is not `item=number`, a value that is not a plain decimal
number (no thousands separators, units, NaN or infinity). Problems make the answer
incomplete (the runner asks once more). Deviations that lose nothing are notes: blank
lines or other text around the Q-lines, items outside the firm's list, derived items
(all ignored). Cells that stay missing are left out, never filled.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from proforma.models.llm.items import DERIVED, PRIMITIVES

_Q_LINE = re.compile(r"^Q\s*(-?\d+)\s*:\s*(.*)$")
_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_MAX_EXAMPLES = 3


@dataclass
class ParsedAnswer:
    """Parsed forecasts: `values[item]` has one entry per horizon (NaN where missing)."""

    values: dict[str, np.ndarray]
    expected: int
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def cells(self) -> int:
        return int(sum(np.isfinite(v).sum() for v in self.values.values()))

    @property
    def complete(self) -> bool:
        return not self.problems and self.cells == self.expected

    @property
    def reason(self) -> str | None:
        """One line saying why the answer is incomplete (None when complete)."""
        return "; ".join(self.problems) if self.problems else None


def _examples(things: Sequence[str]) -> str:
    shown = ", ".join(things[:_MAX_EXAMPLES])
    return shown + (
        f" and {len(things) - _MAX_EXAMPLES} more" if len(things) > _MAX_EXAMPLES else ""
    )


def parse_answer(text: str, items: Sequence[str], max_horizon: int = 20) -> ParsedAnswer:
    """Parse `text` for `items` (the firm's reported primitives) at horizons 1..max_horizon."""
    wanted = set(items)
    values = {i: np.full(max_horizon, np.nan) for i in items}
    answer = ParsedAnswer(values, expected=len(items) * max_horizon)
    other_text: list[str] = []
    seen: set[int] = set()
    bad_fields: list[str] = []
    non_numeric: list[str] = []
    repeated: list[str] = []
    outside: set[str] = set()
    derived: set[str] = set()
    unknown: set[str] = set()
    given: dict[str, set[int]] = {i: set() for i in items}  # horizons where a field named it
    parsed: set[int] = set()  # Q-lines whose fields were read (not dropped)
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _Q_LINE.match(line)
        if not m:
            other_text.append(line[:40])
            continue
        h = int(m.group(1))
        if not 1 <= h <= max_horizon:
            answer.problems.append(f"horizon Q{h} outside Q1..Q{max_horizon}")
            continue
        if h in seen:
            repeated.append(f"Q{h}")
            continue
        seen.add(h)
        in_line: set[str] = set()
        parts = [p.strip() for p in m.group(2).split(",") if p.strip()]
        malformed = [p for p in parts if not _FIELD.match(p)]
        if malformed:
            # e.g. a thousands separator ("revtq=1,203.40"): which value a stray piece
            # belongs to is unknowable, so the whole line is dropped
            bad_fields.append(f"Q{h} {malformed[0][:30]!r}")
            continue
        parsed.add(h)
        for part in parts:
            f = _FIELD.match(part)
            assert f is not None  # lines with a malformed part were skipped above
            name, value = f.group(1).lower(), f.group(2)
            if name not in wanted:
                (outside if name in PRIMITIVES else derived if name in DERIVED else unknown).add(
                    name
                )
                continue
            if name in in_line:
                repeated.append(f"{name} at Q{h}")
                continue
            in_line.add(name)
            given[name].add(h)
            if not _NUMBER.match(value):
                non_numeric.append(f"{name} at Q{h} {value[:20]!r}")
                continue
            values[name][h - 1] = float(value)
    if not seen:
        answer.problems.append(f"no Q-lines for Q1..Q{max_horizon} in the answer")
    missing_h = [f"Q{h}" for h in range(1, max_horizon + 1) if h not in seen]
    if seen and missing_h:
        answer.problems.append(f"horizons missing: {_examples(missing_h)}")
    if bad_fields:
        answer.problems.append(
            f"{len(bad_fields)} Q-line(s) dropped for a field that is not "
            f"item=value: {_examples(bad_fields)}"
        )
    if non_numeric:
        answer.problems.append(f"{len(non_numeric)} non-numeric value(s): {_examples(non_numeric)}")
    if repeated:
        answer.problems.append(f"repeated (first kept): {_examples(repeated)}")
    absent = [i for i in items if parsed - given[i]]
    if absent:
        answer.problems.append(
            f"{len(absent)} item(s) missing on some Q-lines: {_examples(absent)}"
        )
    if other_text:
        answer.notes.append(
            f"{len(other_text)} line(s) of other text ignored: "
            f"{_examples([repr(t) for t in other_text])}"
        )
    for label, names in (
        ("items outside the firm's list ignored", outside),
        ("derived items ignored", derived),
        ("unknown names ignored", unknown),
    ):
        if names:
            answer.notes.append(f"{label}: {_examples(sorted(names))}")
    return answer


def better_of(first: ParsedAnswer, second: ParsedAnswer) -> ParsedAnswer:
    """The answer to use after a retry: the complete one, else the one with more cells
    (the first on a tie). Answers are never mixed: one draw's statements stay together."""
    if second.complete and not first.complete:
        return second
    if first.complete:
        return first
    return second if second.cells > first.cells else first
