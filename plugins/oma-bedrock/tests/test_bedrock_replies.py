"""What comes back: stop reasons mapped, reasoning with its signature, usage — the same from
``converse`` and from ``converse-stream``."""

from __future__ import annotations

from typing import Any

import pytest
from fake_bedrock import FakeBedrock

from oma_core import ReasoningBlock, TextBlock, load_messages
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
    assert whole.message.content == (ReasoningBlock("let me think", "sig-123"), TextBlock("42"))
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "let me think"
    assert whole.usage.output_tokens == 9


async def test_redacted_reasoning_round_trips(server: FakeBedrock) -> None:
    for _ in range(2):
        server.reply({"reasoningContent": {"redactedContent": "ZW5jcnlwdGVk"}}, {"text": "ok"})
    whole, _, final = await both(server)
    assert whole == final
    assert whole.message.content[0] == ReasoningBlock("", redacted_data="ZW5jcnlwdGVk")


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
