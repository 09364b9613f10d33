"""A provider whose answers the tests write themselves (no network)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from proforma.models.llm.calls import Completion, ProviderError, Request


@dataclass
class RecordedProvider:
    """Answers written by the test: `answers[(draw, attempt)]` or a default function of
    the request; raises a queued ProviderError first when `errors` holds one."""

    answer: str | Callable[[Request], str] = ""  # a function of the request, or fixed text
    name: str = "recorded"
    model: str = "recorded-1"
    usage: tuple[int, int] = (1000, 500)  # input, output tokens per call
    errors: list[ProviderError] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)

    def settings(self) -> dict:
        return {"style": "recorded"}

    def complete(self, request: Request) -> Completion:
        self.requests.append(request)
        if self.errors:
            raise self.errors.pop(0)
        text = self.answer(request) if callable(self.answer) else self.answer
        return Completion(
            text=text,
            input_tokens=self.usage[0],
            output_tokens=self.usage[1],
            reasoning_tokens=self.usage[1] // 2,
            stop_reason="end_turn",
            response_id=f"r{len(self.requests)}",
            response_model=self.model,
        )
