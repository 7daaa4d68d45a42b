"""Converse replies as oma's ``ProviderResponse``: the JSON of ``converse`` and the events of
``converse-stream``, assembled into the same turn.

A reply that does not have the documented shape raises ``MalformedReply`` (the provider turns
it into a retryable ``ProviderError``); so does a stream that ends before ``messageStop``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from oma_core import LLMMessage, ReasoningBlock, TextBlock, ToolUseBlock, Usage
from oma_core.toolkit import (
    ProviderEvent,
    ProviderResponse,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)

from .capabilities import PROVIDER

__all__ = ["STOP_REASONS", "MalformedReply", "StreamAssembler", "response_from_json"]

#: Converse ``stopReason`` -> oma's stop reason (the Messages API vocabulary).
STOP_REASONS: Mapping[str, str] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "model_context_window_exceeded": "max_tokens",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
#: Stop reasons that mean the turn is broken: the model may do better on a second try.
BROKEN_STOP_REASONS = frozenset({"malformed_model_output", "malformed_tool_use"})


class MalformedReply(Exception):
    """The service's reply does not have the documented shape; ``detail`` says where."""

    def __init__(self, detail: str) -> None:
        self.detail = detail
        super().__init__(detail)


def response_from_json(reply: Any, model: str | None) -> ProviderResponse:
    """A ``converse`` reply body (parsed JSON) as a ``ProviderResponse``."""
    output = _mapping(_mapping(reply, "reply").get("output"), "output")
    message = _mapping(output.get("message"), "output.message")
    content = message.get("content")
    if not isinstance(content, list):
        raise MalformedReply("output.message.content is not a list")
    blocks: list[Any] = []
    for i, item in enumerate(content):
        block = _mapping(item, f"output.message.content[{i}]")
        if "text" in block:
            blocks.append(TextBlock(_string(block["text"], f"content[{i}].text")))
        elif "toolUse" in block:
            use = _mapping(block["toolUse"], f"content[{i}].toolUse")
            blocks.append(
                ToolUseBlock(
                    _string(use.get("toolUseId"), f"content[{i}].toolUse.toolUseId"),
                    _string(use.get("name"), f"content[{i}].toolUse.name"),
                    _mapping(use.get("input"), f"content[{i}].toolUse.input"),
                )
            )
        elif "reasoningContent" in block:
            blocks.append(_reasoning(_mapping(block["reasoningContent"], "reasoningContent")))
    return _response(blocks, reply.get("stopReason"), _usage(reply.get("usage")), model)


def _reasoning(content: Mapping[str, Any]) -> ReasoningBlock:
    if "redactedContent" in content:
        return ReasoningBlock(
            "", redacted_data=_string(content["redactedContent"], "redacted"), provider=PROVIDER
        )
    text = _mapping(content.get("reasoningText"), "reasoningContent.reasoningText")
    signature = text.get("signature")
    return ReasoningBlock(
        _string(text.get("text"), "reasoningText.text"),
        signature if isinstance(signature, str) else None,
        provider=PROVIDER,
    )


def _response(blocks: list[Any], stop: Any, usage: Usage, model: str | None) -> ProviderResponse:
    if not isinstance(stop, str):
        raise MalformedReply("stopReason is missing")
    if stop in BROKEN_STOP_REASONS:
        raise MalformedReply(f"the model's output was unusable (stopReason {stop})")
    if not blocks:
        blocks = [TextBlock("")]
    return ProviderResponse(
        message=LLMMessage("assistant", tuple(blocks)),
        usage=usage,
        stop_reason=STOP_REASONS.get(stop, stop),
        model=model,
    )


def _usage(usage: Any) -> Usage:
    """``TokenUsage`` as oma's ``Usage``. Bedrock's ``inputTokens`` leaves out the tokens read
    from or written to the prompt cache (``cacheReadInputTokens``, ``cacheWriteInputTokens``);
    oma's ``input_tokens`` counts all the input, so the three are added."""
    if usage is None:
        return Usage()
    usage = _mapping(usage, "usage")
    names = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
    numbers = [usage.get(name) or 0 for name in names]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in numbers):
        raise MalformedReply("usage holds something other than token counts")
    given, output, read, written = numbers
    return Usage(given + read + written, output, cache_read_tokens=read, cache_write_tokens=written)


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MalformedReply(f"{where} is not an object")
    return value


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise MalformedReply(f"{where} is not a string")
    return value


class StreamAssembler:
    """Feeds on ``converse-stream`` events (type and parsed payload), yields oma's events,
    and assembles the turn ``finish`` returns. A tool call's input arrives as pieces of JSON
    (``contentBlockDelta.delta.toolUse.input``), each passed on as a ``ToolCallDelta``; the
    call itself is one ``ToolCall`` when its block stops."""

    def __init__(self, model: str | None) -> None:
        self._model = model
        self._blocks: dict[int, dict[str, Any]] = {}
        self._stop: str | None = None
        self._usage = Usage()
        self._started = False
        self._stopped = False

    def feed(self, event_type: str, payload: Any) -> ProviderEvent | None:
        event = _mapping(payload, event_type)
        if event_type == "messageStart":
            self._started = True
            return None
        if event_type == "contentBlockStart":
            index = _index(event)
            start = _mapping(event.get("start"), "contentBlockStart.start")
            if "toolUse" in start:
                use = _mapping(start["toolUse"], "start.toolUse")
                self._blocks[index] = {
                    "kind": "tool",
                    "id": _string(use.get("toolUseId"), "start.toolUse.toolUseId"),
                    "name": _string(use.get("name"), "start.toolUse.name"),
                    "input": [],
                }
            return None
        if event_type == "contentBlockDelta":
            return self._delta(_index(event), _mapping(event.get("delta"), "delta"))
        if event_type == "contentBlockStop":
            return self._stop_block(_index(event))
        if event_type == "messageStop":
            self._stop = _string(event.get("stopReason"), "messageStop.stopReason")
            self._stopped = True
            return None
        if event_type == "metadata":
            self._usage = _usage(event.get("usage"))
            return None
        return None  # an event this plugin does not read (a later addition to the API)

    def _delta(self, index: int, delta: Mapping[str, Any]) -> ProviderEvent | None:
        if "text" in delta:
            text = _string(delta["text"], "delta.text")
            block = self._blocks.setdefault(index, {"kind": "text", "text": []})
            block["text"].append(text)
            return TextDelta(text) if text else None
        if "toolUse" in delta:
            tool = self._blocks.get(index)
            if tool is None or tool["kind"] != "tool":
                raise MalformedReply(f"a toolUse delta for block {index}, which is no tool call")
            tool_use = _mapping(delta["toolUse"], "delta.toolUse")
            piece = _string(tool_use.get("input"), "delta.toolUse.input")
            tool["input"].append(piece)
            return ToolCallDelta(index, piece, tool["name"], tool["id"]) if piece else None
        if "reasoningContent" in delta:
            reasoning = _mapping(delta["reasoningContent"], "delta.reasoningContent")
            block = self._blocks.setdefault(
                index, {"kind": "reasoning", "text": [], "signature": None, "redacted": None}
            )
            if "text" in reasoning:
                text = _string(reasoning["text"], "reasoningContent.text")
                block["text"].append(text)
                return ReasoningDelta(text) if text else None
            if "signature" in reasoning:
                block["signature"] = _string(reasoning["signature"], "reasoning.signature")
            if "redactedContent" in reasoning:
                block["redacted"] = _string(reasoning["redactedContent"], "redactedContent")
        return None

    def _stop_block(self, index: int) -> ProviderEvent | None:
        block = self._blocks.get(index)
        if block is None or block["kind"] != "tool":
            return None
        raw = "".join(block["input"]) or "{}"
        try:
            arguments = json.loads(raw)
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            raise MalformedReply(f"the arguments of tool call {block['id']} are not a JSON object")
        tool_use = ToolUseBlock(block["id"], block["name"], arguments)
        block["block"] = tool_use
        return ToolCall(tool_use)

    def finish(self) -> ProviderResponse:
        """The assembled turn; a stream that ended before ``messageStop`` is malformed."""
        if not self._stopped:
            raise MalformedReply("the stream ended before messageStop")
        blocks: list[Any] = []
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block["kind"] == "text":
                blocks.append(TextBlock("".join(block["text"])))
            elif block["kind"] == "tool":
                if "block" not in block:
                    raise MalformedReply(f"tool call {block['id']} never stopped")
                blocks.append(block["block"])
            elif block["redacted"] is not None:
                blocks.append(
                    ReasoningBlock("", redacted_data=block["redacted"], provider=PROVIDER)
                )
            else:
                text = "".join(block["text"])
                blocks.append(ReasoningBlock(text, block["signature"], provider=PROVIDER))
        return _response(blocks, self._stop, self._usage, self._model)


def _index(event: Mapping[str, Any]) -> int:
    index = event.get("contentBlockIndex")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise MalformedReply("contentBlockIndex is not a block index")
    return index
