"""Small pieces most providers need between oma's messages and a JSON wire.

``assistant_response`` builds the turn ``complete`` and the end of ``stream`` must agree on:
text (one block; left out when the turn is only tool calls), then the tool calls, the usage
and the stop reason; ``stream_end`` is what a stream yields last (or the error for a stream
cut before its final event). ``tool_result_text``, ``media_url`` and ``missing_api_key`` are the
conversions and the one error every HTTP provider writes. ``JsonView`` lets code written for an
SDK's reply models read a decoded JSON reply (a plugin with a transport of its own beside its
SDK reads both with one mapping).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import ProviderError
from ..messages import (
    Base64Source,
    LLMMessage,
    MediaSource,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ..providers import ProviderEvent, ProviderResponse, ResponseComplete, ToolCall, Usage
from ._client import malformed_response

__all__ = [
    "JsonView",
    "assistant_response",
    "media_url",
    "missing_api_key",
    "stream_end",
    "tool_call_events",
    "tool_result_text",
]


def assistant_response(
    text: str,
    calls: Iterable[ToolUseBlock] = (),
    usage: Usage | None = None,
    stop_reason: str | None = None,
    model: str | None = None,
) -> ProviderResponse:
    """A turn of ``text`` and ``calls``; an empty turn is one empty text block."""
    tool_calls = tuple(calls)
    blocks: tuple[TextBlock | ToolUseBlock, ...] = tool_calls
    if text or not tool_calls:
        blocks = (TextBlock(text), *tool_calls)
    return ProviderResponse(LLMMessage("assistant", blocks), usage or Usage(), stop_reason, model)


def tool_call_events(response: ProviderResponse) -> Iterator[ToolCall]:
    """A ``ToolCall`` event for each call of ``response``, in order (a stream yields these
    once the calls are complete, before ``ResponseComplete``)."""
    for block in response.message.content:
        if isinstance(block, ToolUseBlock):
            yield ToolCall(block)


def stream_end(
    provider: str,
    response: ProviderResponse | None,
    *,
    missing: str = "the stream ended before its final event",
    calls_sent: bool = False,
) -> tuple[ProviderEvent, ...]:
    """The events a stream yields last: a ``ToolCall`` for each call of ``response``, then
    ``ResponseComplete(response)``.

    ``response`` is None when the stream ended before the service's final event (the
    connection closed cleanly, or a proxy cut it): that is a malformed-response
    ``ProviderError``, retryable, with ``missing`` as its detail, raised here, so the core
    retries it when no output had reached the caller yet and reports it otherwise. Build
    ``response`` with ``assistant_response`` from what the stream said, only once its final
    event came. ``calls_sent`` says the ``ToolCall`` events were already yielded as each
    call completed (then only ``ResponseComplete`` follows)::

        reply = assistant_response("".join(text), calls.finish(), usage, reason) if done else None
        for event in stream_end(NAME, reply):
            yield event
    """
    if response is None:
        raise malformed_response(provider, missing)
    calls = () if calls_sent else tuple(tool_call_events(response))
    return (*calls, ResponseComplete(response))


def tool_result_text(block: ToolResultBlock) -> str:
    """A tool result's text: its string, or its text parts joined by newlines (media parts,
    which the provider's capabilities either carry separately or refuse, are not text)."""
    if isinstance(block.content, str):
        return block.content
    return "\n".join(part.text for part in block.content if isinstance(part, TextBlock))


def media_url(source: MediaSource) -> str:
    """A URL source's URL, or a base64 source as a ``data:`` URL."""
    if isinstance(source, Base64Source):
        return f"data:{source.media_type};base64,{source.data}"
    return source.url


def missing_api_key(provider: str, *variables: str) -> ProviderError:
    """The error for a call made without a key: not retryable, naming where a key comes from
    (raise it before any request)."""
    where = " or ".join(("AgentConfig.api_key", *variables))
    return ProviderError(
        f"{provider} needs an API key: set {where}", provider=provider, retryable=False
    )


class JsonView(Mapping[str, Any]):
    """A decoded JSON object read as an SDK's reply model built without validation is: an
    attribute is the member of that name (a nested object as a ``JsonView``, an array as a
    list of views), None when absent; ``model_extra`` is the whole object (where such a model
    keeps fields it does not declare). As a mapping it is the object itself, values
    unwrapped, so ``dict(view)`` is a plain copy."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        return _view(self._data.get(name))

    @property
    def model_extra(self) -> Mapping[str, Any]:
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"JsonView({sorted(self._data)!r})"


def _view(value: Any) -> Any:
    if isinstance(value, dict):
        return JsonView(value)
    if isinstance(value, list):
        return [_view(v) for v in value]
    return value
