"""Failures map to ProviderError with the right status, retryability and retry-after: the
kit's ``FaultSuite`` on each transport, and what is OpenAI's own (``retry-after-ms``, the
wrong-key 401, timeouts, the deltas before an error, a stream missing only ``[DONE]``, the
presets' keys)."""

from __future__ import annotations

from typing import Any

import pytest
from fake_openai import FakeChatCompletions, Reply
from oma_openai import make_provider, preset
from oma_openai.provider import OpenAIChatProvider
from openai_builders import provider_for, request
from openai_suite import OpenAISuite

from oma_core import ProviderError
from oma_core.errors import PluginError
from oma_core.testing import FaultSuite
from oma_core.testing.fake_server import ErrorMidStream, HTTPError, SlowStream, TruncatedStream
from oma_core.toolkit import ProviderSettings, ResponseComplete


class TestOpenAIFaults(OpenAISuite, FaultSuite):
    stream_errors = (("server_error", None, True), ("invalid_request_error", None, False))
    unfinished_stream = TruncatedStream(after_events=3)  # no finish reason, no [DONE]
    unfinished_stream_says = "ended before"


async def stream_all(provider: OpenAIChatProvider, req: Any) -> list[Any]:
    return [event async for event in provider.stream(req)]


async def test_retry_after_ms_wins(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(HTTPError(429, retry_after=30, retry_after_ms=250))
    with pytest.raises(ProviderError) as info:
        await openai_provider.complete(request("hi"))
    assert info.value.retry_after == 0.25


async def test_wrong_key_is_401_and_the_key_is_not_in_the_message(
    server: FakeChatCompletions,
) -> None:
    secret = "sk-very-secret-key-1234567890"
    provider = make_provider(
        preset("openai"), ProviderSettings(base_url=server.base_url, api_key=secret)
    )
    with pytest.raises(ProviderError) as info:
        await provider.complete(request("hi"))
    await provider.aclose()
    assert server.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert info.value.status_code == 401
    assert secret not in str(info.value)


async def test_timeout_is_retryable(server: FakeChatCompletions, transport: str) -> None:
    provider = provider_for(server, timeout=0.2, transport=transport)
    server.enqueue(SlowStream(event_delay=0.0, delay=60))  # ends when the client hangs up
    with pytest.raises(ProviderError) as info:
        await provider.complete(request("hi"))
    await provider.aclose()
    assert info.value.retryable is True
    assert "timed out" in str(info.value)


async def test_error_mid_stream_keeps_the_deltas_before_it(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.reply(Reply(text="a b c d e f"))
    server.enqueue(ErrorMidStream(after_events=3, error_type="server_error"))
    seen: list[Any] = []
    with pytest.raises(ProviderError) as info:
        async for event in openai_provider.stream(request("hi")):
            seen.append(event)
    assert [e.text for e in seen] == ["a ", "b "]
    assert info.value.retryable is True
    assert info.value.status_code is None
    assert "scripted error mid-stream" in str(info.value)


async def test_stream_missing_only_its_done_marker_is_complete(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    """Everything arrived (finish reason and usage); only ``data: [DONE]`` is missing."""
    server.reply(Reply(text="all here"))
    server.enqueue(TruncatedStream())
    events = await stream_all(openai_provider, request("hi"))
    assert isinstance(events[-1], ResponseComplete)
    assert events[-1].response.usage.output_tokens == 7


async def test_missing_key_fails_the_call_without_a_request(
    server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MINIMAX_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-go-to-minimax")
    provider = make_provider(preset("minimax"), ProviderSettings(base_url=server.base_url))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request("hi"))
    assert "MINIMAX_API_KEY" in str(info.value)
    assert info.value.retryable is False
    assert server.requests == []


async def test_preset_key_comes_from_its_own_variable(
    compatible_server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINIMAX_API_KEY", "test-key")
    provider = make_provider(
        preset("minimax"), ProviderSettings(base_url=compatible_server.base_url)
    )
    await provider.complete(request("hi"))
    await provider.aclose()
    assert compatible_server.requests[0].headers["authorization"] == "Bearer test-key"


async def test_keyless_local_preset_sends_a_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeChatCompletions(mode="compatible", api_key="ollama") as srv:
        provider = make_provider(preset("ollama"), ProviderSettings(base_url=srv.base_url))
        await provider.complete(request("hi"))
        await provider.aclose()
        assert srv.requests[0].headers["authorization"] == "Bearer ollama"  # type: ignore[attr-defined]


def test_openai_compatible_needs_a_base_url() -> None:
    with pytest.raises(PluginError) as info:
        make_provider(preset("openai-compatible"), ProviderSettings(api_key="k"))
    assert "base URL" in str(info.value)
