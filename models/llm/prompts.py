"""The LLM protocol's prompts: the two system prompts and the per-origin user message.

The user message carries the forecast horizons, the firm's Fama-French 48 industry by
name, its reported primitives, and its 12-quarter reported history (millions, as
Compustat reports) in one CSV-like block per statement, rows in glossary order, a row
suppressed when it is empty across the whole history. No firm identifier and no date
enters a prompt: quarters are relative (Q-11..Q0). docs/llm.md shows an example.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from proforma.models.llm import prompt_text
from proforma.models.llm.items import PRIMITIVES, STATEMENT_BLOCKS

LOOKBACK_QS = 12
LOOKBACK_FIRST = LOOKBACK_QS - 1
MAX_HORIZON = 20
ARMS = ("unstructured", "structured")


def system_prompt(
    arm: str, *, lookback_qs: int = LOOKBACK_QS, max_horizon: int = MAX_HORIZON
) -> str:
    """The arm's system prompt with {lookback_qs}/{lookback_first}/{max_horizon} filled."""
    if arm not in ARMS:
        raise ValueError(f"Unknown prompt arm {arm!r}: use one of {', '.join(ARMS)}")
    block = (
        prompt_text.UNSTRUCTURED_BLOCK if arm == "unstructured" else prompt_text.STRUCTURED_BLOCK
    )
    text = f"{prompt_text.OPENING}\n{block}\n{prompt_text.REMAINDER}"
    for token, value in (
        ("{lookback_qs}", lookback_qs),
        ("{lookback_first}", lookback_qs - 1),
        ("{max_horizon}", max_horizon),
    ):
        text = text.replace(token, str(value))
    return text


@dataclass(frozen=True)
class OriginHistory:
    """What one origin's prompt is made of: reported values by item and relative quarter.

    `values[item][rel_q]` is the value the firm reported at rel_q (-11..0), in reported
    units; a quarter the firm did not report the item in is simply absent.
    """

    firm_id: int
    origin_q: int
    industry: str
    values: Mapping[str, Mapping[int, float]] = field(default_factory=dict)

    @property
    def reported_primitives(self) -> tuple[str, ...]:
        """The firm's reported subset: primitives non-null somewhere in the history."""
        return tuple(
            i for i in PRIMITIVES if any(_finite(v) for v in self.values.get(i, {}).values())
        )


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def format_value(v: float | None) -> str:
    """Two decimals, no thousands separators; an unreported cell is an empty field."""
    if not _finite(v):
        return ""
    text = f"{v:.2f}"
    return "0.00" if text == "-0.00" else text


def user_message(
    history: OriginHistory, *, lookback_qs: int = LOOKBACK_QS, max_horizon: int = MAX_HORIZON
) -> str:
    """The per-origin user message (both arms)."""
    reported = history.reported_primitives
    rel = list(range(-(lookback_qs - 1), 1))
    header = "Account," + ",".join(f"Q{r}" for r in rel)
    lines = [
        f"Forecast horizons: Q1 through Q{max_horizon}.",
        "",
        f"Firm industry (Fama-French 48): {history.industry}.",
        "",
        f"This firm reports {len(reported)} primitive line items. Forecast ONLY these",
        "items -- do not output any other primitives:",
        "",
        ", ".join(reported),
        "",
        "Items not in this list are structurally absent for this firm",
        "(consistently null in history); they will be treated as 0.",
        "",
        "Historical data:",
        "",
    ]
    for title, primitives, derived in STATEMENT_BLOCKS:
        rows = []
        for item in primitives + derived:
            cells = [format_value(history.values.get(item, {}).get(r)) for r in rel]
            if any(cells):
                rows.append(f"{item}," + ",".join(cells))
        if rows:
            lines += [f"=== {title} ===", header, *rows]
    return "\n".join(lines)
