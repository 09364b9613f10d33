"""`--provider fake`: a deterministic offline provider that answers in the exact output
format, so the whole LLM path (prompts, cache, parsing, rebuild, standardization,
scoring) runs without a network or a key.

It reads only the user message, as a real model would: its item list and history
table. Each listed primitive is forecast by a seasonal random walk: Q_h takes the value
reported at the same quarter of the last year (rel_q = -((4 - h) mod 4)), else the
latest reported value. Draws after the first multiply each value by exp(0.02 z), z
standard normal seeded by the prompt and the draw, so repeated draws differ a little
(the decoding-noise summary has something to measure) and repeat exactly.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np

from proforma.models.llm.calls import Completion, Request

_HEADER = re.compile(r"^Account,(Q-?\d+(?:,Q-?\d+)*)$")
_HORIZONS = re.compile(r"^Forecast horizons: Q1 through Q(\d+)\.$")
NOISE = 0.02


def read_user_message(text: str) -> tuple[list[str], dict[str, dict[int, float]], int]:
    """(reported primitives, history[item][rel_q], max horizon) from a user message."""
    lines = text.splitlines()
    max_horizon = 20
    items: list[str] = []
    history: dict[str, dict[int, float]] = {}
    columns: list[int] = []
    for i, line in enumerate(lines):
        if m := _HORIZONS.match(line):
            max_horizon = int(m.group(1))
        elif line.endswith("do not output any other primitives:"):
            items = [s.strip() for s in lines[i + 2].split(",") if s.strip()]
        elif m := _HEADER.match(line):
            columns = [int(c[1:]) for c in m.group(1).split(",")]
        elif columns and "," in line and not line.startswith("==="):
            name, *cells = line.split(",")
            history[name] = {rel: float(c) for rel, c in zip(columns, cells, strict=True) if c}
    return items, history, max_horizon


def seasonal_random_walk(series: dict[int, float], horizon: int) -> float:
    """The value at the same quarter a year before the target, else the latest value."""
    same_quarter = -((4 - horizon) % 4)
    if same_quarter in series:
        return series[same_quarter]
    return series[max(series)]


class FakeProvider:
    name = "fake"
    default_model = "fake-srw"

    def __init__(self, model: str = default_model):
        self.model = model

    def settings(self) -> dict[str, Any]:
        return {"method": "seasonal random walk", "noise_after_draw_1": NOISE}

    def complete(self, request: Request) -> Completion:
        items, history, max_horizon = read_user_message(request.user)
        rng = None
        if request.draw > 1:
            seed = hashlib.sha256(f"{request.draw}\n{request.user}".encode()).digest()
            rng = np.random.default_rng(int.from_bytes(seed[:8], "little"))
        lines = []
        for h in range(1, max_horizon + 1):
            fields = []
            for item in items:
                v = seasonal_random_walk(history[item], h)
                if rng is not None:
                    v *= float(np.exp(NOISE * rng.standard_normal()))
                fields.append(f"{item}={v:.2f}")
            lines.append(f"Q{h}: " + ", ".join(fields))
        text = "\n".join(lines)
        return Completion(
            text=text,
            input_tokens=(len(request.system) + len(request.user)) // 4,
            output_tokens=len(text) // 4,
            reasoning_tokens=0,
            stop_reason="end_turn",
            response_model=self.model,
        )
