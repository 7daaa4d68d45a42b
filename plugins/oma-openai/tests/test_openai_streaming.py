"""Streaming: token-level deltas, assembled tool calls, usage from the last chunk, clean closes."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import attrs
from fake_openai import FakeChatCompletions, Reply
from oma_openai.provider import OpenAIChatProvider
from openai_builders import provider_for, request

from oma_core import AgentConfig, Usage
from oma_core.testing.fake_server import SlowStream
from oma_core.testing.output_checks import streamed_partials
from oma_core.toolkit import ResponseComplete, TextDelta, ToolCall, ToolCallDelta


async def collect(provider: OpenAIChatProvider, req: Any) -> list[Any]:
    return [event async for event in provider.stream(req)]


async def test_stream_asks_for_usage_and_yields_text_token_by_token(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.reply(Reply(text="one two three", prompt_tokens=5, completion_tokens=3))
    events = await collect(openai_provider, request("count"))
    body = server.requests[0].json
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one ", "two ", "three"]
    final = events[-1]
    assert isinstance(final, ResponseComplete)
    assert final.response.usage == Usage(5, 3)
    assert final.response.stop_reason == "end_turn"
    assert final.response.message.content[0].text == "one two three"  # type: ignore[union-attr]


async def test_cached_and_reasoning_tokens_are_parts_of_the_counts(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    """``prompt_tokens`` counts the cached tokens already: oma's input count is it as is."""
    reply = Reply(text="ok", prompt_tokens=50, completion_tokens=9, cached_tokens=30)
    server.reply(attrs.evolve(reply, reasoning_tokens=4), attrs.evolve(reply, reasoning_tokens=4))
    expected = Usage(50, 9, cache_read_tokens=30, reasoning_tokens=4)
    assert (await openai_provider.complete(request("q"))).usage == expected
    events = await collect(openai_provider, request("q"))
    assert events[-1].response.usage == expected


async def test_tool_call_fragments_become_one_tool_call_event_each(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.reply(
        Reply(
            text=None,
            tool_calls=(
                ("call_a", "weather", '{"city": "Paris", "units": "metric"}'),
                ("call_b", "time", '{"tz": "Europe/Paris"}'),
            ),
        )
    )
    events = await collect(openai_provider, request("go"))
    calls = [e.block for e in events if isinstance(e, ToolCall)]
    assert [(c.id, c.name, dict(c.input)) for c in calls] == [
        ("call_a", "weather", {"city": "Paris", "units": "metric"}),
        ("call_b", "time", {"tz": "Europe/Paris"}),
    ]
    final = events[-1]
    assert isinstance(final, ResponseComplete)
    assert final.response.stop_reason == "tool_use"
    assert [b.type for b in final.response.message.content] == ["tool_use", "tool_use"]


async def test_tool_call_fragments_pass_on_as_pieces_of_their_call(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    arguments = '{"city": "Paris", "units": "metric"}'
    server.reply(Reply(text=None, tool_calls=(("call_a", "weather", arguments),)))
    events = await collect(openai_provider, request("go"))
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(pieces) > 1
    assert {(e.index, e.name, e.id) for e in pieces} == {(0, "weather", "call_a")}
    assert "".join(e.arguments for e in pieces) == arguments
    call = next(i for i, e in enumerate(events) if isinstance(e, ToolCall))
    assert all(events.index(e) < call for e in pieces)  # the whole call comes after them


async def test_tool_mode_streams_partials_as_the_output_calls_arguments_arrive(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    final = {"number": "INV-2026-42", "total": 99.5}
    server.reply(Reply(text=None, tool_calls=(("call_1", "final_result", json.dumps(final)),)))
    schema = {
        "type": "object",
        "properties": {"number": {"type": "string"}, "total": {"type": "number"}},
        "required": ["number", "total"],
        "additionalProperties": False,
    }
    config = AgentConfig("a", provider=openai_provider, output_type=schema, output_mode="tool")
    partials, result = await streamed_partials(config, "Extract.")
    assert len(partials) > 1 and partials[-1] == final
    assert all(final["number"].startswith(p.get("number", "")) for p in partials)
    assert result.structured == final
    assert server.requests[0].json["tool_choice"]["function"]["name"] == "final_result"


async def test_stream_and_complete_give_the_same_response(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    reply = Reply(text="Sure.", tool_calls=(("c1", "f", '{"a": 1}'),))
    server.reply(reply, reply)
    streamed = (await collect(openai_provider, request("x")))[-1]
    completed = await openai_provider.complete(request("x"))
    assert isinstance(streamed, ResponseComplete)
    assert streamed.response == completed


async def test_compatible_reasoning_streams_as_reasoning_deltas(
    compatible_server: FakeChatCompletions,
) -> None:
    from oma_core.toolkit import ReasoningDelta

    compatible_server.reply(Reply(text="42", reasoning="Let me think."))
    provider = provider_for(compatible_server, "deepseek")
    events = await collect(provider, request("q"))
    await provider.aclose()
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Let me think."
    final = events[-1]
    assert isinstance(final, ResponseComplete)
    assert [b.type for b in final.response.message.content] == ["reasoning", "text"]


async def test_closing_a_stream_early_closes_its_connection(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.reply(Reply(text="word " * 200))
    server.enqueue(SlowStream(event_delay=0.02))
    stream = openai_provider.stream(request("long"))
    first = await anext(stream)
    assert isinstance(first, TextDelta)
    await stream.aclose()  # type: ignore[attr-defined]
    assert await server.async_wait_idle(timeout=30)
    assert server.open_connections == 0


async def test_cancelling_a_streaming_task_leaves_no_open_connection(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.reply(Reply(text="word " * 200))
    server.enqueue(SlowStream(event_delay=0.02))
    started = asyncio.Event()

    async def consume() -> None:
        async for _event in openai_provider.stream(request("long")):
            started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 30)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert await server.async_wait_idle(timeout=30)


async def test_a_finished_stream_returns_its_connection_for_reuse(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    await collect(openai_provider, request("a"))
    await collect(openai_provider, request("b"))
    assert [r.connection for r in server.requests] == [1, 1]
