"""converse-stream events, however the service cuts them, assemble into the turn the
``converse`` reply would have been (properties over text, reasoning and tool arguments); the
pieces of a tool call's input pass on as ``ToolCallDelta``, so tool mode streams the output
as it arrives."""

from __future__ import annotations

import itertools
import json
from typing import Any

from fake_bedrock import FakeBedrock
from hypothesis import given, settings
from hypothesis import strategies as st
from oma_bedrock.replies import StreamAssembler, response_from_json

from oma_core import AgentConfig
from oma_core.testing.output_checks import streamed_partials
from oma_core.toolkit import ToolCall, ToolCallDelta

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**9), 10**9) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


def pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points)] or [""]


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(max_size=60),
    thinking=st.text(min_size=1, max_size=30),
    arguments=st.dictionaries(st.text(max_size=8), _JSON, max_size=4),
    cuts=st.lists(st.integers(0, 10**6), max_size=12),
)
def test_any_cut_of_a_stream_assembles_the_same_turn_as_converse(
    text: str, thinking: str, arguments: dict[str, Any], cuts: list[int]
) -> None:
    content = [
        {"reasoningContent": {"reasoningText": {"text": thinking, "signature": "sig"}}},
        {"text": text},
        {"toolUse": {"toolUseId": "tu_1", "name": "f", "input": arguments}},
    ]
    usage = {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}
    reply = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use",
        "usage": usage,
    }
    expected = response_from_json(reply, "m")

    assembler = StreamAssembler("m")
    events: list[Any] = []

    def feed(kind: str, payload: dict[str, Any]) -> None:
        out = assembler.feed(kind, payload)
        if out is not None:
            events.append(out)

    feed("messageStart", {"role": "assistant"})
    for piece in pieces(thinking, cuts):
        feed(
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": piece}}},
        )
    feed(
        "contentBlockDelta",
        {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}},
    )
    feed("contentBlockStop", {"contentBlockIndex": 0})
    for piece in pieces(text, cuts):
        feed("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": piece}})
    feed("contentBlockStop", {"contentBlockIndex": 1})
    feed(
        "contentBlockStart",
        {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tu_1", "name": "f"}}},
    )
    for piece in pieces(json.dumps(arguments), cuts):
        feed("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": piece}}})
    feed("contentBlockStop", {"contentBlockIndex": 2})
    feed("messageStop", {"stopReason": "tool_use"})
    feed("metadata", {"usage": usage, "metrics": {"latencyMs": 1}})

    assert assembler.finish() == expected
    assert "".join(e.text for e in events if type(e).__name__ == "TextDelta") == text
    pieces_of_call = [e for e in events if isinstance(e, ToolCallDelta)]
    assert "".join(e.arguments for e in pieces_of_call) == json.dumps(arguments)
    assert {(e.index, e.name, e.id) for e in pieces_of_call} <= {(2, "f", "tu_1")}
    assert isinstance(events[-1], ToolCall)  # the whole call, after its pieces


async def test_tool_mode_streams_partials_as_the_output_calls_input_arrives(
    server: FakeBedrock,
) -> None:
    server.chunk_size = 3
    value = {"name": "ACME Corporation", "lines": ["bolt", "nut"]}
    server.reply_tool_use("tu_1", "final_result", value)
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "lines": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "lines"],
        "additionalProperties": False,
    }
    config = AgentConfig(
        "b", provider="bedrock", base_url=server.url, max_retries=0,
        output_type=schema, output_mode="tool",
    )  # fmt: skip
    partials, result = await streamed_partials(config, "Extract.")
    assert result.success, result.status
    assert len(partials) > 1 and partials[-1] == value
    assert all(value["name"].startswith(p.get("name", "")) for p in partials)
    assert result.structured == value
