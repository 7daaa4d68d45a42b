"""Structured output on the Converse wire: the schema natively as ``outputConfig.textFormat``,
or one more tool that ``toolChoice`` forces; each body checked against botocore's own
``bedrock-runtime`` service model (``Converse`` and ``ConverseStream`` input shapes)."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from botocore.session import get_session
from botocore_model import MODEL, assert_botocore_takes
from fake_bedrock import FakeBedrock
from oma_bedrock import CAPABILITIES

from oma_core import load_messages
from oma_core.toolkit import (
    OutputRequest,
    ProviderRequest,
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
MESSAGES = [{"role": "user", "content": [{"text": "extract the fields"}]}]
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
    return ProviderRequest(model=MODEL, messages=messages, tools=tools, output=output)


NATIVE_BODY: dict[str, Any] = {
    "messages": MESSAGES,
    "outputConfig": {
        "textFormat": {
            "type": "json_schema",
            "structure": {
                "jsonSchema": {
                    "schema": json.dumps(SCHEMA, separators=(",", ":")),
                    "name": "final_result",
                    "description": "The invoice's fields.",
                }
            },
        }
    },
}
FINAL_RESULT = {
    "toolSpec": {
        "name": "final_result",
        "description": "The invoice's fields.",
        "inputSchema": {"json": SCHEMA},
        "strict": True,
    }
}
TOOL_BODY: dict[str, Any] = {
    "messages": MESSAGES,
    "toolConfig": {"tools": [FINAL_RESULT], "toolChoice": {"tool": {"name": "final_result"}}},
}


def test_bedrock_declares_native_tool_and_prompted_output() -> None:
    # native because botocore's service model has outputConfig.textFormat (json_schema)
    operation = get_session().get_service_model("bedrock-runtime").operation_model("Converse")
    shape: Any = operation.input_shape
    text_format = shape.members["outputConfig"].members["textFormat"]
    assert text_format.members["type"].enum == ["json_schema"]
    assert CAPABILITIES.output_modes == {"native", "tool", "prompted"}


class TestNative:
    async def test_converse_sends_the_schema_as_output_config(
        self, server: FakeBedrock, provider: Any
    ) -> None:
        server.reply_text(json.dumps(VALUE))
        request = _request("native")
        response = await provider.complete(request)
        body = server.requests[0].json
        assert body == NATIVE_BODY == provider.render(request)
        assert_botocore_takes(body, "Converse")
        assert json.loads(response.message.content[0].text) == VALUE

    async def test_converse_stream_sends_the_same_body(
        self, server: FakeBedrock, provider: Any
    ) -> None:
        server.reply_text(json.dumps(VALUE))
        events = [e async for e in provider.stream(_request("native"))]
        assert server.requests[0].path.endswith("/converse-stream")
        assert server.requests[0].json == NATIVE_BODY
        assert_botocore_takes(server.requests[0].json, "ConverseStream")
        assert json.loads("".join(e.text for e in events if isinstance(e, TextDelta))) == VALUE
        assert isinstance(events[-1], ResponseComplete)


class TestTool:
    async def test_converse_forces_the_output_tool(
        self, server: FakeBedrock, provider: Any
    ) -> None:
        server.reply_tool_use("tu1", "final_result", VALUE)
        request = _request("tool")
        response = await provider.complete(request)
        body = server.requests[0].json
        assert body == TOOL_BODY == provider.render(request)
        assert_botocore_takes(body, "Converse")
        (call,) = response.message.content
        assert (call.name, call.plain_input()) == ("final_result", VALUE)
        assert response.stop_reason == "tool_use"

    async def test_converse_stream_forces_it_too(self, server: FakeBedrock, provider: Any) -> None:
        server.reply_tool_use("tu1", "final_result", VALUE)
        events = [e async for e in provider.stream(_request("tool"))]
        assert server.requests[0].json == TOOL_BODY
        assert_botocore_takes(server.requests[0].json, "ConverseStream")
        calls = [e.block for e in events if isinstance(e, ToolCall)]
        assert [(c.name, c.plain_input()) for c in calls] == [("final_result", VALUE)]

    @pytest.mark.parametrize("strict", [True, False])
    async def test_strict_is_sent_only_when_asked(
        self, server: FakeBedrock, provider: Any, strict: bool
    ) -> None:
        server.reply_tool_use("tu1", "final_result", VALUE)
        await provider.complete(_request("tool", strict=strict))
        (spec,) = [t["toolSpec"] for t in server.requests[0].json["toolConfig"]["tools"]]
        assert spec.get("strict") == (True if strict else None)

    async def test_with_tools_of_the_agent_s_own_any_tool_is_forced(
        self, server: FakeBedrock, provider: Any
    ) -> None:
        server.reply_tool_use("tu1", "final_result", VALUE)
        await provider.complete(_request("tool", tools=(LOOKUP,)))
        tools = server.requests[0].json["toolConfig"]["tools"]
        assert [t["toolSpec"]["name"] for t in tools] == ["lookup", "final_result"]
        # the model may call the agent's tools first
        assert server.requests[0].json["toolConfig"]["toolChoice"] == {"any": {}}
        assert_botocore_takes(server.requests[0].json, "Converse")
