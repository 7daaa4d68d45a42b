"""Agent.stream: its events, exactly one done at the end, and closing it early."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

import pytest
from _builders import (
    ClosingProvider,
    add,
    assistant_turn,
    make,
    make_replying_ok,
    scripted_agent,
    start,
    tool_call_turn,
    user_turn,
)

from oma_core import (
    Agent,
    AgentConfig,
    PluginHost,
    ProviderError,
    RunResult,
    StreamEvent,
)
from oma_core.messages import LLMMessage, TextBlock
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from oma_core.testing import Delayed, ScriptedProvider
from oma_core.testing.fake_server import FakeServer, RecordedRequest, Response, SSEEvent


class Failing:
    """Streams some text, then fails mid-stream (not retried: output already reached the caller)."""

    name = display_name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        self.calls += 1
        yield TextDelta("partial")
        raise ProviderError("connection reset", retryable=True)


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


async def test_stream_ends_with_exactly_one_done_carrying_the_run_result() -> None:
    agent, _ = scripted_agent(["hello there"])
    events = [event async for event in agent.stream("x")]
    assert all(isinstance(e, StreamEvent) for e in events)
    assert [e.type for e in events].count("done") == 1
    assert events[-1].type == "done"
    assert isinstance(events[-1].data, RunResult)
    assert events[-1].data.output == "hello there"
    assert "".join(e.data for e in events if e.type == "text") == "hello there"
    allowed = {"text", "reasoning", "tool_use", "tool_result", "error", "done"}
    assert {e.type for e in events} <= allowed


async def test_a_failed_stream_yields_an_error_event_with_the_exception_before_done() -> None:
    boom = ProviderError("bad request", status_code=400)
    agent, _ = scripted_agent([boom])
    events = [event async for event in agent.stream("x")]
    types = [e.type for e in events]
    assert types.count("done") == 1 and types[-1] == "done"
    assert types.count("error") == 1 and types.index("error") < types.index("done")
    assert events[types.index("error")].data is boom
    assert events[-1].data.success is False


async def test_stream_works_as_an_async_context_manager() -> None:
    agent, _ = scripted_agent(["hi"])
    async with agent.stream([user_turn("x")]) as events:
        collected = [event async for event in events]
    assert collected[-1].type == "done"


async def test_stream_context_exits_cleanly_when_left_early() -> None:
    agent, _ = scripted_agent([Delayed(0.05, "hi")])
    async with agent.stream("x") as events:
        async for _ in events:
            break
    # a second stream still works: the first was closed
    agent2, _ = scripted_agent(["again"])
    assert (await agent2.run("x")).output == "again"


async def test_stream_reports_tool_use_and_tool_result_events() -> None:
    agent, _ = scripted_agent([tool_call_turn("add", {"a": 1, "b": 2}), "3"], tools=[add])
    events = [event async for event in agent.stream("x")]
    types = [e.type for e in events]
    assert "tool_use" in types and "tool_result" in types
    assert types.index("tool_use") < types.index("tool_result") < types.index("done")


class ArgumentPieces(ScriptedProvider):
    """Streams each tool call's arguments as ``ToolCallDelta`` pieces before its ``ToolCall``."""

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        async with aclosing(super().stream(request)) as events:
            async for event in events:
                if isinstance(event, ToolCall):
                    text = json.dumps(event.block.input)
                    for i in range(0, len(text), 3):
                        yield ToolCallDelta(0, text[i : i + 3], event.block.name, event.block.id)
                yield event


async def test_tool_argument_pieces_never_reach_the_caller_only_the_whole_call() -> None:
    provider = ArgumentPieces([tool_call_turn("add", {"a": 1, "b": 2}), "3"])
    agent = Agent(AgentConfig("a", provider=provider, tools=[add]))
    events = [event async for event in agent.stream("x")]
    assert [e.type for e in events] == ["tool_use", "tool_result", "text", "done"]
    assert events[0].data.input == {"a": 1, "b": 2}
    assert events[-1].data.success


async def test_reasoning_reaches_the_stream_as_reasoning_events() -> None:
    turn = assistant_turn({"type": "reasoning", "text": "thinking hard"}, "answer")
    agent, _ = scripted_agent([turn])
    events = [e async for e in agent.stream("x")]
    assert "thinking hard" in "".join(e.data for e in events if e.type == "reasoning")
    assert events[-1].data.output == "answer"


async def test_stream_yields_text_then_exactly_one_done(host: PluginHost) -> None:
    agent, _ = make(host, "hello world")
    events = [event async for event in agent.stream("hi")]
    assert [e.type for e in events].count("done") == 1
    assert events[-1].type == "done"
    result = events[-1].data
    assert isinstance(result, RunResult) and result.success
    assert "".join(e.data for e in events if e.type == "text") == "hello world"


async def test_a_failed_stream_yields_error_then_done_without_raising(host: PluginHost) -> None:
    agent, _ = make(host, ProviderError("denied", status_code=403))
    events = [event async for event in agent.stream("hi")]
    assert [e.type for e in events] == ["error", "done"]
    assert isinstance(events[0].data, ProviderError)
    assert events[1].data.status.error is events[0].data


async def test_async_with_stream_closes_the_provider_stream_on_early_exit(
    host: PluginHost,
) -> None:
    provider = ClosingProvider()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    async with agent.stream("hi") as events:
        async for event in events:
            assert event.type == "text"
            break
    assert provider.opened == 1 and provider.closed == 1


async def test_a_stream_never_iterated_starts_nothing(host: PluginHost) -> None:
    provider = ClosingProvider()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    async with agent.stream("hi"):
        pass
    assert provider.opened == 0


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
    agent, _ = make_replying_ok(host, call, "the answer", tools=[lookup])
    events = [event async for event in agent.stream("go")]
    types = [e.type for e in events]
    assert types.count("done") == 1 and types[-1] == "done"
    assert types.index("tool_use") < types.index("tool_result") < types.index("text")
    assert events[-1].data.output == "the answer"


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


async def test_start_in_stream_mode_returns_an_agent_stream(host: PluginHost) -> None:
    agent, _ = make(host, "streamed")
    async with start(
        agent, [{"role": "user", "content": [{"type": "text", "text": "x"}]}], mode="stream"
    ) as events:
        types = [event.type async for event in events]
    assert types[-1] == "done" and "text" in types
