"""A 200 reply that cannot be decoded (not JSON, empty, the wrong shape, garbage stream data)
is a retryable ProviderError "sent a malformed response", never a raw decoding error, and the
core's retry ladder sends the request again; a refusal before sending is no such thing."""

from __future__ import annotations

from typing import Any

import pytest
from fake_openai import API_KEY, FakeChatCompletions, MalformedReply, Reply
from oma_openai.provider import OpenAIChatProvider
from openai_builders import provider_for, request

from oma_core import Agent, AgentConfig, ProviderError
from oma_core.testing.fake_server import Response, SSEEvent

KINDS = ["not_json", "empty", "wrong_shape"]


async def failure(provider: OpenAIChatProvider, streaming: bool) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        if streaming:
            async for _ in provider.stream(request("hi")):
                pass
        else:
            await provider.complete(request("hi"))
    return caught.value


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("kind", KINDS)
async def test_malformed_200_is_a_retryable_provider_error(
    openai_provider: OpenAIChatProvider,
    server: FakeChatCompletions,
    kind: Any,
    streaming: bool,
) -> None:
    server.enqueue(MalformedReply(kind))
    error = await failure(openai_provider, streaming)
    assert "OpenAI sent a malformed response" in str(error)
    assert (error.status_code, error.retryable) == (None, True)
    assert error.__context__ is None and error.__cause__ is None


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("kind", KINDS)
async def test_the_retry_ladder_sends_a_malformed_reply_again(
    server: FakeChatCompletions, kind: Any, streaming: bool
) -> None:
    server.enqueue(MalformedReply(kind))
    server.reply(Reply(text="second time lucky"))
    config = AgentConfig(
        name="t",
        provider="openai",
        model="gpt-test",
        base_url=server.base_url,
        api_key=API_KEY,
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


async def test_reply_without_choices_is_malformed(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.handle = lambda _req: Response.json({"id": "x", "object": "chat.completion"})  # type: ignore[method-assign]
    error = await failure(openai_provider, False)
    assert (error.status_code, error.retryable) == (None, True)
    assert "sent a malformed response" in str(error)


async def test_stream_chunk_of_the_wrong_shape_is_malformed(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.handle = lambda _req: Response.sse([SSEEvent({"choices": 5}), SSEEvent("[DONE]")])  # type: ignore[method-assign]
    error = await failure(openai_provider, True)
    assert (error.status_code, error.retryable) == (None, True)
    assert "sent a malformed response" in str(error)


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_tool_arguments_that_are_not_json_are_malformed(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions, streaming: bool
) -> None:
    server.reply(Reply(text=None, tool_calls=(("c", "f", "{not json"),)))
    error = await failure(openai_provider, streaming)
    assert error.retryable is True
    assert "sent a malformed response: tool call arguments" in str(error)


@pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
async def test_a_refusal_before_sending_is_not_called_malformed(
    server: FakeChatCompletions, streaming: bool
) -> None:
    """NaN is not JSON: the SDK refuses the body before sending anything."""
    provider = provider_for(server, seed=float("nan"))
    try:
        error = await failure(provider, streaming)
    finally:
        await provider.aclose()
    assert "malformed" not in str(error)
    assert "the request was not sent: ValueError" in str(error)
    assert error.retryable is False
    assert server.requests == []
