"""Streamed tool calls, assembled: deltas by index in, complete ``ToolUseBlock``s out.

Chat-Completions-style services stream a tool call in pieces: the first delta of an index
brings its id and name, later ones more characters of the JSON arguments. A provider feeds
each delta to ``ToolCallAssembler.feed`` (which hands back the ``ToolCallDelta`` event to
yield, so the core can show the output tool's arguments as they arrive) and, when the stream
ends, takes the calls from ``finish``; arguments that are not a JSON object make a
malformed-response ``ProviderError`` (retryable), never a call with half its input.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

from ..messages import ToolUseBlock
from ..providers import ToolCallDelta
from ._client import malformed_response

__all__ = ["ToolCallAssembler"]


class _Pending:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []


class ToolCallAssembler:
    """Collects streamed tool-call deltas for one response, keyed by their ``index``."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._calls: dict[int, _Pending] = {}

    def __bool__(self) -> bool:
        return bool(self._calls)

    def feed(
        self,
        index: int,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | dict[str, Any] | None = None,
    ) -> ToolCallDelta | None:
        """Add one delta. ``id`` and ``name`` may come once or repeat (later non-empty values
        win); ``arguments`` is a piece of the JSON text, or a whole object some services send.

        Returns the event a stream yields for it: a ``ToolCallDelta`` with the piece and the
        call's id and name so far, or None when the delta brought no piece of text (a whole
        object arrives whole, in the ``ToolCall`` at the end)."""
        call = self._calls.setdefault(index, _Pending())
        if id:
            call.id = id
        if name:
            call.name = name
        if isinstance(arguments, dict):
            call.arguments = [json.dumps(arguments)]
        elif arguments:
            call.arguments.append(arguments)
            return ToolCallDelta(index, arguments, call.name, call.id)
        return None

    def feed_chat(self, call: Mapping[str, Any], index: int | None = None) -> ToolCallDelta | None:
        """Add a Chat Completions tool call, or a delta of one: ``{"index", "id",
        "function": {"name", "arguments"}}`` (``index`` defaults to the call's own, else 0);
        returns ``feed``'s event."""
        function = call.get("function") or {}
        return self.feed(
            call.get("index", 0) if index is None else index,
            id=call.get("id"),
            name=function.get("name"),
            arguments=function.get("arguments"),
        )

    def finish(self) -> tuple[ToolUseBlock, ...]:
        """The calls, in index order. Empty arguments mean ``{}``; a call the service gave no
        id gets a fresh random one (``call_`` and 24 hex digits), unique across turns, so its
        result can never be matched to an earlier call."""
        blocks = []
        for index in sorted(self._calls):
            call = self._calls[index]
            if not call.name:
                raise malformed_response(self._provider, f"tool call {index} has no name")
            text = "".join(call.arguments).strip() or "{}"
            try:
                arguments = json.loads(text)
            except ValueError:
                arguments = None
            if not isinstance(arguments, dict):
                raise malformed_response(
                    self._provider,
                    f"the arguments of tool call {index} ({call.name}) are not a JSON object",
                )
            blocks.append(
                ToolUseBlock(
                    id=call.id or f"call_{secrets.token_hex(12)}", name=call.name, input=arguments
                )
            )
        return tuple(blocks)
