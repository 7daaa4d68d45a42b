"""Structured output on the Converse wire, what only Bedrock has: native mode because
botocore's service model has ``outputConfig.textFormat``; each mode's body exactly as the API
reference gives it (the schema as a JSON string) and as botocore's ``Converse`` and
``ConverseStream`` input shapes take it; ``strict`` on the output tool only when asked. That
the schema reaches the service in each declared mode, complete and streamed, and comes back
typed (with one corrective turn) is the conformance kit's (``test_bedrock_conformance.py``)."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from botocore.session import get_session
from botocore_model import MODEL, assert_botocore_takes
from oma_bedrock import CAPABILITIES

from oma_core import load_messages
from oma_core.toolkit import OutputRequest, ProviderRequest, ToolDefinition

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


LOOKUP_ON_WIRE = {
    "toolSpec": {
        "name": "lookup",
        "description": "Look a word up.",
        "inputSchema": {"json": {"type": "object"}},
    }
}


@pytest.mark.parametrize(
    ("request_", "body"),
    [
        pytest.param(_request("native"), NATIVE_BODY, id="native"),
        pytest.param(_request("tool"), TOOL_BODY, id="tool"),
        pytest.param(
            _request("tool", tools=(LOOKUP,)),
            {
                "messages": MESSAGES,
                # the model may call the agent's tools first
                "toolConfig": {"tools": [LOOKUP_ON_WIRE, FINAL_RESULT], "toolChoice": {"any": {}}},
            },
            id="tool-beside-the-agent-s-tools",
        ),
    ],
)
@pytest.mark.parametrize("operation", ["Converse", "ConverseStream"])
async def test_each_mode_s_body_is_the_documented_one_and_botocore_takes_it(
    provider: Any, request_: ProviderRequest, body: dict[str, Any], operation: str
) -> None:
    rendered = provider.render(request_)
    assert rendered == body
    assert_botocore_takes(rendered, operation)


@pytest.mark.parametrize("strict", [True, False])
async def test_strict_is_sent_only_when_asked(provider: Any, strict: bool) -> None:
    tools = provider.render(_request("tool", strict=strict))["toolConfig"]["tools"]
    (spec,) = [t["toolSpec"] for t in tools]
    assert spec.get("strict") == (True if strict else None)
