"""oma's messages and settings as the OpenAI-shaped chat request LiteLLM takes.

A tool result becomes a ``tool`` message (its text parts joined); a user turn's tool results
come before its other blocks, as chat completions require. The model name is split into
LiteLLM's route (``openai``, ``anthropic``, ...) and the model the route names, so that the
body handed to LiteLLM is, on the ``openai/`` route, the very body that reaches the wire.

A request's ``output`` is handed over in OpenAI's form, which LiteLLM translates for each route:
natively as ``response_format`` ``{"type": "json_schema", "json_schema": {"name", "schema",
"strict"}}`` (``strict`` only for a schema that already keeps OpenAI's strict rules: the
bridge does not rewrite schemas per route), or as one more function that ``tool_choice``
``{"type": "function", "function": {"name"}}`` forces (``"required"``, any tool, when the
agent has tools of its own).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
from typing import Any

from oma_core import (
    AudioBlock,
    Base64Source,
    DocumentBlock,
    ImageBlock,
    LLMMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnsupportedContentBlockError,
)
from oma_core.errors import PluginError
from oma_core.http import chat_tools
from oma_core.messages import thaw_json
from oma_core.toolkit import OutputRequest, ProviderRequest

from .capabilities import AUDIO_FORMATS, DISPLAY_NAME
from .reasoning import THINKING_ROUTES, thinking_blocks

__all__ = ["build_body", "split_model", "strict_ready"]


def split_model(model: str | None) -> tuple[str, str]:
    """``"provider/model"`` as ``(route, model)``; the route is LiteLLM's provider name."""
    route, _, name = (model or "").partition("/")
    if not route or not name:
        raise PluginError(
            f"litellm needs a model in LiteLLM's provider/model form "
            f"(e.g. openai/gpt-4o-mini, anthropic/claude-sonnet-4-6), got {model!r}",
            name="litellm",
        )
    return route, name


def build_body(request: ProviderRequest) -> dict[str, Any]:
    """The chat request (OpenAI's shape) for ``request``; the route's model in ``model``."""
    route, model = split_model(request.model)
    signed = route in THINKING_ROUTES
    messages: list[dict[str, Any]] = []
    if request.system_prompt:
        messages.append({"role": "system", "content": request.system_prompt})
    for message in request.messages:
        messages.extend(_messages(message, signed))
    body: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = thaw_json(chat_tools(request.tools))
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.stop is not None:
        body["stop"] = list(request.stop)
    if request.output is not None:
        body.update(_output_fields(request.output, body.get("tools") or []))
    return body


def _output_fields(output: OutputRequest, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The OpenAI-shaped fields that hold a reply to ``output``."""
    schema = thaw_json(output.schema)
    if output.mode == "native":
        strict = output.strict and strict_ready(schema)
        spec: dict[str, Any] = {"name": output.name, "schema": schema, "strict": strict}
        if output.description:
            spec["description"] = output.description
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    function: dict[str, Any] = {"name": output.name}
    if output.description:
        function["description"] = output.description
    function["parameters"] = schema
    # the output function; with tools of the agent's own, any tool (they may be called first)
    forced = {"type": "function", "function": {"name": output.name}}
    return {
        "tools": [*tools, {"type": "function", "function": function}],
        "tool_choice": "required" if tools else forced,
    }


def strict_ready(schema: Any) -> bool:
    """Whether ``schema`` already keeps OpenAI's strict rules (every object closed with
    ``additionalProperties: false`` and all its properties required), so that ``strict: true``
    cannot make the route refuse it. The bridge sends ``strict`` only then: it does not rewrite
    schemas per route (oma-openai does, for OpenAI's own wire)."""
    if isinstance(schema, list):
        return all(strict_ready(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    properties = schema.get("properties")
    if schema.get("type") == "object" or isinstance(properties, dict):
        names = set(properties or {})
        if (
            schema.get("additionalProperties") is not False
            or set(schema.get("required", ())) != names
        ):
            return False
    children = [*(properties or {}).values(), *(schema.get("$defs") or {}).values()]
    children += [schema[key] for key in ("items", "anyOf", "allOf") if key in schema]
    return all(strict_ready(child) for child in children)


def _messages(message: LLMMessage, signed: bool) -> list[dict[str, Any]]:
    if message.role == "assistant":
        texts = [b.text for b in message.content if isinstance(b, TextBlock)]
        calls = [
            {
                "id": b.id,
                "type": "function",
                "function": {
                    "name": b.name,
                    "arguments": json.dumps(thaw_json(b.input), ensure_ascii=False),
                },
            }
            for b in message.content
            if isinstance(b, ToolUseBlock)
        ]
        out: dict[str, Any] = {"role": "assistant"}
        if texts or not calls:  # content may be left out of a turn of tool calls only
            out["content"] = "".join(texts)
        if calls:
            out["tool_calls"] = calls
        if signed and (thinking := thinking_blocks(message.content)):
            out["thinking_blocks"] = thinking
        return [out]
    results = [
        {"role": "tool", "tool_call_id": b.tool_use_id, "content": _result_text(b)}
        for b in message.content
        if isinstance(b, ToolResultBlock)
    ]
    parts = [_part(b) for b in message.content if not isinstance(b, ToolResultBlock)]
    if not parts:
        return results
    if len(parts) == 1 and parts[0]["type"] == "text":
        return [*results, {"role": "user", "content": parts[0]["text"]}]
    return [*results, {"role": "user", "content": parts}]


#: The ``filename`` a PDF without one is sent with (OpenAI's ``file`` part requires one).
DEFAULT_PDF_NAME = "document.pdf"


def _part(block: Any) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, DocumentBlock):
        return _document_part(block)
    if isinstance(block, AudioBlock):
        return _audio_part(block)
    assert isinstance(block, ImageBlock)  # the core checked the capabilities
    source = block.source
    if isinstance(source, Base64Source):
        url = f"data:{source.media_type};base64,{source.data}"
    else:
        url = source.url
    image: dict[str, Any] = {"url": url}
    if block.detail is not None:
        image["detail"] = block.detail
    return {"type": "image_url", "image_url": image}


def _document_part(block: DocumentBlock) -> dict[str, Any]:
    """A PDF as OpenAI's ``file`` part (a data URL; ``filename`` required); a text document
    as a text part framed with its name and type, as oma-openai sends it."""
    source = block.source
    assert isinstance(source, Base64Source)  # the core checked the capabilities
    if source.media_type.startswith("text/"):
        named = f" id={json.dumps(block.filename, ensure_ascii=False)}" if block.filename else ""
        kind = json.dumps(source.media_type)
        text = _utf8_text(source.data)
        framed = f"-----BEGIN FILE{named} type={kind}-----\n{text}\n-----END FILE{named}-----"
        return {"type": "text", "text": framed}
    data_url = f"data:{source.media_type};base64,{source.data}"
    filename = block.filename or DEFAULT_PDF_NAME
    return {"type": "file", "file": {"filename": filename, "file_data": data_url}}


def _utf8_text(data: str) -> str:
    text: str | None = None
    with contextlib.suppress(binascii.Error, UnicodeDecodeError):  # raised below, unchained
        text = base64.b64decode(data, validate=True).decode("utf-8")
    if text is None:
        raise UnsupportedContentBlockError(
            DISPLAY_NAME, "document", "a text document must hold UTF-8 text"
        )
    return text


def _audio_part(block: AudioBlock) -> dict[str, Any]:
    source = block.source
    assert isinstance(source, Base64Source)  # the core checked the capabilities
    audio = {"data": source.data, "format": AUDIO_FORMATS[source.media_type]}
    return {"type": "input_audio", "input_audio": audio}


def _result_text(block: ToolResultBlock) -> str:
    """A tool message has text only and no error flag: an error result says so in its text,
    as the OpenAI plugin's does (else the model reads a failure as the tool's answer)."""
    if isinstance(block.content, str):
        return f"Error: {block.content}" if block.is_error else block.content
    return "".join(p.text for p in block.content if isinstance(p, TextBlock))
