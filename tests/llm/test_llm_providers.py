"""The anthropic and openai providers through their official SDKs, answered by an
in-process mock transport (no network), and the retry policy."""

from __future__ import annotations

import json

import anthropic
import httpx2
import openai
import pytest

from proforma.contracts.errors import UserError
from proforma.models.llm.calls import ProviderError, Request
from proforma.models.llm.providers import (
    AnthropicProvider,
    OpenAIProvider,
    call_with_retries,
    make_provider,
)

MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-opus-4-8",
    "content": [
        {"type": "thinking", "thinking": "(reasoning)", "signature": "sig"},
        {"type": "text", "text": "Q1: revtq=1.00"},
    ],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 900,
        "output_tokens": 5000,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 0,
        "output_tokens_details": {"thinking_tokens": 4200},
    },
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-5.5-2026",
    "status": "completed",
    "incomplete_details": None,
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "output": [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "id": "m_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Q1: revtq=2.00", "annotations": []}],
        },
    ],
    "usage": {
        "input_tokens": 1000,
        "output_tokens": 3000,
        "total_tokens": 4000,
        "input_tokens_details": {"cached_tokens": 200, "cache_write_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 2500},
    },
}


class Server:
    """Replies in order (status, json body, headers) and keeps every request it saw."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        status, body, headers = self.replies.pop(0)
        return httpx2.Response(status, json=body, headers=headers)

    def body(self, i: int = -1) -> dict:
        return json.loads(self.requests[i].content)


def anthropic_with(server: Server, **kwargs) -> AnthropicProvider:
    client = anthropic.Anthropic(
        api_key="test-key",
        max_retries=0,
        base_url="http://mock",
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
    )
    return AnthropicProvider("claude-opus-4-8", client=client, **kwargs)


def openai_with(server: Server, **kwargs) -> OpenAIProvider:
    client = openai.OpenAI(
        api_key="test-key",
        max_retries=0,
        base_url="http://mock/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(server)),
    )
    return OpenAIProvider("gpt-5.5", client=client, **kwargs)


def test_anthropic_request_and_completion() -> None:
    server = Server((200, MESSAGE, {}))
    provider = anthropic_with(server)
    c = provider.complete(Request("SYSTEM", "USER"))
    body = server.body()
    assert server.requests[0].url.path == "/v1/messages"
    assert body["model"] == "claude-opus-4-8" and body["max_tokens"] == 64000
    assert body["system"] == "SYSTEM" and body["messages"] == [{"role": "user", "content": "USER"}]
    assert body["thinking"] == {"type": "adaptive"}
    assert "temperature" not in body and "output_config" not in body  # provider defaults
    assert c.text == "Q1: revtq=1.00"  # the thinking block is not the answer
    assert (c.input_tokens, c.cached_input_tokens, c.output_tokens, c.reasoning_tokens) == (
        1000,
        100,
        5000,
        4200,
    )
    assert c.response_id == "msg_1" and c.stop_reason == "end_turn" and not c.truncated
    assert provider.settings() == {
        "api": "messages",
        "thinking": "adaptive",
        "effort": None,
        "temperature": None,
        "max_tokens": 64000,
    }


def test_anthropic_effort_and_truncation() -> None:
    server = Server((200, {**MESSAGE, "stop_reason": "max_tokens"}, {}))
    c = anthropic_with(server, effort="high").complete(Request("S", "U"))
    assert server.body()["output_config"] == {"effort": "high"} and c.truncated
    with pytest.raises(UserError, match="temperature"):
        anthropic_with(server, temperature=0.0)


def test_openai_request_and_completion() -> None:
    server = Server((200, RESPONSE, {}))
    provider = openai_with(server)
    c = provider.complete(Request("SYSTEM", "USER"))
    body = server.body()
    assert server.requests[0].url.path == "/v1/responses"
    assert (
        body["model"] == "gpt-5.5" and body["instructions"] == "SYSTEM" and body["input"] == "USER"
    )
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["max_output_tokens"] == 64000 and "temperature" not in body
    openai_with(server := Server((200, RESPONSE, {})), temperature=0.5).complete(Request("S", "U"))
    assert server.body()["temperature"] == 0.5
    assert c.text == "Q1: revtq=2.00" and c.response_model == "gpt-5.5-2026"
    assert (c.input_tokens, c.cached_input_tokens, c.output_tokens, c.reasoning_tokens) == (
        1000,
        200,
        3000,
        2500,
    )


def test_openai_incomplete_answer_is_truncated() -> None:
    body = {
        **RESPONSE,
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
    }
    c = openai_with(Server((200, body, {}))).complete(Request("S", "U"))
    assert c.truncated and c.stop_reason == "max_output_tokens"


@pytest.mark.parametrize("status", [429, 500, 503, 529, 408])
def test_transient_http_errors_are_retried_with_backoff(status: int) -> None:
    server = Server(
        (status, {"error": {"type": "x", "message": "busy"}}, {}),
        (status, {"error": {"type": "x", "message": "busy"}}, {"retry-after": "7"}),
        (200, MESSAGE, {}),
    )
    slept: list[float] = []
    c, retries = call_with_retries(
        anthropic_with(server), Request("S", "U"), sleep=slept.append, base_delay_s=2.0
    )
    assert c.text == "Q1: revtq=1.00" and retries == 2 and len(server.requests) == 3
    assert 1.0 <= slept[0] <= 2.0 and slept[1] == 7.0  # jittered 2 s, then the server's wait


def test_connection_errors_are_transient() -> None:
    def refuse(request):
        raise httpx2.ConnectError("refused")

    client = openai.OpenAI(
        api_key="k",
        max_retries=0,
        base_url="http://mock/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(refuse)),
    )
    slept: list[float] = []
    with pytest.raises(ProviderError) as info:
        call_with_retries(
            OpenAIProvider("gpt-5.5", client=client),
            Request("S", "U"),
            max_retries=3,
            sleep=slept.append,
        )
    assert info.value.transient and len(slept) == 3
    # base 2 s doubling per retry, jittered down to half
    assert all(2**n <= wait <= 2 ** (n + 1) for n, wait in enumerate(slept))


def _never(seconds: float) -> None:
    pytest.fail(f"a call that must not be retried waited {seconds} s")


@pytest.mark.parametrize("status,fatal", [(400, False), (401, True), (404, True), (422, False)])
def test_other_errors_are_not_retried(status: int, fatal: bool) -> None:
    server = Server((status, {"error": {"type": "invalid_request_error", "message": "no"}}, {}))
    with pytest.raises(ProviderError) as info:
        call_with_retries(anthropic_with(server), Request("S", "U"), sleep=_never)
    assert not info.value.transient and info.value.fatal == fatal and len(server.requests) == 1


def test_keys_come_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
        make_provider("anthropic", "claude-opus-4-8")
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        make_provider("openai", "gpt-5.5")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    provider = make_provider("openai", "gpt-5.5", effort="high")
    assert provider.settings()["reasoning_effort"] == "high"
    assert "sk-test" not in json.dumps(provider.settings())
    with pytest.raises(UserError, match="--model"):
        make_provider("openai")
    with pytest.raises(UserError, match="Unknown provider"):
        make_provider("gemini", "x")
