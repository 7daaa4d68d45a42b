"""oma's messages to the Messages API's JSON body, and its replies back to oma's messages.

``build_body`` is the single source of the request: ``render`` returns it and the provider
passes the very same dict to the SDK, so what ``oma render`` shows is what is sent. Nothing here
imports the SDK; replies are read by attribute, so the SDK's models and plain objects both work.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from oma_core import (
    Base64Source,
    DocumentBlock,
    ImageBlock,
    LLMMessage,
    ProviderError,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnsupportedContentBlockError,
    Usage,
)
from oma_core.capabilities import cache_ttl
from oma_core.http import malformed_response
from oma_core.messages import CachePoint, ContentBlock, FilePart, MediaSource, thaw_json
from oma_core.toolkit import ProviderRequest, ProviderResponse

from .caching import Anchor, markable, place_breakpoints
from .capabilities import DISPLAY_NAME, PROVIDER
from .output import add_output
from .thinking import add_thinking, leave_out_refused

__all__ = [
    "BODY_OPTIONS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_MODEL",
    "block_from_reply",
    "build_body",
    "message_from_blocks",
    "parse_tool_input",
    "response_from_message",
    "usage_from",
]

DEFAULT_MODEL = "claude-sonnet-4-6"
#: The Messages API requires ``max_tokens``; this is sent when neither the request nor
#: ``provider_options["max_tokens"]`` gives one.
DEFAULT_MAX_TOKENS = 4096
#: ``provider_options`` keys copied into the body as they are (the API's own parameter names).
BODY_OPTIONS = (
    "metadata",
    "service_tier",
    "stop_sequences",
    "temperature",
    "thinking",
    "tool_choice",
    "top_k",
    "top_p",
)


def build_body(
    request: ProviderRequest,
    options: Mapping[str, Any],
    sdk_keys: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The JSON body of a non-streaming ``POST /v1/messages`` for ``request``.

    ``options`` are the provider's options with the request's own merged over them
    (``extra_body`` entries last, overriding); the request's portable ``max_tokens``,
    ``temperature`` and ``stop`` (sent as ``stop_sequences``) override them all, and
    ``thinking`` is mapped per model family, which also leaves out the sampling settings the
    model refuses (``oma_anthropic.thinking``). Keys come in
    the order the SDK sends them: ``max_tokens``, ``messages``, ``model``, then the parameters
    the SDK knows (``sdk_keys``) alphabetically, then the others alphabetically; so
    ``json.dumps`` of this dict, compact, equals the bytes the SDK puts on the wire.
    """
    max_tokens = request.max_tokens
    if max_tokens is None:
        max_tokens = options.get("max_tokens", DEFAULT_MAX_TOKENS)
    messages, anchors = _messages(request.messages)
    body: dict[str, Any] = {
        "max_tokens": max_tokens,
        "messages": messages,
        "model": request.model or options.get("model") or DEFAULT_MODEL,
    }
    optional: dict[str, Any] = {k: thaw_json(options[k]) for k in BODY_OPTIONS if k in options}
    if request.system_prompt is not None:
        optional["system"] = request.system_prompt
    if request.tools:
        optional["tools"] = [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": thaw_json(t.input_schema),
            }
            for t in request.tools
        ]
    for key, value in thaw_json(options.get("extra_body") or {}).items():
        if key in body:
            body[key] = value
        else:
            optional[key] = value
    # The request's portable settings win over anything the options said.
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        optional["temperature"] = request.temperature
    if request.stop is not None:
        optional["stop_sequences"] = list(request.stop)
    given = request.max_tokens is not None or "max_tokens" in options
    body["max_tokens"] = add_thinking(
        optional,
        request.thinking,
        body["model"],
        body["max_tokens"],
        max_tokens_given=given or "max_tokens" in (options.get("extra_body") or {}),
        provider=DISPLAY_NAME,
    )
    leave_out_refused(optional, body["model"])
    if request.output is not None:
        add_output(optional, request.output, body["model"])
    for key in sorted(optional, key=lambda k: (k not in sdk_keys, k)):
        body[key] = optional[key]
    if anchors or request.cache == "auto":
        auto = request.cache == "auto"
        place_breakpoints(body, anchors, auto, body["model"], cache_ttl(options, "anthropic"))
    return body


def _messages(messages: Iterable[LLMMessage]) -> tuple[list[dict[str, Any]], list[Anchor]]:
    """The rendered messages, and where each ``CachePoint`` puts its breakpoint: the nearest
    earlier block that can hold one (None: none before it, so the tools and system prompt)."""
    rendered: list[dict[str, Any]] = []
    anchors: list[Anchor] = []
    last: Anchor = None
    for message in messages:
        content: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, CachePoint):
                anchors.append(last)
                continue
            wire = _block(block)
            content.append(wire)
            if markable(wire):
                last = wire
        rendered.append({"role": message.role, "content": content})
    return rendered, anchors


def _block(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageBlock):
        return {"type": "image", "source": _source(block.source)}
    if isinstance(block, DocumentBlock):
        return _document(block)
    if isinstance(block, ToolUseBlock):
        return {
            "type": "tool_use",
            "id": block.id,
            "name": block.name,
            "input": thaw_json(block.input),
        }
    if isinstance(block, ToolResultBlock):
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
        if isinstance(block.content, str):
            result["content"] = block.content
        else:
            result["content"] = [_part(p) for p in block.content]
        if block.is_error:
            result["is_error"] = True
        return result
    if isinstance(block, ReasoningBlock):
        if block.redacted_data is not None:
            return {"type": "redacted_thinking", "data": block.redacted_data}
        if block.signature is None:
            # A thinking block goes back only with the signature Anthropic issued for it;
            # dropping it silently would change the conversation, so refuse before any I/O.
            raise UnsupportedContentBlockError(
                DISPLAY_NAME, "reasoning", "a thinking block needs its signature"
            )
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    # The core's capability check refuses everything else (video, audio) before render is
    # called.
    raise UnsupportedContentBlockError(DISPLAY_NAME, block.type, "not supported")


def _part(part: TextBlock | ImageBlock | FilePart) -> dict[str, Any]:
    if isinstance(part, TextBlock):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImageBlock):
        return {"type": "image", "source": _source(part.source)}
    return {"type": "document", "source": _source(part.source), "title": part.filename}


def _document(block: DocumentBlock) -> dict[str, Any]:
    """A ``document`` block: a PDF as a base64 or URL source, text as the API's plain-text
    source holding the decoded text (``text/plain``, the one text type the API documents, for
    every ``text/*`` type: markdown, CSV... are plain text to it). ``title`` is the filename;
    citations are left off (not sent)."""
    source = block.source
    if isinstance(source, Base64Source) and source.media_type.startswith("text/"):
        wire: dict[str, Any] = {
            "type": "text",
            "media_type": "text/plain",
            "data": _utf8_text(source.data),
        }
    else:
        wire = _source(source)
    document: dict[str, Any] = {"type": "document", "source": wire}
    if block.filename is not None:
        document["title"] = block.filename
    return document


def _utf8_text(data: str) -> str:
    """The text a text document's base64 holds; one that is not UTF-8 is refused before any
    request (the API takes the text itself, so the bytes must be text)."""
    text: str | None = None
    with contextlib.suppress(binascii.Error, UnicodeDecodeError):  # raised below, unchained
        text = base64.b64decode(data, validate=True).decode("utf-8")
    if text is None:
        raise UnsupportedContentBlockError(
            DISPLAY_NAME, "document", "a text document must hold UTF-8 text"
        )
    return text


def _source(source: MediaSource) -> dict[str, Any]:
    if isinstance(source, Base64Source):
        return {"type": "base64", "media_type": source.media_type, "data": source.data}
    # Anthropic fetches the URL itself and reads the type from the response.
    return {"type": "url", "url": source.url}


# --------------------------------------------------------------------------- replies


def block_from_reply(block: Any) -> ContentBlock | None:
    """One content block of a reply (an SDK model or any object with the same attributes).

    Block types oma has no place for (server tool results, say) give None: they appear only
    when the caller enabled server tools through ``extra_body``.
    """
    kind = getattr(block, "type", None)
    if kind == "text":
        return TextBlock(_str(block, "text"))
    if kind == "tool_use":
        tool_input = getattr(block, "input", None)
        if not isinstance(tool_input, Mapping):
            raise _malformed("a tool_use block without an input object")
        return ToolUseBlock(_str(block, "id"), _str(block, "name"), dict(tool_input))
    if kind == "thinking":
        return ReasoningBlock(
            _str(block, "thinking"), signature=_str(block, "signature"), provider=PROVIDER
        )
    if kind == "redacted_thinking":
        return ReasoningBlock("", redacted_data=_str(block, "data"), provider=PROVIDER)
    return None


def message_from_blocks(blocks: Iterable[ContentBlock | None]) -> LLMMessage:
    """The assistant turn of ``blocks``; an empty reply becomes one empty text block."""
    content = tuple(b for b in blocks if b is not None)
    return LLMMessage("assistant", content or (TextBlock(""),))


def response_from_message(message: Any) -> ProviderResponse:
    """A ``ProviderResponse`` from a non-streaming reply (the SDK's ``Message``)."""
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise _malformed("a reply without a content list")
    usage = getattr(message, "usage", None)
    return ProviderResponse(
        message=message_from_blocks(block_from_reply(b) for b in content),
        usage=usage_from(usage),
        stop_reason=getattr(message, "stop_reason", None),
        model=getattr(message, "model", None),
    )


def _str(obj: Any, name: str) -> str:
    value = getattr(obj, name, None)
    if not isinstance(value, str):
        raise _malformed(f"a {getattr(obj, 'type', 'content')} block without a string {name}")
    return value


def usage_from(usage: Any) -> Usage:
    """oma's ``Usage`` of a reply's ``usage`` (read by attribute; a missing count is 0).

    Anthropic's ``input_tokens`` leaves out the tokens read from or written to the prompt
    cache; oma's counts all the input, so the three are added.
    """
    read = _int(usage, "cache_read_input_tokens")
    written = _int(usage, "cache_creation_input_tokens")
    return Usage(
        _int(usage, "input_tokens") + read + written,
        _int(usage, "output_tokens"),
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=_int(getattr(usage, "output_tokens_details", None), "thinking_tokens"),
    )


def _int(obj: Any, name: str) -> int:
    value = getattr(obj, name, None)
    return value if isinstance(value, int) else 0


def _malformed(what: str) -> ProviderError:
    return malformed_response(DISPLAY_NAME, what)


_NOT_JSON = object()


def parse_tool_input(text: str) -> dict[str, Any]:
    """The JSON object a streamed tool call's ``input_json_delta`` pieces add up to."""
    if not text:
        return {}
    value: Any = _NOT_JSON
    with contextlib.suppress(ValueError):  # raised below, outside a handler: not chained
        value = json.loads(text)
    if value is _NOT_JSON:
        raise _malformed("a tool_use block whose streamed input is not JSON")
    if not isinstance(value, dict):
        raise _malformed("a tool_use block whose streamed input is not a JSON object")
    return value
