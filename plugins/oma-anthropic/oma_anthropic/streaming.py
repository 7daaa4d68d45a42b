"""Assemble the Messages API's raw stream events into oma's provider events.

The documented sequence is ``message_start``, then per content block ``content_block_start``,
``content_block_delta``... and ``content_block_stop``, then ``message_delta`` (stop reason,
cumulative usage) and ``message_stop``; ``ping`` may come anywhere. Text and thinking deltas
become ``TextDelta`` / ``ReasoningDelta`` as they arrive; a tool call's input arrives as pieces
of JSON (``input_json_delta``), each passed on as a ``ToolCallDelta``, and the call becomes one
``ToolCall`` when its block stops. A stream that ends without ``message_stop`` was cut short: a
retryable ``ProviderError``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from oma_core import ProviderError, ReasoningBlock, TextBlock, ToolUseBlock
from oma_core.http import malformed_response
from oma_core.messages import ContentBlock
from oma_core.toolkit import (
    ProviderEvent,
    ProviderResponse,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)

from .capabilities import DISPLAY_NAME, PROVIDER
from .mapping import message_from_blocks, parse_tool_input, usage_from

__all__ = ["StreamAssembler"]

#: The usage counts a stream reports (``message_start``, then cumulative ``message_delta``).
_COUNTS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens_details",
)


class _Partial:
    """One content block while it streams in."""

    __slots__ = ("block", "id", "kind", "name", "pieces", "signature")

    def __init__(self, kind: str, start: Any) -> None:
        self.kind = kind
        self.pieces: list[str] = []
        self.signature: str | None = None
        self.id = ""
        self.name = ""
        self.block: ContentBlock | None = None
        if kind == "text":
            self.pieces.append(getattr(start, "text", "") or "")
        elif kind == "thinking":
            self.pieces.append(getattr(start, "thinking", "") or "")
            self.signature = getattr(start, "signature", None) or None
        elif kind == "redacted_thinking":
            self.block = ReasoningBlock(
                "", redacted_data=_required_str(start, "data"), provider=PROVIDER
            )
        elif kind == "tool_use":
            self.id = _required_str(start, "id")
            self.name = _required_str(start, "name")

    def finish(self) -> ContentBlock | None:
        if self.block is not None or self.kind == "redacted_thinking":
            return self.block
        if self.kind == "text":
            self.block = TextBlock("".join(self.pieces))
        elif self.kind == "thinking":
            self.block = ReasoningBlock(
                "".join(self.pieces), signature=self.signature or "", provider=PROVIDER
            )
        elif self.kind == "tool_use":
            self.block = ToolUseBlock(self.id, self.name, parse_tool_input("".join(self.pieces)))
        return self.block


class StreamAssembler:
    """Feed raw events in order with ``feed``; call ``finish`` after the last one."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Partial] = {}
        self._counts: dict[str, Any] = {}
        self._stop_reason: str | None = None
        self._model: str | None = None
        self._started = False
        self._stopped = False

    def feed(self, event: Any) -> ProviderEvent | None:
        """Take one event; return what it means for the caller, if anything yet."""
        kind = event.type
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            block = event.content_block
            self._blocks[event.index] = _Partial(getattr(block, "type", ""), block)
        elif kind == "content_block_stop":
            partial = self._partial(event.index)
            finished = partial.finish()
            if isinstance(finished, ToolUseBlock):
                return ToolCall(finished)
        elif kind == "message_start":
            self._started = True
            message = event.message
            self._model = getattr(message, "model", None)
            self._usage(getattr(message, "usage", None))
        elif kind == "message_delta":
            self._stop_reason = getattr(event.delta, "stop_reason", None)
            self._usage(getattr(event, "usage", None))
        elif kind == "message_stop":
            self._stopped = True
        return None

    @property
    def complete(self) -> bool:
        """Whether ``message_stop`` has arrived: the reply is whole, nothing more is read
        (a server may keep the connection open after it)."""
        return self._stopped

    def finish(self) -> ProviderResponse:
        """The assembled turn; raises if the stream never reached ``message_stop``."""
        if not self._stopped:
            raise ProviderError(
                f"{DISPLAY_NAME} stream ended before message_stop",
                provider=DISPLAY_NAME,
                retryable=True,
            )
        blocks = [self._blocks[i].finish() for i in sorted(self._blocks)]
        return ProviderResponse(
            message=message_from_blocks(blocks),
            usage=usage_from(SimpleNamespace(**self._counts)),
            stop_reason=self._stop_reason,
            model=self._model,
        )

    def _delta(self, event: Any) -> ProviderEvent | None:
        delta = event.delta
        kind = delta.type
        partial = self._partial(event.index)
        if kind == "text_delta":
            text = delta.text
            partial.pieces.append(text)
            return TextDelta(text)
        if kind == "input_json_delta":
            piece = delta.partial_json
            partial.pieces.append(piece)
            if piece and partial.kind == "tool_use":
                return ToolCallDelta(event.index, piece, partial.name, partial.id)
        elif kind == "thinking_delta":
            thinking = delta.thinking
            partial.pieces.append(thinking)
            return ReasoningDelta(thinking)
        elif kind == "signature_delta":
            partial.signature = delta.signature
        return None  # citations and other deltas oma has no place for

    def _partial(self, index: int) -> _Partial:
        partial = self._blocks.get(index)
        if partial is None:
            raise malformed_response(
                DISPLAY_NAME, f"an event for content block {index} before its content_block_start"
            )
        return partial

    def _usage(self, usage: Any) -> None:
        # message_delta's counts are cumulative: the last one seen of each wins.
        if usage is None:
            return
        for name in _COUNTS:
            value = getattr(usage, name, None)
            if value is not None:
                self._counts[name] = value


def _required_str(obj: Any, name: str) -> str:
    value = getattr(obj, name, None)
    if not isinstance(value, str):
        raise malformed_response(DISPLAY_NAME, f"a content block without a string {name}")
    return value
