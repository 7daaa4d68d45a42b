"""ScriptedProvider: a provider that plays queued responses, for tests and demos.

Each response is used by one model call, in order: a ``str`` (an assistant text), an assistant
message (an ``LLMMessage`` or its dict, e.g. with ``tool_use`` blocks), an exception instance
(raised when reached) or ``Delayed(seconds, response)``. Every request is recorded in
``.requests``, so a test can check what the agent sent.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any, TypeAlias

import attrs

from ..capabilities import Capabilities
from ..errors import ProviderError
from ..messages import LLMMessage, ReasoningBlock, TextBlock, ToolUseBlock
from ..providers import (
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
    Usage,
)

__all__ = ["Delayed", "ScriptedProvider", "ScriptedResponse"]


@attrs.frozen
class Delayed:
    """Wait ``seconds`` (asynchronously) before playing ``response``."""

    seconds: float
    response: ScriptedResponse


ScriptedResponse: TypeAlias = str | LLMMessage | Mapping[str, Any] | BaseException | Delayed

#: Text is streamed in about this many pieces.
_STREAM_PIECES = 3


def _as_message(response: str | LLMMessage | Mapping[str, Any]) -> LLMMessage:
    if isinstance(response, str):
        return LLMMessage(role="assistant", content=(TextBlock(response),))
    if isinstance(response, LLMMessage):
        message = response
    else:
        from ..validation import load_messages

        (message,) = load_messages([response])
    if message.role != "assistant":
        raise ValueError(f"a scripted response must be an assistant message, got {message.role}")
    return message


def _prepare(response: object) -> ScriptedResponse:
    """Check and convert one response when the script is built, so mistakes show early."""
    if isinstance(response, Delayed):
        return Delayed(response.seconds, _prepare(response.response))
    if isinstance(response, BaseException):
        return response
    if isinstance(response, str | LLMMessage | Mapping):
        return _as_message(response)
    raise TypeError(
        "a scripted response is a str, an assistant message, an exception or Delayed, "
        f"got {type(response).__name__}"
    )


def _text_of(message: LLMMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextBlock))


def _pieces(text: str) -> list[str]:
    size = max(1, math.ceil(len(text) / _STREAM_PIECES))
    return [text[i : i + size] for i in range(0, len(text), size)]


class ScriptedProvider:
    """A provider object that answers each call with the next queued response.

    An exhausted queue raises a non-retryable ``ProviderError`` that says so. ``capabilities``
    (default: everything) lets a test stand in for a provider that refuses some blocks.
    """

    def __init__(
        self,
        responses: Iterable[object] = (),
        *,
        name: str = "scripted",
        display_name: str = "Scripted",
        capabilities: Capabilities | None = None,
    ) -> None:
        self.name = name
        self.display_name = display_name
        self.capabilities = capabilities or Capabilities.everything()
        self._queue: deque[ScriptedResponse] = deque(_prepare(r) for r in responses)
        self._given = len(self._queue)
        self.requests: list[ProviderRequest] = []
        self.closed = False

    @property
    def remaining(self) -> int:
        """How many responses are still queued."""
        return len(self._queue)

    def add(self, *responses: object) -> None:
        """Queue more responses."""
        for response in responses:
            self._queue.append(_prepare(response))
            self._given += 1

    async def _next(self, request: ProviderRequest) -> ProviderResponse:
        self.requests.append(request)
        if not self._queue:
            raise ProviderError(
                f"ScriptedProvider is exhausted (no responses left): call {len(self.requests)} "
                f"but only {self._given} responses were scripted",
                provider=self.display_name,
                retryable=False,
            )
        response = self._queue.popleft()
        while isinstance(response, Delayed):
            await asyncio.sleep(response.seconds)
            response = response.response
        if isinstance(response, BaseException):
            raise response
        assert isinstance(response, LLMMessage)
        return self._respond(request, response)

    def _respond(self, request: ProviderRequest, message: LLMMessage) -> ProviderResponse:
        from .._tokens import estimate_tokens

        system = math.ceil(len(request.system_prompt or "") / 4)
        output = estimate_tokens([message])
        has_tools = any(isinstance(block, ToolUseBlock) for block in message.content)
        return ProviderResponse(
            message,
            Usage(estimate_tokens(request.messages) + system, output),
            stop_reason="tool_use" if has_tools else "end_turn",
            model=request.model,
        )

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return await self._next(request)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        response = await self._next(request)
        for block in response.message.content:
            if isinstance(block, TextBlock):
                for piece in _pieces(block.text):
                    yield TextDelta(piece)
            elif isinstance(block, ReasoningBlock):
                yield ReasoningDelta(block.text)
            elif isinstance(block, ToolUseBlock):
                yield ToolCall(block)
        yield ResponseComplete(response)

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        """A plain description of the request (there is no wire format to render)."""
        from ..serialization import dump_messages

        return {
            "model": request.model,
            "system": request.system_prompt,
            "messages": dump_messages(request.messages),
            "tools": [tool.name for tool in request.tools],
        }

    async def aclose(self) -> None:
        self.closed = True

    def text_of(self, index: int = -1) -> str:
        """The text of the latest user message of request ``index``: handy in assertions."""
        request = self.requests[index]
        users = [m for m in request.messages if m.role == "user"]
        return _text_of(users[-1]) if users else ""
