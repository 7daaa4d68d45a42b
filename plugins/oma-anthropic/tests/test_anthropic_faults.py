"""Faults on the wire become ProviderErrors with the right status and retryability, and the
core's retry ladder sends exactly the expected number of requests: the kit's ``FaultSuite``
on each transport, and what is Anthropic's own (its error types named in messages, an
overloaded stream retried before any text)."""

from __future__ import annotations

import pytest
from anthropic_suite import AnthropicSuite
from fake_anthropic import FakeAnthropic

from oma_core import Agent, AgentConfig, ProviderError, load_messages
from oma_core.testing import ErrorMidStream, FaultSuite, HTTPError
from oma_core.toolkit import ProviderRequest, ProviderSettings

REQUEST = ProviderRequest(
    model="claude-test",
    messages=load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
)


class TestAnthropicFaults(AnthropicSuite, FaultSuite):
    server_error_statuses = (500, 529)
    stream_errors = (("overloaded_error", 529, True), ("api_error", 500, True))
    unfinished_stream_says = "message_stop"


async def _error_message(server: FakeAnthropic, streaming: bool) -> str:
    from oma_anthropic import create_provider

    provider = create_provider(ProviderSettings(base_url=server.url, api_key="test-key"))
    try:
        with pytest.raises(ProviderError) as caught:
            if streaming:
                [_ async for _ in provider.stream(REQUEST)]
            else:
                await provider.complete(REQUEST)
    finally:
        await provider.aclose()
    return caught.value.message


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_429_names_the_rate_limit_error_type(
    server: FakeAnthropic, streaming: bool
) -> None:
    server.enqueue(HTTPError(429, "slow down", retry_after=7))
    assert "rate_limit_error" in await _error_message(server, streaming)


async def test_an_error_event_names_its_error_type(server: FakeAnthropic) -> None:
    server.reply_text("partial answer that will be cut")
    server.enqueue(ErrorMidStream(after_events=4, error_type="overloaded_error"))
    assert "overloaded_error" in await _error_message(server, True)


async def test_overloaded_mid_stream_before_any_text_is_retried(server: FakeAnthropic) -> None:
    server.enqueue(ErrorMidStream(after_events=1))
    config = AgentConfig(
        name="t",
        provider="anthropic",
        base_url=server.url,
        api_key="test-key",
        max_retries=2,
        retry_delay=0.01,
    )
    async with Agent(config) as agent, agent.stream("hi") as events:
        result = [e async for e in events][-1].data
    assert result.success
    assert len(server.requests) == 2
