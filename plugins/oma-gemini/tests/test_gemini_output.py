"""Structured output on Gemini's wire: the schema natively in ``generationConfig``
(``responseMimeType`` JSON with ``responseJsonSchema``), or one more function whose call
``toolConfig`` forces; each body checked against ``google-genai``'s own request types."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from fake_gemini import API_KEY, FakeGemini, Reply
from genai_types import assert_google_genai_takes
from oma_gemini import CAPABILITIES, create_provider

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
        "lines": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"item": {"type": "string"}, "cents": {"type": "integer"}},
                "required": ["item", "cents"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["name", "kind", "lines"],
    "additionalProperties": False,
}
VALUE = {"name": "ACME", "kind": "invoice", "lines": [{"item": "bolt", "cents": 12}]}
CONTENTS = [{"role": "user", "parts": [{"text": "extract the fields"}]}]
LOOKUP = ToolDefinition("lookup", "Look a word up.", {"type": "object"})


def _request(
    mode: Literal["native", "tool"], *, tools: tuple[ToolDefinition, ...] = ()
) -> ProviderRequest:
    output = OutputRequest(SCHEMA, "final_result", mode, description="The invoice's fields.")
    messages = load_messages(
        [{"role": "user", "content": [{"type": "text", "text": "extract the fields"}]}]
    )
    return ProviderRequest(model="gemini-2.5-flash", messages=messages, tools=tools, output=output)


NATIVE_BODY: dict[str, Any] = {
    "contents": CONTENTS,
    "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA},
}
FINAL_RESULT = {
    "name": "final_result",
    "description": "The invoice's fields.",
    "parametersJsonSchema": SCHEMA,
}
TOOL_BODY: dict[str, Any] = {
    "contents": CONTENTS,
    "tools": [{"functionDeclarations": [FINAL_RESULT]}],
    "toolConfig": {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["final_result"]}
    },
}


def test_gemini_declares_native_tool_and_prompted_output() -> None:
    assert CAPABILITIES.output_modes == {"native", "tool", "prompted"}


class TestNative:
    async def test_complete_sends_the_schema_as_response_json_schema(
        self, server: FakeGemini, provider: Provider
    ) -> None:
        server.reply(Reply(text=json.dumps(VALUE)))
        request = _request("native")
        response = await provider.complete(request)
        body = server.requests[0].json
        assert body == NATIVE_BODY == provider.render(request)
        assert_google_genai_takes(body)
        assert json.loads(response.message.content[0].text) == VALUE  # type: ignore[union-attr]

    async def test_stream_sends_the_same_body(self, server: FakeGemini, provider: Provider) -> None:
        server.reply(Reply(text=json.dumps(VALUE)))
        events = [e async for e in provider.stream(_request("native"))]
        assert server.requests[0].json == NATIVE_BODY
        assert server.requests[0].path.endswith(":streamGenerateContent")
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert json.loads(text) == VALUE
        assert isinstance(events[-1], ResponseComplete)

    def test_generation_options_stay_beside_the_schema_and_a_response_schema_gives_way(
        self,
    ) -> None:
        options = {"generationConfig": {"topK": 3, "responseSchema": {"type": "STRING"}}}
        provider = create_provider(ProviderSettings(api_key=API_KEY, options=options))
        config = provider.render(_request("native"))["generationConfig"]
        assert config == {
            "topK": 3,
            "responseMimeType": "application/json",
            "responseJsonSchema": SCHEMA,
        }


class TestTool:
    async def test_complete_forces_the_output_function(
        self, server: FakeGemini, provider: Provider
    ) -> None:
        server.reply(Reply(text="", calls=(("c1", "final_result", VALUE),)))
        request = _request("tool")
        response = await provider.complete(request)
        body = server.requests[0].json
        assert body == TOOL_BODY == provider.render(request)
        assert_google_genai_takes(body)
        (call,) = response.message.content
        assert (call.name, call.plain_input()) == ("final_result", VALUE)  # type: ignore[union-attr]
        assert response.stop_reason == "tool_use"

    async def test_stream_forces_it_too(self, server: FakeGemini, provider: Provider) -> None:
        server.reply(Reply(text="", calls=(("c1", "final_result", VALUE),)))
        events = [e async for e in provider.stream(_request("tool"))]
        assert server.requests[0].json == TOOL_BODY
        calls = [e.block for e in events if isinstance(e, ToolCall)]
        assert [(c.name, c.plain_input()) for c in calls] == [("final_result", VALUE)]

    async def test_with_tools_of_the_agent_s_own_any_function_is_forced(
        self, server: FakeGemini, provider: Provider
    ) -> None:
        server.reply(Reply(text="", calls=(("c1", "final_result", VALUE),)))
        await provider.complete(_request("tool", tools=(LOOKUP,)))
        body = server.requests[0].json
        lookup = {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {"type": "object"},
        }
        assert body["tools"] == [{"functionDeclarations": [lookup, FINAL_RESULT]}]
        # the model may call the agent's tools first; the output ends the run when it comes
        assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
        assert_google_genai_takes(body)

    @pytest.mark.parametrize("given", [{"retrievalConfig": {"languageCode": "en"}}, {}])
    def test_a_tool_config_option_keeps_its_other_fields(self, given: dict[str, Any]) -> None:
        options = {"toolConfig": {**given, "functionCallingConfig": {"mode": "NONE"}}}
        provider = create_provider(ProviderSettings(api_key=API_KEY, options=options))
        assert provider.render(_request("tool"))["toolConfig"] == {
            **given,
            **TOOL_BODY["toolConfig"],
        }
