"""Structured output through the bridge, what only the bridge has: each mode handed to LiteLLM
in OpenAI's form exactly (``response_format`` ``json_schema`` with its description, or a
function that ``tool_choice`` forces), and ``strict`` asked only for a schema that keeps
OpenAI's strict rules. That the schema reaches the service in each declared mode on both
routes (on ``anthropic/`` as LiteLLM's own ``json_tool_call``), complete and streamed, and
comes back typed (with one corrective turn) is the conformance kit's
(``test_litellm_conformance.py``, ``test_litellm_conformance_anthropic.py``)."""

from __future__ import annotations

from typing import Any, Literal

import attrs
import pytest
from oma_litellm.mapping import build_body, strict_ready

from oma_core import load_messages
from oma_core.toolkit import OutputRequest, ProviderRequest

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
MESSAGES = [{"role": "user", "content": "extract the fields"}]


def _request(mode: Literal["native", "tool"]) -> ProviderRequest:
    output = OutputRequest(SCHEMA, "final_result", mode, description="The invoice's fields.")
    messages = load_messages(
        [{"role": "user", "content": [{"type": "text", "text": "extract the fields"}]}]
    )
    return ProviderRequest(model="openai/gpt-fake", messages=messages, output=output)


NATIVE_BODY: dict[str, Any] = {
    "model": "gpt-fake",
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
    "model": "gpt-fake",
    "messages": MESSAGES,
    "tools": [FINAL_RESULT],
    "tool_choice": {"type": "function", "function": {"name": "final_result"}},
}


@pytest.mark.parametrize(
    ("mode", "body"), [("native", NATIVE_BODY), ("tool", TOOL_BODY)], ids=["native", "tool"]
)
def test_each_mode_is_handed_over_in_openai_s_form(
    mode: Literal["native", "tool"], body: dict[str, Any]
) -> None:
    assert build_body(_request(mode)) == body


class TestStrict:
    def test_a_schema_keeping_openai_s_strict_rules_is_sent_strict(self) -> None:
        assert strict_ready(SCHEMA)
        assert build_body(_request("native"))["response_format"]["json_schema"]["strict"] is True

    @pytest.mark.parametrize(
        "schema",
        [
            {**SCHEMA, "required": ["name"]},  # an optional property
            {k: v for k, v in SCHEMA.items() if k != "additionalProperties"},  # an open object
            {"type": "array", "items": {"type": "object", "properties": {"a": {}}}},
            {"anyOf": [{"type": "object", "properties": {}, "additionalProperties": True}]},
        ],
    )
    def test_any_other_schema_is_sent_not_strict_rather_than_refused_by_the_route(
        self, schema: dict[str, Any]
    ) -> None:
        assert not strict_ready(schema)
        output = OutputRequest(schema, "final_result", "native")
        request = attrs.evolve(_request("native"), output=output)
        assert build_body(request)["response_format"]["json_schema"]["strict"] is False
