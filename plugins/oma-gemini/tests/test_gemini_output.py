"""Structured output on Gemini's wire, what only Gemini has: each mode's body exactly as the
API reference gives it and as ``google-genai``'s own request types take it, and how the
output merges with ``generationConfig`` / ``toolConfig`` options. That the schema reaches the
service in each declared mode, complete and streamed, and comes back typed (with one
corrective turn) is the conformance kit's (``test_gemini_conformance.py``)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from fake_gemini import API_KEY
from genai_types import assert_google_genai_takes
from oma_gemini import create_provider

from oma_core import load_messages
from oma_core.toolkit import OutputRequest, ProviderRequest, ProviderSettings, ToolDefinition

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


def _render(request: ProviderRequest, **options: Any) -> dict[str, Any]:
    return create_provider(ProviderSettings(api_key=API_KEY, options=options)).render(request)


LOOKUP_ON_WIRE = {
    "name": "lookup",
    "description": "Look a word up.",
    "parameters": {"type": "object"},
}


@pytest.mark.parametrize(
    ("request_", "body"),
    [
        pytest.param(_request("native"), NATIVE_BODY, id="native"),
        pytest.param(_request("tool"), TOOL_BODY, id="tool"),
        pytest.param(
            _request("tool", tools=(LOOKUP,)),
            {
                "contents": CONTENTS,
                "tools": [{"functionDeclarations": [LOOKUP_ON_WIRE, FINAL_RESULT]}],
                # the model may call the agent's tools first; the output ends the run
                "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            },
            id="tool-beside-the-agent-s-tools",
        ),
    ],
)
def test_each_mode_s_body_is_the_documented_one_and_google_genai_takes_it(
    request_: ProviderRequest, body: dict[str, Any]
) -> None:
    rendered = _render(request_)
    assert rendered == body
    assert_google_genai_takes(rendered)


def test_generation_options_stay_beside_the_schema_and_a_response_schema_gives_way() -> None:
    options = {"generationConfig": {"topK": 3, "responseSchema": {"type": "STRING"}}}
    config = _render(_request("native"), **options)["generationConfig"]
    assert config == {
        "topK": 3,
        "responseMimeType": "application/json",
        "responseJsonSchema": SCHEMA,
    }


@pytest.mark.parametrize("given", [{"retrievalConfig": {"languageCode": "en"}}, {}])
def test_a_tool_config_option_keeps_its_other_fields_in_tool_mode(given: dict[str, Any]) -> None:
    options = {"toolConfig": {**given, "functionCallingConfig": {"mode": "NONE"}}}
    assert _render(_request("tool"), **options)["toolConfig"] == {
        **given,
        **TOOL_BODY["toolConfig"],
    }
