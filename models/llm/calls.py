"""One provider call: the Request a provider gets, the Completion it returns, the
Provider interface every provider (the SDK ones and the offline fake) implements, and the
ProviderError a failed call raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Request:
    system: str
    user: str
    draw: int = 1  # 1 = the main run; 2..K repeated draws of the same prompt
    attempt: int = 1  # 2 = the one retry after an unusable answer


@dataclass
class Completion:
    text: str
    input_tokens: int = 0  # every input token, cached ones included
    output_tokens: int = 0  # every output token, reasoning included (billed as output)
    reasoning_tokens: int | None = None
    cached_input_tokens: int = 0  # the part of input_tokens read from a prompt cache
    stop_reason: str | None = None
    response_id: str | None = None
    response_model: str | None = None
    truncated: bool = False  # stopped by the output-token limit


class Provider(Protocol):
    name: str
    model: str

    def settings(self) -> dict[str, Any]: ...

    def complete(self, request: Request) -> Completion: ...


class ProviderError(Exception):
    """A call that failed; `transient` ones are worth retrying."""

    def __init__(
        self,
        message: str,
        *,
        transient: bool,
        retry_after: float | None = None,
        status: int | None = None,
    ):
        super().__init__(message)
        self.transient = transient
        self.retry_after = retry_after
        self.status = status

    @property
    def fatal(self) -> bool:
        """Every further call would fail the same way (bad key, no access, unknown model)."""
        return self.status in (401, 403, 404)
