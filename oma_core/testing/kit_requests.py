"""The requests the conformance kit sends to check a provider's request mapping.

Two variants that differ in every field (so a reader or a provider that hard-codes one value
fails the other), each built only from blocks the provider declares: a system prompt, tool
definitions with nested schemas, enums and arrays, ``temperature`` / ``max_tokens`` /
``stop``, and a multi-turn history holding every tool-result shape the block model allows
(a string, parts with text and media, ``is_error``, several results in one message).

For structured output, ``KitInvoice``: an output type with a nested object, an enum and a list
of objects, with the JSON of a valid reply and of one that breaks the enum.
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Mapping
from typing import Any

import attrs

from ..capabilities import IN_TOOL_RESULT, Capabilities
from ..errors import UnsupportedContentBlockError
from ..tools import Tool, ToolOutput, tool
from ..validation import load_messages

__all__ = [
    "INVALID_INVOICE",
    "INVOICE",
    "KitInvoice",
    "KitRequest",
    "TYPED_INVOICE",
    "kit_requests",
    "kit_tools",
    "streamed_calls",
]

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
_IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}

FORECAST_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "the city's name"},
        "units": {"type": "string", "enum": ["C", "F"]},
        "hours": {"type": "array", "items": {"type": "integer"}},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
        },
    },
    "required": ["city", "units"],
}
LOOKUP_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
}
CHART_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}


def kit_tools(capabilities: Capabilities) -> dict[str, Tool]:
    """The kit's tools by name; ``chart`` returns text and (where declared) an image, and
    ``broken`` always fails (an ``is_error`` result)."""

    def lookup(q: str) -> str:
        return f"the answer to {q}"

    def forecast(city: str, units: str, hours: list[int] | None = None, where: Any = None) -> str:
        return f"sunny in {city}, in degrees {units}"

    def chart(city: str) -> ToolOutput:
        parts: list[Any] = [{"type": "text", "text": f"the chart of {city}:"}]
        if _takes(capabilities, IN_TOOL_RESULT):
            parts.append(_IMAGE)
        return ToolOutput(parts)

    def broken() -> str:
        raise RuntimeError("the tool broke")

    return {
        "lookup": tool(lookup, description="Look a question up.", input_schema=LOOKUP_SCHEMA),
        "forecast": tool(
            forecast, description="The weather forecast for a city.", input_schema=FORECAST_SCHEMA
        ),
        "chart": tool(chart, description="A chart of a city's weather.", input_schema=CHART_SCHEMA),
        "broken": tool(
            broken,
            description="A tool that fails.",
            input_schema={"type": "object", "properties": {}},
        ),
    }


@attrs.frozen
class KitRequest:
    """One mapping request: the ``AgentConfig`` fields it sets and the conversation."""

    name: str
    config: Mapping[str, Any]
    conversation: tuple[Mapping[str, Any], ...]


def _takes(capabilities: Capabilities, where: str) -> bool:
    """Whether a base64 PNG is declared in ``where`` (a role or ``IN_TOOL_RESULT``)."""
    if where == IN_TOOL_RESULT:
        result = {"type": "tool_result", "tool_use_id": "c", "content": [_IMAGE]}
        message = {"role": "user", "content": [result]}
    else:
        message = {"role": where, "content": [_IMAGE]}
    try:
        capabilities.check(load_messages([message]), "probe")
    except UnsupportedContentBlockError:
        return False
    return True


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _call(call_id: str, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": dict(arguments)}


def _result(call_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    result = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    return {**result, "is_error": True} if is_error else result


FORECAST_ARGUMENTS: Mapping[str, Any] = {
    "city": "Paris",
    "units": "C",
    "hours": [9, 12, 18],
    "where": {"lat": 48.85, "lon": 2.35},
}


def kit_requests(capabilities: Capabilities) -> tuple[KitRequest, KitRequest]:
    """The two variants (see the module docstring)."""
    tools = kit_tools(capabilities)
    question: list[Any] = [_text("What is the weather like in Paris?")]
    if _takes(capabilities, "user"):
        question.append(_IMAGE)
    chart_parts: list[Any] = [_text("the chart of Paris:")]
    if _takes(capabilities, IN_TOOL_RESULT):
        chart_parts.append(_IMAGE)
    whole = KitRequest(
        "whole-conversation",
        {
            "system_prompt": "You are the conformance kit's weather assistant.",
            "tools": [tools["lookup"], tools["forecast"], tools["chart"]],
            "temperature": 0.25,
            "max_tokens": 321,
            "stop": ["STOP-A", "STOP-B"],
        },
        (
            {"role": "user", "content": [_text("Hello there.")]},
            {"role": "assistant", "content": [_text("Hello! How can I help?")]},
            {"role": "user", "content": question},
            {
                "role": "assistant",
                "content": [
                    _text("Let me look."),
                    _call("call_kit_a", "lookup", {"q": "weather in Paris"}),
                    _call("call_kit_b", "forecast", FORECAST_ARGUMENTS),
                ],
            },
            {
                "role": "user",
                "content": [
                    _result("call_kit_a", "sunny, 21 degrees"),
                    _result("call_kit_b", "the forecast service is down", is_error=True),
                ],
            },
            {"role": "assistant", "content": [_call("call_kit_c", "chart", {"city": "Paris"})]},
            {
                "role": "user",
                "content": [_result("call_kit_c", chart_parts), _text("Summarise, please.")],
            },
        ),
    )
    short = KitRequest(
        "one-question",
        {
            "system_prompt": "Be terse.",
            "tools": [tools["lookup"]],
            "temperature": 0.75,
            "max_tokens": 99,
            "stop": ["END"],
        },
        ({"role": "user", "content": [_text("Just one question.")]},),
    )
    return whole, short


def streamed_calls(with_ids: bool) -> tuple[tuple[str | None, str, Mapping[str, Any]], ...]:
    """Three calls in one streamed reply: a string result, an error and text-and-media parts
    (id, name, arguments)."""
    calls: tuple[tuple[str, str, Mapping[str, Any]], ...] = (
        ("call_kit_s1", "lookup", {"q": "weather in Paris"}),
        ("call_kit_s2", "broken", {}),
        ("call_kit_s3", "chart", {"city": "Paris"}),
    )
    return tuple((call_id if with_ids else None, name, args) for call_id, name, args in calls)


# -- structured output ------------------------------------------------------------------------


class KitKind(enum.Enum):
    """An enum in the output (its schema's ``enum``)."""

    INVOICE = "invoice"
    RECEIPT = "receipt"


@attrs.frozen
class KitParty:
    """A nested object in the output."""

    name: str
    country: str


@attrs.frozen
class KitLine:
    """An object inside a list in the output."""

    item: str
    cents: int


@attrs.frozen
class KitInvoice:
    """The kit's output type: a nested object, an enum and a list, every property required
    and every object closed (a schema strict services take as it is)."""

    number: str
    kind: KitKind
    vendor: KitParty
    lines: list[KitLine]


#: A valid output, as the reply's JSON.
INVOICE: Mapping[str, Any] = {
    "number": "INV-42",
    "kind": "receipt",
    "vendor": {"name": "ACME", "country": "FR"},
    "lines": [{"item": "bolt", "cents": 12}, {"item": "nut", "cents": 3}],
}
#: ``INVOICE`` with a kind outside its enum: fails validation at ``$.kind``.
INVALID_INVOICE: Mapping[str, Any] = {**INVOICE, "kind": "memo"}
#: ``INVOICE`` as the typed value the run must return.
TYPED_INVOICE = KitInvoice(
    "INV-42",
    KitKind.RECEIPT,
    KitParty("ACME", "FR"),
    [KitLine("bolt", 12), KitLine("nut", 3)],
)
