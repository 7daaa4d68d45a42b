"""oma's messages and settings as a Converse request body (the JSON the REST wire carries).

Converse's blobs (image, video, document and audio bytes) travel as base64 strings in its JSON
wire;
oma's base64 sources are already canonical base64, so they are passed through as the very same
string objects and never decoded. Their decoded size is computed from the length alone, to
hold a request under the inline limit (Converse takes larger media only from S3).

Every document gets a ``name`` by Converse's rules (letters, digits, single whitespace,
hyphens, parentheses, square brackets; 1 to 200 characters), derived from its file name, and
unique within the request (Converse refuses duplicate document names across the whole
conversation): the first keeps its name, later ones with the same name get ``-2``, ``-3``...
(in conversation order, so a conversation replayed turn after turn keeps its names).

A request's ``output`` goes where botocore's ``bedrock-runtime`` service model puts structured
output: natively as ``outputConfig.textFormat`` (``type`` ``json_schema``, the schema as a JSON
*string* in ``structure.jsonSchema.schema``; the reply's text is the JSON), or as one more
``toolSpec`` that ``toolConfig.toolChoice`` ``{"tool": {"name"}}`` forces (its ``strict`` set
as the output asks; ``{"any": {}}`` when the agent has tools of its own).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from oma_core import (
    AudioBlock,
    Base64Source,
    DocumentBlock,
    ImageBlock,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnsupportedContentBlockError,
    VideoBlock,
)
from oma_core.capabilities import UnsupportedSettingError
from oma_core.messages import CachePoint, FilePart, MediaSource, thaw_json
from oma_core.toolkit import OutputRequest, ProviderRequest

from .caching import Anchor, caches, markable, place_checkpoints
from .capabilities import (
    AUDIO_FORMATS,
    DISPLAY_NAME,
    DOCUMENT_FORMATS,
    IMAGE_FORMATS,
    MAX_DOCUMENTS,
    PROVIDER,
    VIDEO_FORMATS,
)
from .thinking import add_thinking, leave_out_refused

__all__ = [
    "DocumentNames",
    "build_body",
    "check_documents",
    "check_inline_size",
    "decoded_size",
    "document_name",
]

_NAME_DISALLOWED = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")
_SPACES = re.compile(r"\s+")
#: Converse's longest document name (botocore: ``DocumentBlockNameString``, max 200).
_NAME_MAX = 200


def build_body(
    request: ProviderRequest,
    extra_fields: Mapping[str, Any] | None,
    model: str,
    cache_ttl: str | None = None,
) -> dict[str, Any]:
    """The Converse body for ``request`` to ``model`` (the model goes in the URL, not the
    body); its ``thinking`` goes into ``additionalModelRequestFields`` for Claude, which also
    leaves out the sampling settings the model refuses (``oma_bedrock.thinking``); its
    ``CachePoint`` blocks and ``cache="auto"`` become ``cachePoint`` blocks with ``cache_ttl``
    (``oma_bedrock.caching``)."""
    messages, anchors = _messages(request.messages, DocumentNames())
    body: dict[str, Any] = {"messages": messages}
    if request.system_prompt:
        body["system"] = [{"text": request.system_prompt}]
    inference: dict[str, Any] = {}
    if request.max_tokens is not None:
        inference["maxTokens"] = request.max_tokens
    if request.temperature is not None:
        inference["temperature"] = request.temperature
    if request.stop is not None:
        inference["stopSequences"] = list(request.stop)
    fields: dict[str, Any] = thaw_json(extra_fields) if extra_fields else {}
    add_thinking(fields, inference, request.thinking, model, DISPLAY_NAME)
    leave_out_refused(inference, fields, model)
    if inference:
        body["inferenceConfig"] = inference
    specs = [
        (tool.name, tool.description or tool.name, thaw_json(tool.input_schema))
        for tool in request.tools
    ]
    if not specs:
        # Converse refuses toolUse / toolResult blocks without a toolConfig; a conversation
        # that carries earlier tool calls but offers no tools now declares the tools it used
        specs = [
            (name, f"the {name} tool used earlier in this conversation", {"type": "object"})
            for name in _tools_used(request.messages)
        ]
    tools: list[dict[str, Any]] = [
        {"toolSpec": {"name": n, "description": d, "inputSchema": {"json": schema}}}
        for n, d, schema in specs
    ]
    output = request.output
    if output is not None and output.mode == "tool":
        tools.append({"toolSpec": _output_spec(output)})
    if tools:
        body["toolConfig"] = {"tools": tools}
    if output is not None and output.mode == "tool":
        # the output tool; with tools of the agent's own, any tool (they may be called first)
        forced = {"tool": {"name": output.name}}
        body["toolConfig"]["toolChoice"] = {"any": {}} if request.tools else forced
    elif output is not None:
        body["outputConfig"] = {"textFormat": _text_format(output)}
    if fields:
        body["additionalModelRequestFields"] = fields
    if anchors or request.cache == "auto":
        if cache_ttl == "1h" and "tools" not in caches(model):
            raise UnsupportedSettingError(
                DISPLAY_NAME,
                "cache_ttl",
                cache_ttl,
                "Bedrock offers the one-hour cache for Claude models only",
                model=model,
            )
        place_checkpoints(body, anchors, request.cache == "auto", model, cache_ttl)
    return body


def _output_spec(output: OutputRequest) -> dict[str, Any]:
    """The ``toolSpec`` whose forced call carries the output in its ``input``."""
    spec: dict[str, Any] = {"name": output.name}
    if output.description:
        spec["description"] = output.description
    spec["inputSchema"] = {"json": thaw_json(output.schema)}
    if output.strict:
        spec["strict"] = True
    return spec


def _text_format(output: OutputRequest) -> dict[str, Any]:
    """``outputConfig.textFormat`` for ``output``: the service model types the schema as a
    string holding the JSON Schema, not as a JSON object."""
    schema: dict[str, Any] = {
        "schema": json.dumps(thaw_json(output.schema), ensure_ascii=False, separators=(",", ":")),
        "name": output.name,
    }
    if output.description:
        schema["description"] = output.description
    return {"type": "json_schema", "structure": {"jsonSchema": schema}}


def _tools_used(messages: tuple[LLMMessage, ...]) -> list[str]:
    """The names of the tools a conversation's tool calls use (in order, once each); a
    ``toolResult`` without its call in the conversation still needs a toolConfig."""
    names: dict[str, None] = {}
    results = False
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolUseBlock):
                names.setdefault(block.name)
            elif isinstance(block, ToolResultBlock):
                results = True
    if results and not names:
        names["tool"] = None
    return list(names)


def _messages(
    messages: tuple[LLMMessage, ...], names: DocumentNames
) -> tuple[list[dict[str, Any]], list[Anchor]]:
    """The rendered messages, and where each ``CachePoint`` puts its checkpoint: after the
    nearest earlier block that can end a prefix (None: none before it, so the tools and system
    prompt)."""
    rendered: list[dict[str, Any]] = []
    anchors: list[Anchor] = []
    last: Anchor = None
    for message in messages:
        content: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, CachePoint):
                anchors.append(last)
            elif not _foreign(block):
                wire = _block(block, names)
                content.append(wire)
                if markable(wire):
                    last = wire
        rendered.append({"role": message.role, "content": content})
    return rendered, anchors


def _foreign(block: Any) -> bool:
    """Reasoning signed or redacted by another service: Bedrock cannot read it (the core
    leaves it out of a run's requests; this guards a request built by hand)."""
    return (
        isinstance(block, ReasoningBlock)
        and block.provider not in (None, PROVIDER)
        and (block.signature is not None or block.redacted_data is not None)
    )


def _block(block: Any, names: DocumentNames) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if isinstance(block, ImageBlock):
        return {"image": _media(block.source, IMAGE_FORMATS)}
    if isinstance(block, VideoBlock):
        return {"video": _media(block.source, VIDEO_FORMATS)}
    if isinstance(block, DocumentBlock):
        document = _media(block.source, DOCUMENT_FORMATS)
        return {"document": {**document, "name": names.take(block.filename)}}
    if isinstance(block, AudioBlock):
        return {"audio": _media(block.source, AUDIO_FORMATS)}
    if isinstance(block, ToolUseBlock):
        use = {"toolUseId": block.id, "name": block.name, "input": thaw_json(block.input)}
        return {"toolUse": use}
    if isinstance(block, ToolResultBlock):
        return {"toolResult": _tool_result(block, names)}
    if isinstance(block, ReasoningBlock):
        if block.redacted_data is not None:
            return {"reasoningContent": {"redactedContent": block.redacted_data}}
        text: dict[str, Any] = {"text": block.text}
        if block.signature is not None:
            text["signature"] = block.signature
        return {"reasoningContent": {"reasoningText": text}}
    # the core checked the capabilities: nothing else reaches a provider
    raise UnsupportedContentBlockError(DISPLAY_NAME, block.type, "no Converse mapping")


def _tool_result(block: ToolResultBlock, names: DocumentNames) -> dict[str, Any]:
    content: list[dict[str, Any]]
    if isinstance(block.content, str):
        content = [{"text": block.content}]
    else:
        content = []
        for part in block.content:
            if isinstance(part, TextBlock):
                content.append({"text": part.text})
            elif isinstance(part, ImageBlock):
                content.append({"image": _media(part.source, IMAGE_FORMATS)})
            elif isinstance(part, FilePart):
                document = _media(part.source, DOCUMENT_FORMATS)
                content.append({"document": {**document, "name": names.take(part.filename)}})
    result: dict[str, Any] = {"toolUseId": block.tool_use_id, "content": content}
    if block.is_error:
        result["status"] = "error"
    return result


def _media(source: MediaSource, formats: Mapping[str, str]) -> dict[str, Any]:
    assert isinstance(source, Base64Source)  # capabilities declare base64 only
    return {"format": formats[source.media_type], "source": {"bytes": source.data}}


def document_name(filename: str | None) -> str:
    """A Converse document name from a file name: its stem, with only the characters
    Converse allows (letters, digits, single spaces, hyphens, parentheses, brackets), at most
    200 of them; "document" when nothing is left (or there is no file name)."""
    if not filename:
        return "document"
    stem = filename.rsplit(".", 1)[0] if "." in filename.lstrip(".") else filename
    cleaned = _SPACES.sub(" ", _NAME_DISALLOWED.sub("-", stem)).strip(" -")
    return cleaned[:_NAME_MAX].rstrip(" ") or "document"


class DocumentNames:
    """The document names of one request, each unique: Converse refuses two documents of
    the same name (compared without case) anywhere in a conversation."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def take(self, filename: str | None) -> str:
        """The name of the next document, from ``filename``, with ``-2``, ``-3``... when an
        earlier document of the request has it."""
        base = document_name(filename)
        name, number = base, 1
        while name.casefold() in self._taken:
            number += 1
            suffix = f"-{number}"
            name = base[: _NAME_MAX - len(suffix)].rstrip(" ") + suffix
        self._taken.add(name.casefold())
        return name


def decoded_size(data: str) -> int:
    """The number of bytes canonical, padded base64 ``data`` decodes to."""
    padding = len(data) - len(data.rstrip("="))
    return len(data) // 4 * 3 - padding


def _media_blocks(messages: tuple[LLMMessage, ...]) -> Iterator[tuple[str, Base64Source]]:
    for message in messages:
        for block in message.content:
            if isinstance(
                block, ImageBlock | VideoBlock | DocumentBlock | AudioBlock
            ) and isinstance(block.source, Base64Source):
                yield block.type, block.source
            elif isinstance(block, ToolResultBlock) and not isinstance(block.content, str):
                for part in block.content:
                    if isinstance(part, ImageBlock | FilePart) and isinstance(
                        part.source, Base64Source
                    ):
                        yield part.type, part.source


def check_inline_size(messages: tuple[LLMMessage, ...], limit: int) -> None:
    """Refuse, before anything is signed or sent, media whose decoded bytes together pass
    ``limit``; the error names the block that crossed it, the limit and the way out."""
    total = 0
    for block_type, source in _media_blocks(messages):
        total += decoded_size(source.data)
        if total > limit:
            raise UnsupportedContentBlockError(
                DISPLAY_NAME,
                block_type,
                f"the request's inline media come to more than {limit} bytes, the inline "
                'limit (provider_options["max_inline_bytes"]); Converse takes larger media '
                "from S3 only",
            )


def check_documents(messages: tuple[LLMMessage, ...]) -> None:
    """Refuse, before anything is signed or sent, what Converse documents it refuses of
    documents in a message: more than five, or documents without a text block beside them."""
    for index, message in enumerate(messages):
        documents = [b for b in message.content if isinstance(b, DocumentBlock)]
        if len(documents) > MAX_DOCUMENTS:
            raise UnsupportedContentBlockError(
                DISPLAY_NAME,
                "document",
                f"messages[{index}] holds {len(documents)} documents; Converse takes at most "
                f"{MAX_DOCUMENTS} in a message",
            )
        if documents and not any(isinstance(b, TextBlock) for b in message.content):
            raise UnsupportedContentBlockError(
                DISPLAY_NAME,
                "document",
                f"messages[{index}] holds a document but no text block; Converse takes a "
                "document only beside a text block (add the question as text)",
            )
