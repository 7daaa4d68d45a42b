"""What comes back: stop reasons mapped, reasoning with its signature, usage — the same from
``converse`` and from ``converse-stream``."""

from __future__ import annotations

from typing import Any

import pytest
from fake_bedrock import FakeBedrock

from oma_core import Agent, AgentConfig, LLMMessage, ReasoningBlock, TextBlock, Usage, load_messages
from oma_core.toolkit import (
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ReasoningDelta,
    ResponseComplete,
)

REQUEST = ProviderRequest(
    model=None,
    messages=load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
)


async def both(server: FakeBedrock) -> tuple[ProviderResponse, list[Any], ProviderResponse]:
    from oma_bedrock import create_provider

    built = create_provider(ProviderSettings(base_url=server.url))
    try:
        whole = await built.complete(REQUEST)
        events = [e async for e in built.stream(REQUEST)]
    finally:
        await built.aclose()
    assert isinstance(events[-1], ResponseComplete)
    return whole, events[:-1], events[-1].response


@pytest.mark.parametrize(
    ("converse", "oma"),
    [
        ("end_turn", "end_turn"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("model_context_window_exceeded", "max_tokens"),
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
    ],
)
async def test_stop_reasons_are_mapped(server: FakeBedrock, converse: str, oma: str) -> None:
    for _ in range(2):
        server.reply({"text": "partial"}, stop_reason=converse)
    whole, _, final = await both(server)
    assert whole.stop_reason == final.stop_reason == oma
    assert whole == final


async def test_reasoning_comes_back_with_its_signature(server: FakeBedrock) -> None:
    reasoning = {
        "reasoningContent": {"reasoningText": {"text": "let me think", "signature": "sig-123"}}
    }
    for _ in range(2):
        server.reply(reasoning, {"text": "42"}, output_tokens=9)
    whole, events, final = await both(server)
    assert whole == final
    assert whole.message.content == (  # marked as Bedrock's: sent back only there
        ReasoningBlock("let me think", "sig-123", provider="bedrock"),
        TextBlock("42"),
    )
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "let me think"
    assert whole.usage.output_tokens == 9


async def test_redacted_reasoning_round_trips(server: FakeBedrock) -> None:
    for _ in range(2):
        server.reply({"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}, {"text": "ok"})
    whole, _, final = await both(server)
    assert whole == final
    assert whole.message.content[0] == ReasoningBlock(
        "", redacted_data="ZW5jcnlwdGVk", provider="bedrock"
    )


async def test_usage_counts_cache_reads_and_writes_as_input(server: FakeBedrock) -> None:
    """``inputTokens`` leaves the cached tokens out; oma's input count has them in."""
    for _ in range(2):
        server.reply(
            {"text": "ok"}, input_tokens=11, output_tokens=7, cache_read=100, cache_write=20
        )
    whole, _, final = await both(server)
    assert whole.usage == Usage(131, 7, cache_read_tokens=100, cache_write_tokens=20)
    assert final.usage == whole.usage


async def test_reasoning_sent_back_keeps_its_signature(server: FakeBedrock) -> None:
    from oma_bedrock import create_provider

    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "t", "signature": "s"},
                {"type": "text", "text": "a"},
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": "more"}]},
    ]
    built = create_provider(ProviderSettings(base_url=server.url))
    body = built.render(ProviderRequest(model=None, messages=load_messages(conversation)))
    assert body["messages"][1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "t", "signature": "s"}}
    }


async def test_only_bedrocks_own_signed_reasoning_goes_back(server: FakeBedrock) -> None:
    """Claude on Bedrock and on Anthropic sign alike, but oma sends a signature back only to
    the provider that issued it: Anthropic's is left out of a Bedrock request."""
    from oma_bedrock import create_provider

    signed = [
        ReasoningBlock("mine", "bedrock-sig", provider="bedrock"),
        ReasoningBlock("theirs", "anthropic-sig", provider="anthropic"),
        TextBlock("a"),
    ]
    conversation = [
        LLMMessage("user", [TextBlock("q")]),
        LLMMessage("assistant", signed),
        LLMMessage("user", [TextBlock("more")]),
    ]
    built = create_provider(ProviderSettings(base_url=server.url))
    async with Agent(AgentConfig("b", provider=built, model="m")) as agent:
        result = await agent.run(conversation)
    await built.aclose()
    assert result.success, result.status.error
    assert server.requests[0].json["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "mine", "signature": "bedrock-sig"}}},
        {"text": "a"},
    ]
