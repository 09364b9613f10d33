"""LLM providers behind one small interface: the official `anthropic` and `openai` SDKs
and an offline deterministic `fake`.

A provider turns a Request (system and user text, the draw and attempt numbers) into a
Completion (text, token counts, stop reason): proforma.models.llm.calls. Keys come from the
environment (ANTHROPIC_API_KEY, OPENAI_API_KEY) and never enter a record. `settings()` is what is
recorded per call and hashed into the cache key (reasoning settings, temperature, max
tokens). The SDKs' own retries are off: `call_with_retries` retries transient failures
(rate limits, 5xx, timeouts, connection errors) with exponential backoff, nothing else.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import Any

from proforma.contracts.errors import UserError
from proforma.models.llm.calls import Completion, Provider, ProviderError, Request

#: The paper's request settings: 64k output tokens of headroom for heavy reasoning.
MAX_TOKENS = 64_000
#: Seconds one request may take (a reasoning call can run many minutes).
TIMEOUT_S = 1_800.0
PROVIDERS = ("anthropic", "openai", "fake")


def _status_error(exc: Exception) -> ProviderError:
    """An SDK exception as a ProviderError: 408, 409, 429 and 5xx are transient, as are
    timeouts and connection errors; anything else (bad request, auth, unknown model) is
    not and is never retried."""
    status = getattr(exc, "status_code", None)
    retry_after = None
    response = getattr(exc, "response", None)
    if response is not None:
        try:
            retry_after = float(response.headers.get("retry-after"))
        except (TypeError, ValueError):
            retry_after = None
    if status is None:  # APIConnectionError / APITimeoutError carry no status
        return ProviderError(f"{type(exc).__name__}: {exc}", transient=True)
    transient = status in (408, 409, 429) or status >= 500
    return ProviderError(
        f"HTTP {status} {type(exc).__name__}: {exc}",
        transient=transient,
        retry_after=retry_after,
        status=status,
    )


def call_with_retries(
    provider: Provider,
    request: Request,
    *,
    max_retries: int = 6,
    base_delay_s: float = 2.0,
    max_delay_s: float = 120.0,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Completion, int]:
    """(completion, retries used). Transient failures wait base * 2^n (jittered, or the
    server's retry-after) and try again, up to max_retries; others raise at once."""
    for retry in range(max_retries + 1):
        try:
            return provider.complete(request), retry
        except ProviderError as exc:
            if not exc.transient or retry == max_retries:
                raise
            delay = (
                exc.retry_after
                if exc.retry_after is not None
                else min(max_delay_s, base_delay_s * 2**retry) * (0.5 + random.random() / 2)
            )
            sleep(min(max_delay_s, delay))
    raise AssertionError("unreachable")


def _key(variable: str, provider: str) -> str:
    key = os.environ.get(variable)
    if not key:
        raise UserError(
            f"The {provider} provider needs an API key: set {variable} in the "
            f"environment (or use --provider fake for an offline run)"
        )
    return key


class AnthropicProvider:
    """Claude through the Messages API with adaptive (extended) thinking."""

    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        effort: str | None = None,
        temperature: float | None = None,
        max_tokens: int = MAX_TOKENS,
        timeout_s: float = TIMEOUT_S,
        client: Any = None,
    ):
        import anthropic

        if temperature is not None:
            # The SDK's Messages API takes no temperature: with adaptive thinking the model
            # runs at its default, as in the paper.
            raise UserError(
                "--temperature is not available for the anthropic provider "
                "(adaptive thinking runs at the default temperature)"
            )
        self.model, self.effort, self.temperature = model, effort, None
        self.max_tokens, self.timeout_s = max_tokens, timeout_s
        self._errors = (anthropic.APIStatusError, anthropic.APIConnectionError)
        self.client = client or anthropic.Anthropic(
            api_key=_key("ANTHROPIC_API_KEY", "anthropic"), max_retries=0, timeout=timeout_s
        )

    def settings(self) -> dict[str, Any]:
        return {
            "api": "messages",
            "thinking": "adaptive",
            "effort": self.effort,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def complete(self, request: Request) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": request.system,
            "messages": [{"role": "user", "content": request.user}],
            "thinking": {"type": "adaptive"},
            "timeout": self.timeout_s,
        }
        if self.effort:
            kwargs["output_config"] = {"effort": self.effort}
        try:
            message = self.client.messages.create(**kwargs)
        except self._errors as exc:
            raise _status_error(exc) from None
        usage = message.usage
        cache_read = usage.cache_read_input_tokens or 0
        details = getattr(usage, "output_tokens_details", None)
        return Completion(
            text="".join(b.text for b in message.content if b.type == "text"),
            input_tokens=usage.input_tokens + cache_read + (usage.cache_creation_input_tokens or 0),
            output_tokens=usage.output_tokens,
            reasoning_tokens=getattr(details, "thinking_tokens", None),
            cached_input_tokens=cache_read,
            stop_reason=message.stop_reason,
            response_id=message.id,
            response_model=message.model,
            truncated=message.stop_reason == "max_tokens",
        )


class OpenAIProvider:
    """GPT through the Responses API with reasoning (medium effort by default)."""

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        effort: str | None = None,
        temperature: float | None = None,
        max_tokens: int = MAX_TOKENS,
        timeout_s: float = TIMEOUT_S,
        client: Any = None,
    ):
        import openai

        self.model, self.effort, self.temperature = model, effort or "medium", temperature
        self.max_tokens, self.timeout_s = max_tokens, timeout_s
        self._errors = (openai.APIStatusError, openai.APIConnectionError)
        self.client = client or openai.OpenAI(
            api_key=_key("OPENAI_API_KEY", "openai"), max_retries=0, timeout=timeout_s
        )

    def settings(self) -> dict[str, Any]:
        return {
            "api": "responses",
            "reasoning_effort": self.effort,
            "reasoning_summary": "auto",
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def complete(self, request: Request) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "instructions": request.system,
            "input": request.user,
            "max_output_tokens": self.max_tokens,
            "reasoning": {"effort": self.effort, "summary": "auto"},
            "timeout": self.timeout_s,
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        try:
            response = self.client.responses.create(**kwargs)
        except self._errors as exc:
            raise _status_error(exc) from None
        usage = response.usage
        incomplete = getattr(response, "incomplete_details", None)
        reason = getattr(incomplete, "reason", None)
        return Completion(
            text=response.output_text,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            reasoning_tokens=usage.output_tokens_details.reasoning_tokens if usage else None,
            cached_input_tokens=usage.input_tokens_details.cached_tokens if usage else 0,
            stop_reason=reason or response.status,
            response_id=response.id,
            response_model=response.model,
            truncated=reason == "max_output_tokens",
        )


def make_provider(
    name: str,
    model: str | None = None,
    *,
    effort: str | None = None,
    temperature: float | None = None,
    max_tokens: int = MAX_TOKENS,
    timeout_s: float = TIMEOUT_S,
) -> Provider:
    """The provider `name` for `model` (the fake provider needs no model)."""
    if name == "fake":
        from proforma.models.llm.fake import FakeProvider

        return FakeProvider(model or FakeProvider.default_model)
    if name not in PROVIDERS:
        raise UserError(f"Unknown provider {name!r}: use one of {', '.join(PROVIDERS)}")
    if not model:
        raise UserError(f"--model is required for the {name} provider (e.g. the vendor's model id)")
    cls = AnthropicProvider if name == "anthropic" else OpenAIProvider
    return cls(
        model, effort=effort, temperature=temperature, max_tokens=max_tokens, timeout_s=timeout_s
    )
