"""Small pieces most providers need between oma's messages and a JSON wire.

``assistant_response`` builds the turn ``complete`` and the end of ``stream`` must agree on:
text (one block; left out when the turn is only tool calls), then the tool calls, the usage
and the stop reason. ``tool_result_text``, ``media_url`` and ``missing_api_key`` are the
conversions and the one error every HTTP provider writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .errors import ProviderError
from .messages import (
    Base64Source,
    LLMMessage,
    MediaSource,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from .providers import ProviderResponse, ToolCall, Usage

__all__ = [
    "assistant_response",
    "media_url",
    "missing_api_key",
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
