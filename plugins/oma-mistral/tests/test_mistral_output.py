"""Structured output on Mistral's wire, what only Mistral has: each mode's body exactly as
the API reference gives it (the description and ``strict`` beside the schema), ``strict``
false sent as false, and the output winning over a ``response_format`` option. That the
schema reaches the service in each declared mode, complete and streamed, and comes back
typed (with one corrective turn) is the conformance kit's (``test_mistral_conformance.py``)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from fake_mistral import API_KEY
from oma_mistral import MistralProvider

from oma_core import load_messages
from oma_core.toolkit import OutputRequest, ProviderRequest, ProviderSettings

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


def _request(mode: Literal["native", "tool"], *, strict: bool = True) -> ProviderRequest:
    output = OutputRequest(
        SCHEMA, "final_result", mode, description="The invoice's fields.", strict=strict
    )
    messages = load_messages(
        [{"role": "user", "content": [{"type": "text", "text": "extract the fields"}]}]
    )
    return ProviderRequest(model="mistral-test", messages=messages, output=output)


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


def _render(request: ProviderRequest, **options: Any) -> dict[str, Any]:
    return MistralProvider(ProviderSettings(api_key=API_KEY, options=options)).render(request)


@pytest.mark.parametrize(
    ("mode", "body"), [("native", NATIVE_BODY), ("tool", TOOL_BODY)], ids=["native", "tool"]
)
def test_each_mode_s_body_is_the_documented_one(
    mode: Literal["native", "tool"], body: dict[str, Any]
) -> None:
    assert _render(_request(mode)) == body


def test_strict_false_is_sent_as_false() -> None:
    spec = _render(_request("native", strict=False))["response_format"]["json_schema"]
    assert spec["strict"] is False


def test_the_output_wins_over_a_response_format_option() -> None:
    body = _render(_request("native"), response_format={"type": "json_object"})
    assert body["response_format"] == NATIVE_BODY["response_format"]
