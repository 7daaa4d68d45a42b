"""Streaming tool calls through the bridge: each piece of a call's arguments LiteLLM hands on
passes on as a ``ToolCallDelta`` before the whole ``ToolCall``, so tool mode shows the output
as it arrives."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions
from oma_litellm import create_provider

from oma_core import AgentConfig, load_messages
from oma_core.testing.output_checks import streamed_partials
from oma_core.toolkit import Provider, ProviderRequest, ProviderSettings, ToolCall, ToolCallDelta

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


@pytest.fixture
async def provider(server: FakeChatCompletions) -> AsyncIterator[Provider]:
    built = create_provider(ProviderSettings(base_url=server.base_url, api_key="test-key"))
    yield built
    await built.aclose()


async def test_tool_call_arguments_pass_on_as_pieces_before_the_call(
    server: FakeChatCompletions, provider: Provider
) -> None:
    server.reply_tool_call("call_1", "lookup", VALUE)
    messages = load_messages([{"role": "user", "content": [{"type": "text", "text": "go"}]}])
    request = ProviderRequest("openai/gpt-fake", messages)
    events: list[Any] = [e async for e in provider.stream(request)]
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(pieces) > 1
    assert {(e.index, e.name, e.id) for e in pieces} == {(0, "lookup", "call_1")}
    assert json.loads("".join(e.arguments for e in pieces)) == VALUE
    call = next(i for i, e in enumerate(events) if isinstance(e, ToolCall))
    assert all(events.index(e) < call for e in pieces)


async def test_tool_mode_streams_partials_as_the_output_calls_arguments_arrive(
    server: FakeChatCompletions,
) -> None:
    server.reply_tool_call("call_1", "final_result", VALUE)
    config = AgentConfig(
        "bridge", provider="litellm", model="openai/gpt-fake", base_url=server.base_url,
        api_key="test-key", output_type=SCHEMA, output_mode="tool",
    )  # fmt: skip
    partials, result = await streamed_partials(config, "Extract.")
    assert result.success, result.status
    assert len(partials) > 1 and partials[-1] == VALUE
    assert all(VALUE["name"].startswith(p.get("name", "")) for p in partials)
    assert result.structured == VALUE
