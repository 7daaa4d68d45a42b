"""A 200 reply that cannot be decoded (not JSON, empty, the wrong shape, garbage stream data)
is a retryable ProviderError "sent a malformed response", never a raw decoding error, and the
core's retry ladder sends the request again; a refusal before sending is no such thing."""

from __future__ import annotations

from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, MalformedReply

from oma_core import Agent, AgentConfig, ProviderError, load_messages
from oma_core.testing import Response, SSEEvent
from oma_core.toolkit import ProviderRequest, ProviderSettings

KINDS = ["not_json", "empty", "wrong_shape"]
REQUEST = ProviderRequest(
    model="claude-test",
    messages=load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
)


async def failure(
    provider: Any, streaming: bool, request: ProviderRequest = REQUEST
) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        if streaming:
            async for _ in provider.stream(request):
                pass
        else:
            await provider.complete(request)
    return caught.value


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("kind", KINDS)
async def test_malformed_200_is_a_retryable_provider_error(
    server: FakeAnthropic, provider: Any, kind: Any, streaming: bool
) -> None:
    server.enqueue(MalformedReply(kind))
    error = await failure(provider, streaming)
    if (kind, streaming) == ("empty", True):
        # the SDK skips an event with no data, so the stream just ends too early
        assert "stream ended before message_stop" in str(error)
    else:
        assert "Anthropic Messages sent a malformed response" in str(error)
    assert (error.status_code, error.retryable) == (None, True)
    assert error.__context__ is None and error.__cause__ is None


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("kind", KINDS)
async def test_the_retry_ladder_sends_a_malformed_reply_again(
    server: FakeAnthropic, kind: Any, streaming: bool
) -> None:
    server.enqueue(MalformedReply(kind))
    server.reply_text("second time lucky")
    config = AgentConfig(
        name="t",
        provider="anthropic",
        base_url=server.url,
        api_key="test-key",
        max_retries=1,
        retry_delay=0.001,
    )
    async with Agent(config) as agent:
        if streaming:
            async with agent.stream("hi") as events:
                result = [e async for e in events][-1].data
        else:
            result = await agent.run("hi")
    assert result.success, result.status
    assert result.output == "second time lucky"
    assert len(server.requests) == 2


async def test_reply_that_is_not_a_message_is_malformed(
    server: FakeAnthropic, provider: Any
) -> None:
    server.handle = lambda request: Response.json({"unexpected": True})  # type: ignore[method-assign]
    error = await failure(provider, False)
    assert (error.status_code, error.retryable) == (None, True)
    assert "sent a malformed response" in str(error)


async def test_stream_event_for_a_block_never_started_is_malformed(
    server: FakeAnthropic, provider: Any
) -> None:
    delta = {"type": "text_delta", "text": "x"}
    events = [SSEEvent({"type": "content_block_delta", "index": 3, "delta": delta}, "x")]
    server.handle = lambda request: Response.sse(events)  # type: ignore[method-assign]
    error = await failure(provider, True)
    assert (error.status_code, error.retryable) == (None, True)
    assert "sent a malformed response: an event for content block 3" in str(error)


async def test_streamed_tool_input_that_is_not_json_is_malformed(
    server: FakeAnthropic, provider: Any
) -> None:
    start = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    delta = {"type": "input_json_delta", "partial_json": "{not json"}
    events = [
        SSEEvent({"type": "message_start", "message": {"model": "m", "usage": {}}}, "x"),
        SSEEvent({"type": "content_block_start", "index": 0, "content_block": start}, "x"),
        SSEEvent({"type": "content_block_delta", "index": 0, "delta": delta}, "x"),
        SSEEvent({"type": "content_block_stop", "index": 0}, "x"),
    ]
    server.handle = lambda request: Response.sse(events)  # type: ignore[method-assign]
    error = await failure(provider, True)
    assert error.retryable is True
    assert "streamed input is not JSON" in str(error)
    assert error.__context__ is None


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_a_refusal_before_sending_is_not_called_malformed(
    server: FakeAnthropic, streaming: bool
) -> None:
    """NaN is not JSON: the SDK refuses the body before sending anything."""
    from oma_anthropic import create_provider

    settings = ProviderSettings(
        base_url=server.url, api_key="test-key", options={"top_p": float("nan")}
    )
    provider: Any = create_provider(settings)
    try:
        error = await failure(provider, streaming)
    finally:
        await provider.aclose()
    assert "malformed" not in str(error)
    assert "the request was not sent: ValueError" in str(error)
    assert error.retryable is False
    assert server.requests == []


async def test_the_sdks_long_request_refusal_is_not_called_malformed(
    server: FakeAnthropic, provider: Any, transport: str
) -> None:
    """The SDK refuses, locally, a non-streaming call whose max_tokens could run too long; the
    direct transport has no such rule of its own and leaves it to the service."""
    request = ProviderRequest(model="claude-test", messages=REQUEST.messages, max_tokens=10**6)
    if transport == "direct":
        await provider.complete(request)
        assert server.requests[0].json["max_tokens"] == 10**6
        return
    error = await failure(provider, False, request)
    assert "malformed" not in str(error)
    assert "the request was not sent: ValueError: Streaming is required" in str(error)
    assert error.retryable is False
    assert server.requests == []
