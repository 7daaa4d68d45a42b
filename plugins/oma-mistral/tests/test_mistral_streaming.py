"""Streaming tool calls: each piece of a call's arguments passes on as a ``ToolCallDelta``
before the whole ``ToolCall``, so tool mode shows the output as it arrives."""

from __future__ import annotations

import json
from typing import Any

from fake_mistral import API_KEY, FakeMistral, Reply, tool_reply

from oma_core import AgentConfig, Usage, load_messages
from oma_core.testing.output_checks import streamed_partials
from oma_core.toolkit import Provider, ProviderRequest, ResponseComplete, ToolCall, ToolCallDelta

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "lines": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "lines"],
    "additionalProperties": False,
}
VALUE = {"name": "ACME Corporation", "lines": ["bolt", "nut"]}


async def test_tool_call_arguments_pass_on_as_pieces_before_the_call(
    server: FakeMistral, provider: Provider
) -> None:
    server.reply(tool_reply("abcDEF123", "lookup", VALUE))
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": "go"}]}])
    events: list[Any] = [e async for e in provider.stream(ProviderRequest("m", messages))]
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(pieces) > 1  # the fake sends each call in two halves
    assert {(e.index, e.name, e.id) for e in pieces} == {(0, "lookup", "abcDEF123")}
    assert "".join(e.arguments for e in pieces) == json.dumps(VALUE)
    call = next(i for i, e in enumerate(events) if isinstance(e, ToolCall))
    assert all(events.index(e) < call for e in pieces)


async def test_tool_mode_streams_partials_as_the_output_calls_arguments_arrive(
    server: FakeMistral,
) -> None:
    server.reply(tool_reply("abcDEF123", "final_result", VALUE))
    config = AgentConfig(
        "a", provider="mistral", base_url=server.base_url, api_key=API_KEY,
        output_type=SCHEMA, output_mode="tool",
    )  # fmt: skip
    partials, result = await streamed_partials(config, "Extract.")
    assert result.success, result.status
    assert len(partials) > 1 and partials[-1] == VALUE
    assert all(VALUE["name"].startswith(p.get("name", "")) for p in partials)
    assert result.structured == VALUE


async def test_cached_tokens_are_a_part_of_the_input_count(
    server: FakeMistral, provider: Provider
) -> None:
    """Mistral reports cache hits as ``prompt_tokens_details.cached_tokens``, inside
    ``prompt_tokens`` (its prompt-caching guide, read on 2026-12-06)."""
    reply = Reply(text="ok", prompt_tokens=200, completion_tokens=3, cached_tokens=128)
    server.reply(reply)
    server.reply(reply)
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": "go"}]}])
    expected = Usage(200, 3, cache_read_tokens=128)
    assert (await provider.complete(ProviderRequest("m", messages))).usage == expected
    events = [e async for e in provider.stream(ProviderRequest("m", messages))]
    assert isinstance(events[-1], ResponseComplete) and events[-1].response.usage == expected
