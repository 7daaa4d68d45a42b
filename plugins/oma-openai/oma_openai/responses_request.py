"""oma messages -> the body of one ``POST /responses`` (OpenAI's Responses API).

Pure functions, no SDK: ``responses_body`` builds the exact dict the provider hands to the SDK
(and ``render`` returns). Written from the installed ``openai`` SDK's
``ResponseCreateParams`` and ``ResponseInputItemParam`` types and the API reference (read on
2026-12-06): the system prompt is ``instructions``; a user turn is a ``message`` of
``input_text`` / ``input_image`` / ``input_file`` / ``input_audio`` parts; an assistant turn is
its items in order: reasoning items (replayed from the block's signature), ``message`` items
and ``function_call`` items; a tool result is a ``function_call_output`` whose ``output`` is
its text, or a list of parts when it holds media.

Reasoning items pair with the item that followed them: an item id (``fc_...``, ``msg_...``) is
sent only beside the reasoning item it followed, so a reasoning item is never sent without its
following item, nor a following item without its reasoning item (the service's 400s).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
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
from oma_core.messages import CachePoint, FilePart, thaw_json
from oma_core.toolkit import OutputRequest, ProviderRequest

from .caching import BREAKPOINT, Anchor, add_cache_key, place_breakpoints, wants_breakpoints
from .convert import CLIENT_OPTIONS, data_url, strict_for, text_document, tool_input
from .model_rules import effort_for, leave_out_sampling, reasons
from .presets import AUDIO_FORMATS, Preset

__all__ = ["encode_reasoning", "decode_reasoning", "responses_body"]

_log = logging.getLogger("oma.openai")

#: Body fields the plugin owns; options cannot replace them.
_OWN_FIELDS = frozenset({"model", "input", "stream", "instructions", "api"})
#: Chat Completions' names of fields the Responses API names otherwise (an option given by
#: its Chat Completions name is sent by its Responses name).
_RENAMED = {"max_completion_tokens": "max_output_tokens", "max_tokens": "max_output_tokens"}
#: Chat Completions options the Responses API does not take (left out, with a warning).
_CHAT_ONLY = frozenset(
    {"stop", "n", "seed", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs",
     "modalities", "audio", "prediction", "web_search_options", "response_format",
     "stream_options", "reasoning_effort", "verbosity"}
)  # fmt: skip
#: What the signature of a reasoning block made by this plugin starts with.
_SIGNATURE_MARK = '{"openai_reasoning_item":'


def responses_body(
    request: ProviderRequest,
    preset: Preset,
    *,
    stream: bool,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one ``POST /responses`` for ``request``.

    ``model`` comes first and ``stream`` second, the order the SDK writes its own fields in,
    so ``json.dumps`` of this dict is the request body byte for byte. ``store`` is false (oma
    keeps the conversation) and, for a model that may reason, ``include`` asks for each
    reasoning item's ``encrypted_content``, so the items can be sent back.
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
    if request.system_prompt:
        body["instructions"] = request.system_prompt
    cached = wants_breakpoints(request, preset.capabilities.caching, model)
    anchors: list[Anchor] | None = [] if cached else None
    body["input"] = list(_input(request.messages, preset, anchors))
    if request.max_tokens is not None:
        body["max_output_tokens"] = request.max_tokens
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.stop is not None:  # leaving them out would change the reply: refused
        raise ProviderError(
            f"{preset.display_name}: the Responses API takes no stop sequences; "
            'provider_options["api"] = "chat" sends them',
            provider=preset.display_name,
            retryable=False,
        )
    body["store"] = False
    if reasons(model):
        body["include"] = ["reasoning.encrypted_content"]
    if request.tools:
        body["tools"] = [_tool(t.name, t.description, t.input_schema) for t in request.tools]
    if request.output is not None:
        _add_output(body, request.output, preset)
    _add_options(body, request, preset, options)
    effort = effort_for(request.thinking, model, preset.display_name)
    if effort is not None:
        reasoning = dict(body.get("reasoning") or {})
        reasoning["effort"] = effort
        if effort not in ("none", "minimal"):
            reasoning.setdefault("summary", "auto")  # the summary streams as reasoning
        body["reasoning"] = reasoning
    leave_out_sampling(body, model, (body.get("reasoning") or {}).get("effort"), preset.name)
    if anchors is not None:
        _add_breakpoints(body, anchors, request.cache == "auto")
    add_cache_key(body, request, preset.capabilities.caching, model)
    return body


def _add_breakpoints(body: dict[str, Any], anchors: list[Anchor], auto: bool) -> None:
    """The Responses API's breakpoints (``caching``): on the content parts of user messages
    and tool outputs; the system prompt's, as ``instructions`` is a plain string, moves it to
    the first input item, a ``system`` message whose one part holds it."""
    items = body["input"]
    latest = None
    for item in reversed(items):
        if item.get("role") == "user":
            latest = (item, "content", -1)
        elif item.get("type") == "function_call_output":
            latest = (item, "output", -1)
        else:
            continue
        break
    system = "instructions" in body
    anchors = [a for a in anchors if a is not None or system]
    kept = place_breakpoints(
        body, anchors, latest, auto=auto, system=system, text_type="input_text"
    )
    if system and None in kept:
        text = body.pop("instructions")
        part = {"type": "input_text", "text": text, "prompt_cache_breakpoint": dict(BREAKPOINT)}
        items.insert(0, {"role": "system", "content": [part]})


def _add_options(
    body: dict[str, Any],
    request: ProviderRequest,
    preset: Preset,
    options: Mapping[str, Any] | None,
) -> None:
    """``provider_options`` and the request's options as body fields; the portable settings
    and the output's wire win over them."""
    portable = set()
    if request.max_tokens is not None:
        portable.add("max_output_tokens")
    if request.temperature is not None:
        portable.add("temperature")
    if request.output is not None:
        portable.update(("text", "tool_choice"))
    for extra in (options, request.options):
        for key, value in (extra or {}).items():
            if key in CLIENT_OPTIONS or key in _OWN_FIELDS:
                continue
            if key in _CHAT_ONLY:
                _log.warning(
                    "%s: %r is a Chat Completions option; the Responses API does not take it "
                    '(provider_options["api"] = "chat" sends it)',
                    preset.name,
                    key,
                )
                continue
            key = _RENAMED.get(key, key)
            if key not in portable:
                body[key] = thaw_json(value)


def _tool(name: str, description: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A function tool; ``strict: false``, as an agent's schemas need not follow strict mode
    (the Responses API makes functions strict unless told otherwise)."""
    tool: dict[str, Any] = {"type": "function", "name": name}
    if description:
        tool["description"] = description
    tool["parameters"] = thaw_json(schema)
    tool["strict"] = False
    return tool


def _add_output(body: dict[str, Any], output: OutputRequest, preset: Preset) -> None:
    """Native: ``text.format`` ``json_schema``; tool: one more function, forced by
    ``tool_choice`` (``required`` when the agent has tools of its own)."""
    strict = output.strict and (
        preset.strict_output if output.mode == "native" else preset.strict_tools
    )
    schema = strict_for(output, preset) if strict else thaw_json(output.schema)
    if output.mode == "native":
        spec: dict[str, Any] = {"type": "json_schema", "name": output.name}
        if output.description:
            spec["description"] = output.description
        spec["schema"] = schema
        spec["strict"] = strict
        body["text"] = {"format": spec}
        return
    tool: dict[str, Any] = {"type": "function", "name": output.name}
    if output.description:
        tool["description"] = output.description
    tool["parameters"] = schema
    tool["strict"] = strict
    own_tools = bool(body.get("tools"))
    body["tools"] = [*body.get("tools", []), tool]
    body["tool_choice"] = "required" if own_tools else {"type": "function", "name": output.name}


# --------------------------------------------------------------------------- input items


def _input(
    messages: tuple[LLMMessage, ...], preset: Preset, anchors: list[Anchor] | None = None
) -> Iterator[dict[str, Any]]:
    """The input items; with ``anchors``, where each ``CachePoint`` puts its breakpoint is
    added to it (the part before it, in its message or an earlier user message or tool
    output; None: the system prompt; with neither before it, it is left out)."""
    last: list[Anchor] = [None]  # the system prompt, if any (the caller knows)
    for message in messages:
        if message.role == "assistant":
            yield from _assistant(message, preset)
        else:
            yield from _user(message, preset, anchors, last)


def _user(
    message: LLMMessage,
    preset: Preset,
    anchors: list[Anchor] | None = None,
    last: list[Anchor] | None = None,
) -> Iterator[dict[str, Any]]:
    """Tool results first (each a ``function_call_output``), then one user message with the
    turn's other blocks. ``last`` holds the last part a breakpoint can go on."""
    parts: list[dict[str, Any]] = []
    user: dict[str, Any] = {"role": "user", "content": parts}
    last = [] if last is None else last
    for block in message.content:
        if isinstance(block, CachePoint):
            if anchors is not None and last:
                anchors.append(last[-1])
            continue
        if isinstance(block, ToolResultBlock):
            output = _tool_output(block, preset)
            last.append((output, "output", -1))
            yield output
            continue
        if isinstance(block, TextBlock):
            parts.append({"type": "input_text", "text": block.text})
        else:
            parts.append(_media(block, preset))
        last.append((user, "content", len(parts) - 1))
    if parts:
        yield user


def _tool_output(block: ToolResultBlock, preset: Preset) -> dict[str, Any]:
    """A ``function_call_output``: the text (``"Error: ..."`` for an error: the item has no
    error flag), or a list of ``input_text`` / ``input_image`` / ``input_file`` parts."""
    output: str | list[dict[str, Any]]
    if isinstance(block.content, str):
        output = f"Error: {block.content}" if block.is_error else block.content
    else:
        output = [
            {"type": "input_text", "text": p.text}
            if isinstance(p, TextBlock)
            else _media(p, preset)
            for p in block.content
        ]
        if block.is_error:
            output.insert(0, {"type": "input_text", "text": "Error:"})
    return {"type": "function_call_output", "call_id": block.tool_use_id, "output": output}


def _media(block: object, preset: Preset) -> dict[str, Any]:
    if isinstance(block, ImageBlock):
        return {"type": "input_image", "image_url": data_url(block.source),
                "detail": block.detail or "auto"}  # fmt: skip
    if isinstance(block, DocumentBlock | FilePart):
        return _file(block, preset)
    if isinstance(block, AudioBlock):
        source = block.source
        audio_format = AUDIO_FORMATS.get(source.media_type)
        if not isinstance(source, Base64Source) or audio_format is None:
            raise _refused(preset, "audio", "input_audio takes base64 wav or mp3 only")
        return {"type": "input_audio", "input_audio": {"data": source.data, "format": audio_format}}
    if isinstance(block, VideoBlock):
        raise _refused(preset, "video", "the Responses API has no video input")
    kind = getattr(block, "type", type(block).__name__)
    raise _refused(preset, str(kind), "not supported in a user message")


def _file(block: DocumentBlock | FilePart, preset: Preset) -> dict[str, Any]:
    """An ``input_file``: a PDF as a data URL (``file_data``, with its name) or by URL
    (``file_url``); a text document as framed text, as on Chat Completions."""
    source = block.source
    if isinstance(block, DocumentBlock) and source.media_type.startswith("text/"):
        return {"type": "input_text", "text": text_document(block, preset)}
    if isinstance(source, Base64Source):
        filename = block.filename or "document.pdf"
        return {"type": "input_file", "filename": filename, "file_data": data_url(source)}
    return {"type": "input_file", "file_url": source.url}


def _assistant(message: LLMMessage, preset: Preset) -> Iterator[dict[str, Any]]:
    """The turn's items in order. A reasoning item this API issued is replayed as it came,
    and the ids of the items that followed it go with them; other reasoning is left out (its
    text is not an item the service can take back)."""
    followers: dict[str, str] = {}
    texts: list[str] = []
    for block in message.content:
        if isinstance(block, ReasoningBlock):
            item = _reasoning_item(block, preset)
            if item is None:
                continue
            followers = dict(item.pop("followers", {}))
            texts = list(item.pop("messages", []))
            yield item
        elif isinstance(block, TextBlock):
            yield _assistant_text(block.text, texts.pop(0) if texts else None)
        elif isinstance(block, ToolUseBlock):
            call: dict[str, Any] = {"type": "function_call"}
            if block.id in followers:
                call["id"] = followers[block.id]
            call.update(call_id=block.id, name=block.name, arguments=tool_input(block.input))
            yield call
        else:
            raise _refused(preset, block.type, "not supported in an assistant message")


def _assistant_text(text: str, item_id: str | None) -> dict[str, Any]:
    if item_id is None:
        return {"role": "assistant", "content": text}
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _reasoning_item(block: ReasoningBlock, preset: Preset) -> dict[str, Any] | None:
    """The reasoning item ``block`` holds, or None when it holds none this preset issued."""
    if block.provider == preset.name and block.signature is not None:
        item = decode_reasoning(block.signature)
        if item is None:
            raise _refused(preset, "reasoning", "its signature is not a Responses reasoning item")
        return item
    if block.provider is None and (block.signature is not None or block.redacted_data):
        raise _refused(
            preset, "reasoning", "signed reasoning of unknown origin cannot be sent back"
        )
    _log.debug("%s: reasoning text of %s left out (not a reasoning item)", preset.name,
               block.provider or "an unknown provider")  # fmt: skip
    return None


def _refused(preset: Preset, block_type: str, detail: str) -> UnsupportedContentBlockError:
    return UnsupportedContentBlockError(preset.display_name, block_type, detail)


# --------------------------------------------------------------------------- reasoning items


def encode_reasoning(
    item: Mapping[str, Any], followers: Mapping[str, str], messages: list[str]
) -> str:
    """A ``ReasoningBlock.signature`` holding a reasoning item (``id``, ``summary``,
    ``encrypted_content``) as the service sent it, and the ids of the items that followed it:
    ``followers`` by the call id of each ``function_call``, ``messages`` in order."""
    payload = {"openai_reasoning_item": dict(item), "followers": dict(followers),
               "messages": messages}  # fmt: skip
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def decode_reasoning(signature: str) -> dict[str, Any] | None:
    """The reasoning item of a signature ``encode_reasoning`` made (with ``followers`` and
    ``messages`` beside its fields), or None for any other string."""
    if not signature.startswith(_SIGNATURE_MARK):
        return None
    try:
        payload = json.loads(signature)
    except ValueError:
        return None
    item = payload.get("openai_reasoning_item")
    followers = payload.get("followers")
    messages = payload.get("messages")
    if not isinstance(item, dict) or not isinstance(item.get("id"), str):
        return None
    if not isinstance(followers, dict) or not isinstance(messages, list):
        return None
    return {**item, "followers": followers, "messages": messages}
