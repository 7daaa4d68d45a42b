"""Responses API replies -> oma's provider types: a whole ``Response``, or its stream of events.

Read through attributes, so the SDK's models (``Response``, ``ResponseStreamEvent``) and the
direct transport's ``JsonView`` both work. Both paths turn the reply's output items, in order,
into blocks with ``output_blocks``, so a streamed reply and a whole one give the same turn:
a ``reasoning`` item becomes a ``ReasoningBlock`` marked as the preset's (its text the summary
parts, its signature the item itself and the ids of the items that followed it), a
``message`` a ``TextBlock`` (a refusal's text, with stop reason ``refusal``), a
``function_call`` a ``ToolUseBlock``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from oma_core import LLMMessage, ProviderError, ReasoningBlock, TextBlock, ToolUseBlock, Usage
from oma_core.http import malformed_response
from oma_core.toolkit import (
    ProviderEvent,
    ProviderResponse,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)

from .convert import parse_arguments
from .errors import stream_error
from .presets import Preset
from .responses_request import encode_reasoning

__all__ = ["FINAL_EVENTS", "ResponsesStream", "read_response"]

#: The events that end a stream (with the whole response in ``response``).
FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
_SHAPE_ERRORS = (AttributeError, IndexError, KeyError, TypeError, ValueError)
Block = ReasoningBlock | TextBlock | ToolUseBlock


Secrets = Callable[[], Sequence[str]]


def _none() -> Sequence[str]:
    return ()


def read_response(response: Any, preset: Preset, secrets: Secrets = _none) -> ProviderResponse:
    """The ``ProviderResponse`` of a whole ``Response`` (``POST /responses`` without stream)."""
    name = preset.display_name
    try:
        failure = _failure(response, preset, secrets)
        if failure is None:
            blocks, refused = output_blocks(response.output or (), preset)
            return _response(response, blocks, refused)
    except _SHAPE_ERRORS:
        failure = malformed_response(name, "the reply is not a readable response")
    raise failure


def _failure(response: Any, preset: Preset, secrets: Secrets) -> ProviderError | None:
    """The error of a response whose ``status`` is ``failed`` (retryable as its code says)."""
    if response.status != "failed":
        return None
    error = response.error
    fields = {"code": getattr(error, "code", None), "message": getattr(error, "message", None)}
    return stream_error(fields, preset.display_name, secrets(), fallback="the response failed")


def _response(response: Any, blocks: list[Block], refused: bool) -> ProviderResponse:
    calls = any(isinstance(b, ToolUseBlock) for b in blocks)
    if not any(isinstance(b, TextBlock) for b in blocks) and not calls:
        blocks.append(TextBlock(""))
    return ProviderResponse(
        message=LLMMessage("assistant", tuple(blocks)),
        usage=usage(response.usage),
        stop_reason=_stop_reason(response, refused, calls),
        model=response.model,
    )


def _stop_reason(response: Any, refused: bool, calls: bool) -> str:
    if refused:
        return "refusal"
    if response.status == "incomplete":
        reason = getattr(response.incomplete_details, "reason", None)
        return "max_tokens" if reason == "max_output_tokens" else str(reason or "incomplete")
    return "tool_use" if calls else "end_turn"


def output_blocks(items: Sequence[Any], preset: Preset) -> tuple[list[Block], bool]:
    """The blocks of a reply's output items, in order, and whether the reply is a refusal."""
    blocks: list[Block] = []
    refused = False
    reasoning: tuple[int, dict[str, Any], dict[str, str], list[str]] | None = None
    for item in items:
        kind = item.type
        if kind == "reasoning":
            _close(blocks, reasoning, preset)
            texts = [s.text for s in item.summary or ()] or [c.text for c in item.content or ()]
            record = {"type": "reasoning", "id": item.id,
                      "summary": [{"type": "summary_text", "text": s.text}
                                  for s in item.summary or ()]}  # fmt: skip
            if item.encrypted_content is not None:
                record["encrypted_content"] = item.encrypted_content
            reasoning = (len(blocks), record, {}, [])
            blocks.append(ReasoningBlock("\n\n".join(texts)))  # replaced by _close
        elif kind == "message":
            text, refusal = _message_text(item)
            refused = refused or refusal
            blocks.append(TextBlock(text))
            if reasoning is not None:
                reasoning[3].append(item.id)
        elif kind == "function_call":
            arguments = parse_arguments(item.arguments, preset.display_name)
            blocks.append(ToolUseBlock(item.call_id, item.name, arguments))
            if reasoning is not None and item.id:
                reasoning[2][item.call_id] = item.id
    _close(blocks, reasoning, preset)
    return blocks, refused


def _close(
    blocks: list[Block],
    reasoning: tuple[int, dict[str, Any], dict[str, str], list[str]] | None,
    preset: Preset,
) -> None:
    """Give the reasoning block at its index its signature, now its followers are known."""
    if reasoning is None:
        return
    at, record, followers, messages = reasoning
    signature = encode_reasoning(record, followers, messages)
    text = blocks[at].text  # type: ignore[union-attr]
    blocks[at] = ReasoningBlock(text, signature=signature, provider=preset.name)


def _message_text(item: Any) -> tuple[str, bool]:
    texts, refusals = [], []
    for part in item.content or ():
        if part.type == "output_text":
            texts.append(part.text)
        elif part.type == "refusal":
            refusals.append(part.refusal)
    if refusals and not texts:
        return "".join(refusals), True
    return "".join(texts), False


def usage(value: Any) -> Usage:
    """oma's ``Usage`` of a response's ``usage``: ``input_tokens`` counts the cached tokens
    (``input_tokens_details.cached_tokens``, and those written,
    ``cache_write_tokens``); ``output_tokens`` the reasoning tokens
    (``output_tokens_details.reasoning_tokens``)."""
    if value is None:
        return Usage()
    inputs, outputs = value.input_tokens_details, value.output_tokens_details
    return Usage(
        _count(value, "input_tokens"),
        _count(value, "output_tokens"),
        cache_read_tokens=_count(inputs, "cached_tokens"),
        cache_write_tokens=_count(inputs, "cache_write_tokens"),
        reasoning_tokens=_count(outputs, "reasoning_tokens"),
    )


def _count(details: Any, name: str) -> int:
    value = getattr(details, name, None) if details is not None else None
    return value if type(value) is int and value >= 0 else 0


class ResponsesStream:
    """Turns Responses stream events into oma's events and, at the end, the whole turn.

    Text, refusal, reasoning summary and function-call argument deltas pass on as they come;
    each finished output item (``response.output_item.done``) is kept in its place, and a
    function call is emitted as a ``ToolCall`` when its item is done. The final event
    (``response.completed`` / ``incomplete``) gives usage and status; ``response.failed`` and
    ``error`` events are raised. A stream that ends before its final event was cut short
    (retryable).
    """

    def __init__(self, preset: Preset, secrets: Secrets = _none) -> None:
        self._preset = preset
        self._secrets = secrets
        self._items: dict[int, Any] = {}
        self._calls: dict[int, tuple[int, str | None, str | None]] = {}
        self._summary: dict[str, int] = {}
        self._final: Any = None
        self.finished = False

    def feed(self, event: Any) -> list[ProviderEvent]:
        error: ProviderError | None = None
        try:
            return self._feed(event)
        except ProviderError as exc:
            error = exc
        except _SHAPE_ERRORS:
            error = malformed_response(
                self._preset.display_name, "a stream event could not be read"
            )
        raise error

    def _feed(self, event: Any) -> list[ProviderEvent]:
        kind = event.type
        if kind == "response.output_text.delta" and event.delta:
            return [TextDelta(event.delta)]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._reasoning(event)
        if kind == "response.function_call_arguments.delta" and event.delta:
            index, name, call_id = self._calls.get(
                event.output_index, (len(self._calls), None, None)
            )
            return [ToolCallDelta(index, event.delta, name, call_id)]
        if kind == "response.output_item.added":
            item = event.item
            if item.type == "function_call":
                self._calls[event.output_index] = (len(self._calls), item.name, item.call_id)
            return []
        if kind == "response.output_item.done":
            return self._item_done(event.output_index, event.item)
        if kind in FINAL_EVENTS:
            self.finished = True
            self._final = event.response
            failure = _failure(event.response, self._preset, self._secrets)
            if failure is not None:
                raise failure
            return []
        if kind == "error":
            fields = {"code": event.code, "type": event.code, "message": event.message}
            raise stream_error(fields, self._preset.display_name, self._secrets())
        return []

    def _reasoning(self, event: Any) -> list[ProviderEvent]:
        """A reasoning delta; a summary part after the first is set apart by a blank line, as
        the block's text joins the parts."""
        events: list[ProviderEvent] = []
        index = getattr(event, "summary_index", None) or getattr(event, "content_index", 0) or 0
        seen = self._summary.get(event.item_id)
        if seen is not None and index > seen:
            events.append(ReasoningDelta("\n\n"))
        self._summary[event.item_id] = index
        if event.delta:
            events.append(ReasoningDelta(event.delta))
        return events

    def _item_done(self, output_index: int, item: Any) -> list[ProviderEvent]:
        self._items[output_index] = item
        if item.type != "function_call":
            return []
        arguments = parse_arguments(item.arguments, self._preset.display_name)
        return [ToolCall(ToolUseBlock(item.call_id, item.name, arguments))]

    def finish(self) -> ProviderResponse:
        """The whole turn (after the final event); a stream cut short is a retryable error."""
        name = self._preset.display_name
        if self._final is None:
            raise ProviderError(
                f"{name}: the stream ended before the reply was complete",
                provider=name,
                retryable=True,
            )
        try:
            items = [self._items[i] for i in sorted(self._items)] or self._final.output or ()
            blocks, refused = output_blocks(items, self._preset)
            return _response(self._final, blocks, refused)
        except _SHAPE_ERRORS:
            pass  # raised below, outside the handler, so that it is not chained
        raise malformed_response(name, "the final stream event could not be read")
