"""The built-in "echo" provider: the offline default, which describes what it received.

It carries every block and answers, one line per message, with the message's role and, per
block, its type and a short account of it::

    user: text "What is shown?"; image image/png base64 1234 bytes

So a program can be run end to end, media and all, without a key or a network.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import attrs

from ..capabilities import Capabilities, ProviderSpec
from ..hookspecs import hookimpl
from ..messages import (
    BLOCK_TYPES,
    Base64Source,
    ContentBlock,
    FilePart,
    LLMMessage,
    MediaSource,
    TextBlock,
    ToolResultBlock,
    ToolResultPart,
    ToolUseBlock,
)
from ..providers import (
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    Usage,
)

__all__ = [
    "EchoProvider",
    "describe_block",
    "describe_message",
    "describe_request",
    "oma_register_providers",
]

#: Text longer than this is shortened in the description.
TEXT_LIMIT = 200
#: The largest piece of text in one ``TextDelta`` of the stream.
CHUNK_SIZE = 32


def _quote(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return json.dumps(text, ensure_ascii=False)
    return f"{json.dumps(text[:TEXT_LIMIT] + '...', ensure_ascii=False)} ({len(text)} characters)"


def _describe_source(source: MediaSource) -> str:
    if isinstance(source, Base64Source):
        from ..media import decoded_size

        return f"{source.media_type} base64 {decoded_size(source)} bytes"
    return f"{source.media_type} url {source.url}"


def _describe_part(part: ToolResultPart) -> str:
    if isinstance(part, FilePart):
        filename = json.dumps(part.filename, ensure_ascii=False)
        return f"file {filename} {_describe_source(part.source)}"
    return describe_block(part)  # text, or an image (never with a detail inside a result)


def describe_block(block: ContentBlock) -> str:
    """One block in a few words: its type, then its text, media or call.

    The account follows the block's entry in ``oma_core.messages.BLOCK_TYPES``: a media
    block shows its source (a ``filename`` before it, other fields after it), a block with
    a ``text`` field its text; the two tool blocks show their call and result; any other block
    its type and whatever fields it has set.
    """
    kind = BLOCK_TYPES[block.type]
    if isinstance(block, ToolUseBlock):
        arguments = json.dumps(block.plain_input(), ensure_ascii=False, sort_keys=True)
        if len(arguments) > TEXT_LIMIT:
            arguments = f"{arguments[:TEXT_LIMIT]}... ({len(arguments)} characters)"
        return f"tool_use {block.name} (id {block.id}) {arguments}"
    if isinstance(block, ToolResultBlock):
        error = " error" if block.is_error else ""
        if isinstance(block.content, str):
            body = _quote(block.content)
        else:
            body = "[" + ", ".join(_describe_part(part) for part in block.content) + "]"
        return f"tool_result{error} (id {block.tool_use_id}) {body}"
    values = {field.name: getattr(block, field.name) for field in attrs.fields(kind.cls)}
    fields = {name: value for name, value in values.items() if value is not None}
    if "text" in fields:
        return f"{kind.tag} {_quote(fields['text'])}"
    words = [kind.tag]
    if "filename" in fields:
        words.append(_quote(fields.pop("filename")))
    if kind.family is not None:
        words.append(_describe_source(fields.pop("source")))
    rest = "".join(f" ({name} {value})" for name, value in fields.items())
    return " ".join(words) + rest


def describe_message(message: LLMMessage) -> str:
    """``role: block; block; ...`` on one line."""
    return f"{message.role}: " + "; ".join(describe_block(block) for block in message.content)


def describe_request(request: ProviderRequest) -> str:
    """The echo answer: optional system and tools lines, then one line per message."""
    lines = []
    if request.system_prompt:
        lines.append(f"system: {_quote(request.system_prompt)}")
    if request.tools:
        lines.append("tools: " + ", ".join(tool.name for tool in request.tools))
    lines.extend(describe_message(message) for message in request.messages)
    return "\n".join(lines)


def _chunks(text: str) -> list[str]:
    """Per line, and long lines in pieces of at most ``CHUNK_SIZE`` characters."""
    pieces: list[str] = []
    for line in text.splitlines(keepends=True):
        pieces.extend(line[i : i + CHUNK_SIZE] for i in range(0, len(line), CHUNK_SIZE))
    return pieces


class EchoProvider:
    """Answers every request with ``describe_request(request)``; sends nothing anywhere."""

    name = "echo"
    display_name = "Echo"
    capabilities = Capabilities.everything()

    def __init__(self, settings: ProviderSettings | None = None) -> None:
        self.settings = settings or ProviderSettings()
        self.closed = False

    def _response(self, request: ProviderRequest) -> ProviderResponse:
        from .._tokens import estimate_tokens

        text = describe_request(request)
        system = math.ceil(len(request.system_prompt or "") / 4)
        usage = Usage(
            input_tokens=estimate_tokens(request.messages) + system,
            output_tokens=math.ceil(len(text) / 4),
        )
        message = LLMMessage(role="assistant", content=(TextBlock(text),))
        return ProviderResponse(message, usage, stop_reason="end_turn", model=request.model)

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self._response(request)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        response = self._response(request)
        block = response.message.content[0]
        assert isinstance(block, TextBlock)
        for piece in _chunks(block.text):
            yield TextDelta(piece)
        yield ResponseComplete(response)

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        from ..serialization import dump_messages

        body: dict[str, Any] = {"model": request.model}
        if request.system_prompt is not None:
            body["system"] = request.system_prompt
        body["messages"] = dump_messages(request.messages)
        if request.tools:
            body["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": dict(tool.input_schema),
                }
                for tool in request.tools
            ]
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        return body

    async def aclose(self) -> None:
        self.closed = True


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [
        ProviderSpec(
            name="echo",
            display_name="Echo",
            factory=EchoProvider,
            capabilities=Capabilities.everything(),
            description="Offline: answers with a description of the request it received.",
            shared=True,
            # no options of its own: a misspelt -o is refused, not silently carried
            # (temperature, max_tokens and stop are AgentConfig's, and pass)
            provider_options=(),
        )
    ]
