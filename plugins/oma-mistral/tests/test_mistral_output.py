"""Structured output on Mistral's wire: the schema natively as ``response_format``
``json_schema``, or one more function that ``tool_choice`` forces."""

from __future__ import annotations

import json
from typing import Any, Literal

from fake_mistral import API_KEY, FakeMistral, Reply
from oma_mistral import CAPABILITIES, MistralProvider

from oma_core import load_messages
from oma_core.toolkit import (
    OutputRequest,
    Provider,
    ProviderRequest,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolDefinition,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "kind": {"type": "string", "enum": ["invoice", "receipt"]},
        "lines": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "kind", "lines"],
    "additionalProperties": False,
}
VALUE = {"name": "ACME", "kind": "invoice", "lines": ["bolt"]}
MESSAGES = [{"role": "user", "content": "extract the fields"}]
LOOKUP = ToolDefinition("lookup", "Look a word up.", {"type": "object"})


def _request(
    mode: Literal["native", "tool"], *, strict: bool = True, tools: tuple[ToolDefinition, ...] = ()
) -> ProviderRequest:
    output = OutputRequest(
        SCHEMA, "final_result", mode, description="The invoice's fields.", strict=strict
    )
    messages = load_messages(
        [{"role": "user", "content": [{"type": "text", "text": "extract the fields"}]}]
    )
    return ProviderRequest(model="mistral-test", messages=messages, tools=tools, output=output)


NATIVE_BODY: dict[str, Any] = {
    "model": "mistral-test",
    "messages": MESSAGES,
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "final_result",
            "schema": SCHEMA,
            "strict": True,
            "description": "The invoice's fields.",
        },
    },
}
FINAL_RESULT = {
    "type": "function",
    "function": {
        "name": "final_result",
        "description": "The invoice's fields.",
        "parameters": SCHEMA,
    },
}
TOOL_BODY: dict[str, Any] = {
    "model": "mistral-test",
    "messages": MESSAGES,
    "tools": [FINAL_RESULT],
    "tool_choice": {"type": "function", "function": {"name": "final_result"}},
}


def test_mistral_declares_native_tool_and_prompted_output() -> None:
    assert CAPABILITIES.output_modes == {"native", "tool", "prompted"}


class TestNative:
    async def test_complete_sends_a_json_schema_response_format(
        self, server: FakeMistral, provider: Provider
    ) -> None:
        server.reply(Reply(text=json.dumps(VALUE)))
        request = _request("native")
        response = await provider.complete(request)
        assert server.requests[0].json == NATIVE_BODY == provider.render(request)
        assert json.loads(response.message.content[0].text) == VALUE  # type: ignore[union-attr]

    async def test_stream_sends_the_same_fields(
        self, server: FakeMistral, provider: Provider
    ) -> None:
        server.reply(Reply(text=json.dumps(VALUE)))
        events = [e async for e in provider.stream(_request("native"))]
        assert server.requests[0].json == {**NATIVE_BODY, "stream": True}
        assert json.loads("".join(e.text for e in events if isinstance(e, TextDelta))) == VALUE
        assert isinstance(events[-1], ResponseComplete)

    def test_strict_false_is_sent_as_false(self) -> None:
        provider = MistralProvider(ProviderSettings(api_key=API_KEY))
        spec = provider.render(_request("native", strict=False))["response_format"]["json_schema"]
        assert spec["strict"] is False

    def test_the_output_wins_over_a_response_format_option(self) -> None:
        options = {"response_format": {"type": "json_object"}}
        provider = MistralProvider(ProviderSettings(api_key=API_KEY, options=options))
        body = provider.render(_request("native"))
        assert body["response_format"] == NATIVE_BODY["response_format"]


class TestTool:
    async def test_complete_forces_the_output_function(
        self, server: FakeMistral, provider: Provider
    ) -> None:
        server.reply(Reply(text="", tool_calls=(("call00001", "final_result", json.dumps(VALUE)),)))
        request = _request("tool")
        response = await provider.complete(request)
        assert server.requests[0].json == TOOL_BODY == provider.render(request)
        (call,) = response.message.content
        assert (call.name, call.plain_input()) == ("final_result", VALUE)  # type: ignore[union-attr]

    async def test_stream_forces_it_too(self, server: FakeMistral, provider: Provider) -> None:
        server.reply(Reply(text="", tool_calls=(("call00001", "final_result", json.dumps(VALUE)),)))
        events = [e async for e in provider.stream(_request("tool"))]
        assert server.requests[0].json == {**TOOL_BODY, "stream": True}
        calls = [e.block for e in events if isinstance(e, ToolCall)]
        assert [(c.name, c.plain_input()) for c in calls] == [("final_result", VALUE)]

    async def test_with_tools_of_the_agent_s_own_any_tool_is_forced(
        self, server: FakeMistral, provider: Provider
    ) -> None:
        server.reply(Reply(text="", tool_calls=(("call00001", "final_result", json.dumps(VALUE)),)))
        await provider.complete(_request("tool", tools=(LOOKUP,)))
        body = server.requests[0].json
        lookup = {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look a word up.",
                "parameters": {"type": "object"},
            },
        }
        assert body["tools"] == [lookup, FINAL_RESULT]
        assert body["tool_choice"] == "any"  # the model may call the agent's tools first
