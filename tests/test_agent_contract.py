"""The structured-input rules of the agent, one test each, for run, stream and prompt alike.

Complements test_agent.py: every rule is checked on each entry point it applies to, and the
stream's early exit is checked against a real HTTP connection on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from oma_core import Agent, AgentConfig, BeforeRunContext, PluginHost, RunResult, StreamEvent
from oma_core.errors import InvalidMessageError, ProviderError
from oma_core.messages import ImageBlock, LLMMessage, TextBlock, ToolUseBlock
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ResponseComplete,
    TextDelta,
    Usage,
)
from oma_core.testing import ScriptedProvider
from oma_core.testing.fake_server import FakeServer, RecordedRequest, Response, SSEEvent

PNG = "iVBORw0KGgo="


def make(host: PluginHost, *responses: object, **config: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses or ("ok",))
    return Agent(AgentConfig(name="a", provider=provider, **config), plugins=host), provider


def image(data: str = PNG) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


async def _drain(value: Awaitable[RunResult] | AsyncIterator[StreamEvent]) -> RunResult:
    """The result of a pending run or stream."""
    if isinstance(value, AsyncIterator):
        events = [event async for event in value]
        assert [e.type for e in events].count("done") == 1
        result: RunResult = events[-1].data
        return result
    return await value


def _conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "look"}, image()]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "s", "input": {"q": ["a"]}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
    ]


def _mutate(conversation: list[dict[str, Any]]) -> None:
    """Change every layer the caller owns: the list, a text, an image's data, a tool input."""
    conversation[0]["content"][0]["text"] = "changed"
    conversation[0]["content"][1]["source"]["data"] = "AAAA"
    conversation[0]["content"][1]["source"]["media_type"] = "image/gif"
    conversation[1]["content"][0]["input"]["q"].append("b")
    conversation[1]["content"][0]["input"]["extra"] = 1
    conversation.append({"role": "assistant", "content": [{"type": "text", "text": "injected"}]})


# -- validation and copying happen at the call --------------------------------------------------


@pytest.mark.parametrize("method", ["run", "stream"])
async def test_caller_mutation_after_the_call_never_reaches_the_provider(
    host: PluginHost, method: str
) -> None:
    agent, provider = make(host)
    conversation = _conversation()
    pending = getattr(agent, method)(conversation)
    _mutate(conversation)
    assert (await _drain(pending)).success
    sent = provider.requests[0].messages
    assert len(sent) == 3
    assert sent[0].content[0] == TextBlock("look")
    picture = sent[0].content[1]
    assert isinstance(picture, ImageBlock)
    assert (picture.source.media_type, getattr(picture.source, "data", None)) == ("image/png", PNG)
    call = sent[1].content[0]
    assert isinstance(call, ToolUseBlock)
    assert json.loads(json.dumps(call.plain_input())) == {"q": ["a"]}


async def test_caller_mutation_of_prompt_blocks_after_the_call_never_reaches_history(
    host: PluginHost,
) -> None:
    agent, provider = make(host)
    blocks = [{"type": "text", "text": "look"}, image()]
    pending = agent.prompt(blocks)
    blocks[0]["text"] = "changed"
    blocks[1]["source"]["data"] = "AAAA"
    blocks.append({"type": "text", "text": "more"})
    await pending
    (turn, _reply) = agent.get_history()
    assert turn == provider.requests[0].messages[0]
    assert turn.content[0] == TextBlock("look")
    assert getattr(turn.content[1], "source").data == PNG  # noqa: B009


@pytest.mark.parametrize(
    ("method", "value", "message"),
    [
        ("run", {"role": "user"}, "messages must be a list, got dict"),
        ("stream", None, "messages must be a list, got None"),
        ("run", [{"role": "user", "content": "hi"}], "messages[0].content must be a list"),
        ("stream", [], "messages"),
        ("prompt", None, "messages[0].content must be a str or a list of content blocks, got None"),
        ("prompt", [], "messages[0].content"),
        ("prompt", [{"type": "tool_use", "id": "1", "name": "n", "input": {}}], "messages[0]"),
    ],
)
async def test_invalid_input_raises_at_the_call_site_and_nothing_else_happens(
    host: PluginHost, method: str, value: object, message: str
) -> None:
    hooked: list[BeforeRunContext] = []
    agent, provider = make(host, before_run=hooked.append)
    with pytest.raises(InvalidMessageError) as info:
        getattr(agent, method)(value)
    assert message in str(info.value)
    await asyncio.sleep(0)
    assert hooked == [] and provider.requests == [] and agent.get_history() == []
    assert agent._provider is None  # no provider was even created


# -- prompt and history ---------------------------------------------------------------------------


async def test_a_failed_prompt_after_a_tool_round_leaves_history_as_it_was(
    host: PluginHost,
) -> None:
    def lookup() -> str:
        return "found"

    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "lookup", "input": {}}],
    }
    agent, _ = make(host, "first", call, ProviderError("down", status_code=400), tools=[lookup])
    await agent.prompt("one")
    before = agent.get_history()
    result = await agent.prompt("two")
    assert not result.success and len(result.messages) == 2  # the tool round happened
    assert agent.get_history() == before


async def test_concurrent_prompts_take_turns_and_both_reach_history(host: PluginHost) -> None:
    from oma_core.testing import Delayed

    agent, provider = make(host, Delayed(0.02, "a1"), "b1")
    results = await asyncio.gather(agent.prompt("a"), agent.prompt("b"))
    assert [r.output for r in results] == ["a1", "b1"]
    texts = [m.content[0].text for m in agent.get_history()]  # type: ignore[union-attr]
    assert texts == ["a", "a1", "b", "b1"]
    assert len(provider.requests[1].messages) == 3  # the second prompt saw the first


async def test_prompt_history_keeps_the_callers_turn_when_a_hook_rewrites_messages(
    host: PluginHost,
) -> None:
    def hook(ctx: BeforeRunContext) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": [{"type": "text", "text": "hooked"}]}]}

    agent, provider = make(host, before_run=hook)
    await agent.prompt([{"type": "text", "text": "mine"}, image()])
    assert provider.text_of() == "hooked"
    turn = agent.get_history()[0]
    assert [b.type for b in turn.content] == ["text", "image"]
    assert turn.content[0] == TextBlock("mine")


async def test_run_result_messages_and_history_are_copies(host: PluginHost) -> None:
    agent, _ = make(host, "one", "two")
    result = await agent.prompt("q")
    result.messages.clear()
    agent.get_history().clear()
    assert len(agent.get_history()) == 2
    second = await agent.prompt("q2")
    assert second.success and len(agent.get_history()) == 4


# -- stream ---------------------------------------------------------------------------------------


class Failing:
    """Streams some text, then fails mid-stream (not retried: output already reached the caller)."""

    name = display_name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        self.calls += 1
        yield TextDelta("partial")
        raise ProviderError("connection reset", retryable=True)


async def test_a_stream_that_fails_mid_way_ends_with_error_then_exactly_one_done(
    host: PluginHost,
) -> None:
    provider = Failing()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    events = [event async for event in agent.stream("hi")]
    assert [e.type for e in events] == ["text", "error", "done"]
    assert provider.calls == 1
    assert events[-1].data.status.error is events[1].data


async def test_a_stream_with_a_tool_round_has_exactly_one_done_at_the_end(
    host: PluginHost,
) -> None:
    def lookup() -> str:
        return "found"

    call = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "lookup", "input": {}}],
    }
    agent, _ = make(host, call, "the answer", tools=[lookup])
    events = [event async for event in agent.stream("go")]
    types = [e.type for e in events]
    assert types.count("done") == 1 and types[-1] == "done"
    assert types.index("tool_use") < types.index("tool_result") < types.index("text")
    assert events[-1].data.output == "the answer"


class SSEServer(FakeServer):
    """Streams 200 text events, slowly, so a client that stops early leaves most unsent."""

    def handle(self, request: RecordedRequest) -> Response:
        events = [SSEEvent({"text": f"chunk{i} "}) for i in range(200)]
        return Response.sse([*events, SSEEvent("[DONE]")], event_delay=0.01)


class HTTPStreamingProvider:
    """A minimal provider that streams over a real HTTP connection (httpx)."""

    name = display_name = "http-sse"

    def __init__(self, url: str) -> None:
        import httpx

        self.client = httpx.AsyncClient(base_url=url)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        parts: list[str] = []
        async with self.client.stream("POST", "/v1/stream", json={"stream": True}) as response:
            async for line in response.aiter_lines():
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    break
                text = json.loads(line[len("data: ") :])["text"]
                parts.append(text)
                yield TextDelta(text)
        message = LLMMessage("assistant", (TextBlock("".join(parts)),))
        yield ResponseComplete(ProviderResponse(message, Usage(1, len(parts))))

    async def aclose(self) -> None:
        await self.client.aclose()


@pytest.mark.parametrize("leave", ["break", "raise"])
async def test_leaving_async_with_stream_early_closes_the_http_connection(
    host: PluginHost, leave: str
) -> None:
    with SSEServer() as server:
        provider = HTTPStreamingProvider(server.url)
        agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
        seen: list[StreamEvent] = []
        try:
            async with agent.stream("hi") as events:
                async for event in events:
                    seen.append(event)
                    if len(seen) == 2:
                        if leave == "raise":
                            raise KeyError("the caller's own error")
                        break
        except KeyError:
            assert leave == "raise"
        assert [e.type for e in seen] == ["text", "text"]
        assert await server.async_wait_idle(timeout=5), "the connection was left open"
        assert len(server.requests) == 1
        await provider.aclose()


# -- helpers used by the tests above keep their promises ----------------------------------------


@pytest.mark.parametrize("call", [lambda a: a.run_sync("x"), lambda a: a.prompt_sync("x")])
def test_sync_wrappers_return_the_result_outside_a_loop(
    host: PluginHost, call: Callable[[Agent], RunResult]
) -> None:
    agent, provider = make(host, "sync")
    result = call(agent)
    assert result.success and result.output == "sync"
    assert provider.requests[0].messages == (LLMMessage("user", (TextBlock("x"),)),)
