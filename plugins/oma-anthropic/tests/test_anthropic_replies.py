"""Replies, through both SDK paths (one JSON message, the raw event stream), become oma's turns."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic

from oma_core import (
    Agent,
    AgentConfig,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolUseBlock,
    Usage,
    dump_messages,
    load_messages,
)
from oma_core.messages import user_text
from oma_core.testing import ScriptedProvider
from oma_core.testing.output_checks import streamed_partials
from oma_core.toolkit import (
    ProviderRequest,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)

REQUEST = ProviderRequest(
    model="claude-test",
    messages=load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
)


def tool_use() -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_9", "name": "search", "input": {"q": "cats", "n": 2}}


INVOICE = {  # a JSON Schema output type
    "type": "object",
    "properties": {"number": {"type": "string"}, "total": {"type": "number"}},
    "required": ["number", "total"],
    "additionalProperties": False,
}


async def both(provider: Any) -> tuple[Any, list[Any]]:
    """The complete() response and the stream's events (ResponseComplete last)."""
    whole = await provider.complete(REQUEST)
    events = [e async for e in provider.stream(REQUEST)]
    return whole, events


async def test_text_reply_streams_token_by_token(server: FakeAnthropic, provider: Any) -> None:
    server.chunk_size = 3
    for _ in range(2):
        server.reply_text("Hello, world")
    whole, events = await both(provider)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel", "lo,", " wo", "rld"]
    assert events[-1] == ResponseComplete(whole)
    assert whole.message.content == (TextBlock("Hello, world"),)
    assert whole.stop_reason == "end_turn"
    assert whole.model == "claude-test"


async def test_tool_input_streams_as_pieces_before_its_one_tool_call(
    server: FakeAnthropic, provider: Any
) -> None:
    server.chunk_size = 5
    server.reply({"type": "text", "text": "Let me look."}, tool_use(), stop_reason="tool_use")
    events = [e async for e in provider.stream(REQUEST)]
    pieces = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(pieces) > 1
    assert {(e.index, e.name, e.id) for e in pieces} == {(1, "search", "toolu_9")}
    assert "".join(e.arguments for e in pieces) == json.dumps({"q": "cats", "n": 2})
    [call] = [i for i, e in enumerate(events) if isinstance(e, ToolCall)]
    assert all(events.index(e) < call for e in pieces)  # the whole call comes after them


async def test_tool_mode_streams_partials_as_the_output_tools_input_arrives(
    server: FakeAnthropic, provider: Any
) -> None:
    server.chunk_size = 3
    final = {"number": "INV-2026-7", "total": 12.5}
    output = {"type": "tool_use", "id": "toolu_1", "name": "final_result", "input": final}
    server.reply(output, stop_reason="tool_use")
    config = AgentConfig(
        "t", provider=provider, model="claude-sonnet-4-6", output_type=INVOICE, output_mode="tool"
    )
    partials, result = await streamed_partials(config, "Extract.")
    assert len(partials) > 1 and partials[-1] == final
    assert all(final["number"].startswith(p.get("number", "")) for p in partials)
    assert result.structured == final


async def test_tool_use_reply_becomes_one_tool_call(server: FakeAnthropic, provider: Any) -> None:
    for _ in range(2):
        server.reply_tool_use("toolu_9", "search", {"q": "cats", "n": 2})
    whole, events = await both(provider)
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert len(calls) == 1
    block = calls[0].block
    assert (block.id, block.name) == ("toolu_9", "search")
    assert dump_messages([whole.message])[0]["content"] == [
        {"type": "tool_use", "id": "toolu_9", "name": "search", "input": {"q": "cats", "n": 2}}
    ]
    assert whole.stop_reason == "tool_use"
    assert isinstance(whole.message.content[0], ToolUseBlock)


async def test_thinking_reply_keeps_its_signature(server: FakeAnthropic, provider: Any) -> None:
    blocks = (
        {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAhIM"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
        {"type": "text", "text": "42"},
    )
    for _ in range(2):
        server.reply(*blocks)
    whole, events = await both(provider)
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Let me think."
    assert whole.message.content == (  # each marked as Anthropic's (sent back only there)
        ReasoningBlock("Let me think.", signature="EqQBCgIYAhIM", provider="anthropic"),
        ReasoningBlock("", redacted_data="EmwKAhgBEgy3va3pzix", provider="anthropic"),
        TextBlock("42"),
    )
    assert events[-1].response == whole


async def test_reasoning_round_trips_to_the_next_request(server: FakeAnthropic) -> None:
    server.reply(
        {"type": "thinking", "thinking": "step", "signature": "sig-A"},
        {"type": "text", "text": "first"},
    )
    config = AgentConfig(name="t", provider="anthropic", base_url=server.url, api_key="test-key")
    async with Agent(config) as agent:
        first = await agent.prompt("one")
        assert first.success
        second = await agent.prompt("two")
    assert second.success
    sent = server.requests[1].json["messages"][1]
    assert sent == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "step", "signature": "sig-A"},
            {"type": "text", "text": "first"},
        ],
    }


async def test_signed_reasoning_goes_back_to_anthropic_only(server: FakeAnthropic) -> None:
    """A saved conversation (dumped to JSON, loaded back) keeps who signed its reasoning:
    Anthropic gets the signature and redacted data back byte for byte; another provider gets
    the turn without them."""
    signature, redacted = "EqQBCgIYAhIM+/=" * 20, "EmwKAhgBEgy3va3pzix/+=="
    server.reply(
        {"type": "thinking", "thinking": "step ü", "signature": signature},
        {"type": "redacted_thinking", "data": redacted},
        {"type": "text", "text": "first"},
    )
    config = AgentConfig(name="t", provider="anthropic", base_url=server.url, api_key="test-key")
    async with Agent(config) as agent:
        first = await agent.run("one")
    saved = json.loads(json.dumps(dump_messages([user_text("one"), *first.messages])))
    assert [b.get("provider") for b in saved[1]["content"]] == ["anthropic", "anthropic", None]
    conversation = [*load_messages(saved), user_text("two")]

    async with Agent(config) as agent:
        assert (await agent.run(conversation)).success
    assert json.loads(server.requests[1].body)["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "step ü", "signature": signature},
        {"type": "redacted_thinking", "data": redacted},
        {"type": "text", "text": "first"},
    ]

    other = ScriptedProvider(["fine"], name="other")
    async with Agent(AgentConfig(name="o", provider=other)) as agent:
        assert (await agent.run(conversation)).success
    assert other.requests[0].messages[1] == LLMMessage("assistant", [TextBlock("first")])


async def test_empty_reply_is_one_empty_text_block(server: FakeAnthropic, provider: Any) -> None:
    for _ in range(2):
        server.reply()
    whole, events = await both(provider)
    assert whole.message.content == (TextBlock(""),)
    assert events[-1].response == whole


async def test_usage_comes_from_the_reply(server: FakeAnthropic, provider: Any) -> None:
    for _ in range(2):
        server.reply_text("x", input_tokens=11, output_tokens=7)
    whole, events = await both(provider)
    assert whole.usage == Usage(11, 7)
    assert events[-1].response.usage == whole.usage


async def test_usage_counts_cache_and_thinking_tokens(server: FakeAnthropic, provider: Any) -> None:
    """Anthropic's ``input_tokens`` leaves the cached tokens out; oma's counts them in."""
    cache = {"cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}
    thinking = {"output_tokens_details": {"thinking_tokens": 5}}
    for _ in range(2):
        server.reply_text("x", input_tokens=11, output_tokens=7, usage={**cache, **thinking})
    whole, events = await both(provider)
    expected = Usage(131, 7, cache_read_tokens=100, cache_write_tokens=20, reasoning_tokens=5)
    assert whole.usage == expected
    assert events[-1].response.usage == expected


@pytest.mark.parametrize("streaming", [False, True])
async def test_agent_tool_loop_runs_over_http(server: FakeAnthropic, streaming: bool) -> None:
    from oma_core import tool

    @tool
    def double(x: int) -> int:
        """Double x."""
        return 2 * x

    server.reply_tool_use("toolu_1", "double", {"x": 21})
    server.reply_text("It is 42.")
    config = AgentConfig(
        name="t", provider="anthropic", base_url=server.url, api_key="test-key", tools=[double]
    )
    async with Agent(config) as agent:
        if streaming:
            async with agent.stream("double 21") as events:
                result = [e async for e in events][-1].data
        else:
            result = await agent.run("double 21")
    assert result.output == "It is 42."
    second = server.requests[1].json
    assert second["tools"][0]["name"] == "double"
    assert second["messages"][2]["content"][0]["type"] == "tool_result"
    assert second["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"
