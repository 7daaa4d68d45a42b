"""oma messages -> the Chat Completions request body, and replies -> oma's provider types.

Pure functions, no SDK: ``request_body`` builds the exact dict the provider hands to the SDK
(and ``render`` returns), so what is shown and what is sent cannot diverge. Replies are read
through attributes, so the SDK's response models and plain namespaces both work.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from oma_core import (
    AudioBlock,
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
    VideoBlock,
)
from oma_core.http import malformed_response
from oma_core.messages import CachePoint, FilePart, MediaSource, thaw_json
from oma_core.toolkit import OutputRequest, ProviderRequest

from .caching import Anchor, add_cache_key, mark, place_breakpoints, wants_breakpoints
from .model_rules import effort_for, leave_out_sampling
from .presets import AUDIO_FORMATS, Preset
from .strict import strict_schema

__all__ = [
    "content_blocks",
    "data_url",
    "media_note",
    "parse_arguments",
    "request_body",
    "strict_for",
    "text_document",
    "tool_input",
]

_log = logging.getLogger("oma.openai")

#: ``provider_options`` keys that configure the SDK client, not the request body
#: (``headers`` is an alias of ``default_headers``, the name the other plugins use).
CLIENT_OPTIONS = frozenset(
    {
        "organization",
        "project",
        "timeout",
        "default_headers",
        "default_query",
        "headers",
        "transport",
        "max_response_bytes",
        "max_event_bytes",
        "max_connections",
        "api",
    }
)
#: Body fields the plugin owns; options cannot replace them.
_OWN_FIELDS = frozenset({"model", "messages", "stream", "stream_options"})
#: The two names presets use for the reply's token limit.
_TOKEN_FIELDS = frozenset({"max_tokens", "max_completion_tokens"})


def media_note(tool_call_id: str) -> str:
    """The text that introduces a tool result's media in the user message that carries them."""
    return f"Media returned by tool call {tool_call_id}:"


def request_body(
    request: ProviderRequest,
    preset: Preset,
    *,
    stream: bool,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one ``POST /chat/completions`` for ``request``.

    ``options`` (the provider's ``provider_options``) and then ``request.options`` add body
    fields (``seed``, ``reasoning_effort``, ``response_format``, ...); client options and the
    fields the plugin owns are skipped, and so is a field the request's portable settings
    (``max_tokens``, ``temperature``, ``stop``) already fill: the portable value wins. Key
    order follows the order the SDK would use for its own fields (model, stream, messages,
    ...), which keeps the bytes on the wire equal to ``json.dumps`` of this dict.
    """
    model = request.model or preset.default_model
    if not model:
        raise ProviderError(
            f"{preset.display_name}: no model given; set AgentConfig.model",
            provider=preset.display_name,
            retryable=False,
        )
    body: dict[str, Any] = {"model": model}
    if stream:
        body["stream"] = True
    cached = wants_breakpoints(request, preset.capabilities.caching, model)
    anchors: list[Anchor] | None = [] if cached else None
    body["messages"] = _messages(request, preset, anchors)
    if request.max_tokens is not None:
        body[preset.token_param] = request.max_tokens
    if stream:
        body["stream_options"] = {"include_usage": True}
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop is not None:
        body["stop"] = list(request.stop)
    if request.tools:
        body["tools"] = [_tool(t.name, t.description, t.input_schema) for t in request.tools]
    if request.output is not None:
        _add_output(body, request.output, preset)
    portable = _portable(request, preset)
    for extra in (options, request.options):
        for key, value in (extra or {}).items():
            if key not in CLIENT_OPTIONS and key not in _OWN_FIELDS and key not in portable:
                body[key] = thaw_json(value)
    if preset.responses:  # OpenAI's own models: thinking and the settings they refuse
        effort = effort_for(request.thinking, model, preset.display_name)
        if effort is not None:
            body["reasoning_effort"] = effort
        leave_out_sampling(body, model, body.get("reasoning_effort"), preset.display_name)
    if anchors is not None:
        _add_breakpoints(body, anchors, request.cache == "auto")
    add_cache_key(body, request, preset.capabilities.caching, model)
    return body


def _add_breakpoints(body: dict[str, Any], anchors: list[Anchor], auto: bool) -> None:
    """Chat Completions' breakpoints (``caching``): the system message's content, the
    content parts of user and tool messages."""
    messages = body["messages"]
    system = messages[0] if messages and messages[0]["role"] == "system" else None
    latest = next(
        ((m, "content", -1) for m in reversed(messages) if m["role"] in ("user", "tool")), None
    )
    kept = place_breakpoints(
        body, anchors, latest, auto=auto, system=system is not None, text_type="text"
    )
    if system is not None and None in kept:
        mark((system, "content", -1), "text")


def _portable(request: ProviderRequest, preset: Preset) -> frozenset[str]:
    """The body fields the request's portable settings fill, which options cannot replace.

    ``max_tokens`` claims both token fields: a preset that sends ``max_completion_tokens``
    must not also get a ``max_tokens`` from the options (the service refuses the pair).
    """
    fields: set[str] = set()
    if request.max_tokens is not None:
        fields.update(_TOKEN_FIELDS)
    if request.temperature is not None:
        fields.add("temperature")
    if request.stop is not None:
        fields.add("stop")
    if request.output is not None:  # the output's wire wins over a response_format option
        fields.update(("response_format", "tool_choice"))
    return frozenset(fields)


#: Strict schemas made, by the ``OutputRequest`` object they were made from (the core hands
#: the same object to every call of a run): ``id`` -> (the object, preset name, schema).
_STRICT: dict[int, tuple[OutputRequest, str, dict[str, Any]]] = {}
_STRICT_MAX = 256


def strict_for(output: OutputRequest, preset: Preset) -> dict[str, Any]:
    """``output.schema`` made strict, once per output object and preset (a copy each call:
    the body is the caller's to change)."""
    entry = _STRICT.get(id(output))
    if entry is None or entry[0] is not output or entry[1] != preset.name:
        if len(_STRICT) >= _STRICT_MAX:
            _STRICT.clear()
        made = strict_schema(output.schema, output.name, preset.display_name)
        entry = _STRICT[id(output)] = (output, preset.name, made)
    copied: dict[str, Any] = thaw_json(entry[2])  # a copy: cheaper than deepcopy; JSON only
    return copied


def _add_output(body: dict[str, Any], output: OutputRequest, preset: Preset) -> None:
    """The structured output's wire: ``response_format`` ``json_schema`` in native mode; in
    tool mode one more function tool, and ``tool_choice`` forcing it (``required`` when the
    agent has tools of its own, so the model may still call them first). The schema is made
    strict (refused locally where it cannot be) wherever ``strict: true`` is sent."""
    strict = output.strict and (
        preset.strict_output if output.mode == "native" else preset.strict_tools
    )
    schema = strict_for(output, preset) if strict else thaw_json(output.schema)
    if output.mode == "native":
        spec: dict[str, Any] = {"name": output.name}
        if output.description:
            spec["description"] = output.description
        spec["schema"] = schema
        spec["strict"] = strict
        body["response_format"] = {"type": "json_schema", "json_schema": spec}
        return
    function: dict[str, Any] = {"name": output.name}
    if output.description:
        function["description"] = output.description
    function["parameters"] = schema
    if strict:
        function["strict"] = True
    own_tools = bool(body.get("tools"))
    body["tools"] = [*body.get("tools", []), {"type": "function", "function": function}]
    body["tool_choice"] = (
        "required" if own_tools else {"type": "function", "function": {"name": output.name}}
    )


# --------------------------------------------------------------------------- messages


def _messages(
    request: ProviderRequest, preset: Preset, anchors: list[Anchor] | None = None
) -> list[dict[str, Any]]:
    """The messages; with ``anchors``, where each ``CachePoint`` puts its breakpoint is added
    to it (the part before it, in its message or an earlier user or tool message; None: the
    system prompt; a ``CachePoint`` with neither before it is left out)."""
    out: list[dict[str, Any]] = []
    last: list[Anchor] = []
    if request.system_prompt:
        out.append({"role": "system", "content": request.system_prompt})
        last.append(None)
    for message in request.messages:
        if message.role == "assistant":
            out.append(_assistant(message, preset))
        else:
            out.extend(_user(message, preset, anchors, last))
    return out


def _user(
    message: LLMMessage,
    preset: Preset,
    anchors: list[Anchor] | None = None,
    last: list[Anchor] | None = None,
) -> list[dict[str, Any]]:
    """Tool results become ``tool`` messages (which must follow the assistant's tool calls);
    everything else, with the media tools returned, goes in one user message after them.
    ``last`` holds the last part a breakpoint can go on, carried from message to message."""
    tool_messages: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    user: dict[str, Any] = {"role": "user", "content": parts}
    last = [] if last is None else last
    for block in message.content:
        if isinstance(block, CachePoint):
            if anchors is not None and last:
                anchors.append(last[-1])
            continue
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            parts.append(_image_part(block))
        elif isinstance(block, VideoBlock):
            parts.append({"type": "video_url", "video_url": {"url": data_url(block.source)}})
        elif isinstance(block, DocumentBlock):
            parts.append(_document_part(block, preset))
        elif isinstance(block, AudioBlock):
            parts.append(_audio_part(block, preset))
        elif isinstance(block, ToolResultBlock):
            tool_message = _tool_message(block)
            tool_messages.append(tool_message)
            last.append((tool_message, "content", -1))
            media = (
                []
                if isinstance(block.content, str)
                else [p for p in block.content if not isinstance(p, TextBlock)]
            )
            if media:
                parts.append({"type": "text", "text": media_note(block.tool_use_id)})
                parts.extend(_media_part(p, preset) for p in media)
            else:
                continue
        else:
            raise _refused(preset, block.type, "not supported in a user message")
        last.append((user, "content", len(parts) - 1))
    if not parts:
        return tool_messages
    user["content"] = _content(parts)
    return [*tool_messages, user]


def _assistant(message: LLMMessage, preset: Preset) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    reasoning: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolUseBlock):
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": tool_input(block.input)},
                }
            )
        elif isinstance(block, ReasoningBlock) and _responses_item(block, preset):
            # a Responses API reasoning item: Chat Completions has no field for it
            _log.debug("%s: a Responses reasoning item left out of Chat Completions", preset.name)
        elif isinstance(block, ReasoningBlock) and preset.reasoning_field is not None:
            if block.redacted_data is not None:
                raise _refused(preset, "reasoning", "redacted reasoning cannot be sent back")
            reasoning.append(block.text)
        else:
            raise _refused(preset, block.type, "not supported in an assistant message")
    out: dict[str, Any] = {"role": "assistant"}
    if parts or not calls:
        out["content"] = _content(parts) if parts else ""
    if reasoning and preset.reasoning_field is not None:
        out[preset.reasoning_field] = "".join(reasoning)
    if calls:
        out["tool_calls"] = calls
    return out


def _responses_item(block: ReasoningBlock, preset: Preset) -> bool:
    """Whether ``block`` is a reasoning item this preset's Responses API issued."""
    return preset.responses and block.provider == preset.name and block.signature is not None


def _tool_message(block: ToolResultBlock) -> dict[str, Any]:
    """A ``tool`` message: text only in this API (media follow in a user message)."""
    content: str | list[dict[str, Any]]
    if isinstance(block.content, str):
        content = f"Error: {block.content}" if block.is_error else block.content
    else:
        texts = [
            {"type": "text", "text": p.text} for p in block.content if isinstance(p, TextBlock)
        ]
        if texts:
            content = _content(texts)
        else:
            content = "The tool returned media only; it follows in the next user message."
    return {"role": "tool", "tool_call_id": block.tool_use_id, "content": content}


def _content(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """A single text part is sent as a plain string, the form every compatible server takes."""
    if len(parts) == 1 and parts[0]["type"] == "text":
        text: str = parts[0]["text"]
        return text
    return parts


def _media_part(part: object, preset: Preset) -> dict[str, Any]:
    if isinstance(part, ImageBlock):
        return _image_part(part)
    if isinstance(part, FilePart) and isinstance(part.source, Base64Source):
        return {
            "type": "file",
            "file": {"filename": part.filename, "file_data": data_url(part.source)},
        }
    kind = getattr(part, "type", type(part).__name__)
    raise _refused(preset, str(kind), "not supported inside a tool result")


def _image_part(block: ImageBlock) -> dict[str, Any]:
    image: dict[str, Any] = {"url": data_url(block.source)}
    if block.detail is not None:
        image["detail"] = block.detail
    return {"type": "image_url", "image_url": image}


#: The ``filename`` a PDF without one is sent with (the ``file`` part requires one).
DEFAULT_PDF_NAME = "document.pdf"


def _document_part(block: DocumentBlock, preset: Preset) -> dict[str, Any]:
    """A PDF as a ``file`` part (a data URL, or the URL itself where the preset declares PDF
    URLs); a text document as a text part that names the file and its type."""
    source = block.source
    if isinstance(source, Base64Source) and source.media_type.startswith("text/"):
        return {"type": "text", "text": text_document(block, preset)}
    if preset.responses and not isinstance(source, Base64Source):
        raise _refused(preset, "document", "a PDF by URL takes the Responses API, not Chat")
    filename = block.filename or DEFAULT_PDF_NAME
    return {"type": "file", "file": {"filename": filename, "file_data": data_url(source)}}


def text_document(block: DocumentBlock, preset: Preset) -> str:
    """A base64 text document's UTF-8 text, framed (refused when it is not UTF-8)."""
    source = block.source
    if not isinstance(source, Base64Source):
        raise _refused(preset, "document", "a text document must be inline base64")
    return _text_document(block, _utf8_text(source.data, preset))


def _text_document(block: DocumentBlock, text: str) -> str:
    """``text`` framed the way pydantic-ai inlines text files for Chat Completions, so the
    model sees where it starts and ends, what it is called and its type::

        -----BEGIN FILE id="memo.md" type="text/markdown"-----
        ...
        -----END FILE id="memo.md"-----

    (without a filename: ``-----BEGIN FILE type="text/plain"-----`` ... ``-----END FILE-----``).
    """
    named = f" id={json.dumps(block.filename, ensure_ascii=False)}" if block.filename else ""
    media_type = json.dumps(block.source.media_type)
    return f"-----BEGIN FILE{named} type={media_type}-----\n{text}\n-----END FILE{named}-----"


def _utf8_text(data: str, preset: Preset) -> str:
    text: str | None = None
    with contextlib.suppress(binascii.Error, UnicodeDecodeError):  # raised below, unchained
        text = base64.b64decode(data, validate=True).decode("utf-8")
    if text is None:
        raise _refused(preset, "document", "a text document must hold UTF-8 text")
    return text


def _audio_part(block: AudioBlock, preset: Preset) -> dict[str, Any]:
    """An ``input_audio`` part: raw base64 and its format (the capability check lets only
    base64 wav and mp3 through)."""
    source = block.source
    audio_format = AUDIO_FORMATS.get(source.media_type)
    if not isinstance(source, Base64Source) or audio_format is None:
        raise _refused(preset, "audio", "input_audio takes base64 wav or mp3 only")
    return {"type": "input_audio", "input_audio": {"data": source.data, "format": audio_format}}


def data_url(source: MediaSource) -> str:
    """A data URL for base64 data, the URL itself otherwise."""
    if isinstance(source, Base64Source):
        return f"data:{source.media_type};base64,{source.data}"
    return source.url


def _tool(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if description:
        function["description"] = description
    function["parameters"] = thaw_json(schema)
    return {"type": "function", "function": function}


def _refused(preset: Preset, block_type: str, detail: str) -> UnsupportedContentBlockError:
    return UnsupportedContentBlockError(preset.display_name, block_type, detail)


# --------------------------------------------------------------------------- JSON helpers


def tool_input(value: Mapping[str, Any]) -> str:
    """A tool call's input as the JSON string Chat Completions wants in ``arguments``."""
    return json.dumps(thaw_json(value), ensure_ascii=False)


def parse_arguments(arguments: str | None, display_name: str) -> dict[str, Any]:
    """A tool call's ``arguments`` string as a JSON object; anything else is malformed."""
    if not arguments:
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise malformed_response(display_name, "tool call arguments are not a JSON object")
    return value


def content_blocks(
    reasoning: str,
    text: str,
    calls: Sequence[ToolUseBlock],
    keep_reasoning: bool,
    provider: str | None = None,
) -> tuple[ReasoningBlock | TextBlock | ToolUseBlock, ...]:
    """The blocks of a reply, in the order the model produced them; reasoning is marked as
    ``provider``'s (the preset's name)."""
    blocks: list[ReasoningBlock | TextBlock | ToolUseBlock] = []
    if reasoning and keep_reasoning:
        blocks.append(ReasoningBlock(reasoning, provider=provider))
    if text or not calls:
        blocks.append(TextBlock(text))
    blocks.extend(calls)
    return tuple(blocks)
