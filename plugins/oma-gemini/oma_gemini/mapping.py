"""oma's messages as a ``generateContent`` body, and Gemini's replies as oma's responses.

The body uses the API's camelCase field names. Base64 media go as ``inlineData`` (video,
documents and audio too; a text document is its UTF-8 bytes) within a per-request limit of
decoded bytes (the API's own inline limit is 100 MB); a URL goes as ``fileData`` with its
media type (the capabilities have already refused URLs Gemini cannot read; a YouTube link goes
without one, as documented). A ``tool_result`` becomes a ``functionResponse``, which Gemini
matches by the function's *name*: one whose ``tool_use`` is not in the conversation is refused
here, before any request. Media a tool returned follow its ``functionResponse`` as
``inlineData`` parts.

Thought signatures (Gemini's opaque tokens on the parts of a thinking model's turn, which it
wants back) ride in ``ReasoningBlock``s: a thought summary becomes a block with its text, a
signature on an ordinary part becomes a block with empty text just before that part's block.

A request's ``output`` goes where the API documents structured output: natively as
``generationConfig.responseMimeType = "application/json"`` with ``responseJsonSchema`` (the
reply's text is the JSON), or as one more function declaration (its JSON Schema as
``parametersJsonSchema``) that ``toolConfig.functionCallingConfig`` forces (mode ``ANY``,
``allowedFunctionNames`` that function only; with tools of the agent's own, mode ``ANY`` alone,
so that the model may call those first).

Gemini documents no number for how large an output schema may be (its structured-output guide
says only that the API "may reject very large or deeply nested schemas"), so none is checked
here. The one number it gives is on ``Tool.functionDeclarations``: at most
``MAX_FUNCTION_DECLARATIONS`` (512, in ``google-genai``'s types); tool mode's output function is
one more, so a request past it is refused locally with ``OutputTypeError``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
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
    Usage,
    VideoBlock,
)
from oma_core.errors import OutputTypeError
from oma_core.http import malformed_response, scrub, tool_result_text
from oma_core.messages import FilePart, thaw_json
from oma_core.toolkit import OutputRequest, ProviderRequest, ProviderResponse

from .capabilities import (
    DEFAULT_INLINE_LIMIT,
    DISPLAY_NAME,
    INLINE_HINT,
    PROVIDER,
    WIRE_MEDIA_TYPE,
    is_youtube,
)
from .thinking import DUMMY_SIGNATURE, add_thinking, needs_signatures

__all__ = [
    "BLOCKED_FINISH_REASONS",
    "DEFAULT_INLINE_LIMIT",
    "MAX_FUNCTION_DECLARATIONS",
    "STOP_REASONS",
    "build_body",
    "read_candidate",
    "read_usage",
]

#: Gemini's ``finishReason`` values that end a turn normally, as oma's ``stop_reason``.
STOP_REASONS = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens"}
#: Finish reasons that withhold the answer: a ``ProviderError``, never a silent success.
BLOCKED_FINISH_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "LANGUAGE",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "OTHER",
        "FINISH_REASON_UNSPECIFIED",
        "NO_IMAGE",
        "IMAGE_OTHER",
    }
)
#: The most function declarations one request takes (``Tool.function_declarations`` in
#: ``google-genai``: "Maximum 512 function declarations can be provided").
MAX_FUNCTION_DECLARATIONS = 512
#: Finish reasons where the model produced a broken call: retrying may well succeed.
_RETRY_FINISH_REASONS = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"})


def build_body(
    request: ProviderRequest, options: Mapping[str, Any], inline_limit: int, model: str
) -> dict[str, Any]:
    """The JSON body of a ``generateContent`` call for ``request`` to ``model``; its
    ``thinking`` goes into ``generationConfig.thinkingConfig`` (``oma_gemini.thinking``)."""
    contents = _contents(request.messages, inline_limit, needs_signatures(model))
    body: dict[str, Any] = {"contents": contents}
    if request.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": request.system_prompt}]}
    declarations = [
        {"name": t.name, "description": t.description, "parameters": dict(t.input_schema)}
        for t in request.tools
    ]
    output = request.output
    if output is not None and output.mode == "tool":
        if len(declarations) >= MAX_FUNCTION_DECLARATIONS:
            raise OutputTypeError(
                output.name,
                f"{DISPLAY_NAME} tool output with {len(declarations)} tools of the agent's own: "
                f"the output function would make {len(declarations) + 1} function declarations, "
                f'and the limit is {MAX_FUNCTION_DECLARATIONS}; set output_mode="native"',
            )
        declarations.append(_output_declaration(output))
    if declarations:
        body["tools"] = [{"functionDeclarations": declarations}]
    config: dict[str, Any] = dict(options.get("generationConfig") or {})
    if output is not None and output.mode == "native":
        config.pop("responseSchema", None)  # the API takes one of the two schemas, not both
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = thaw_json(output.schema)
    if request.temperature is not None:
        config["temperature"] = request.temperature
    if request.max_tokens is not None:
        config["maxOutputTokens"] = request.max_tokens
    if request.stop is not None:
        config["stopSequences"] = list(request.stop)
    add_thinking(config, request.thinking, model, DISPLAY_NAME)
    if config:
        body["generationConfig"] = config
    for key, value in options.items():
        if key != "generationConfig":
            body[key] = value
    if output is not None and output.mode == "tool":
        # the output function only; with tools of the agent's own, any function (the model
        # may call those first)
        forced: dict[str, Any] = {"mode": "ANY"}
        if not request.tools:
            forced["allowedFunctionNames"] = [output.name]
        body["toolConfig"] = {**(body.get("toolConfig") or {}), "functionCallingConfig": forced}
    return body


def _output_declaration(output: OutputRequest) -> dict[str, Any]:
    """The function whose forced call carries the output: its arguments are the output."""
    declaration: dict[str, Any] = {"name": output.name}
    if output.description:
        declaration["description"] = output.description
    declaration["parametersJsonSchema"] = thaw_json(output.schema)
    return declaration


def _contents(
    messages: Iterable[LLMMessage], inline_limit: int, signed_calls: bool
) -> list[dict[str, Any]]:
    """The ``contents``; with ``signed_calls`` (Gemini 3) a model turn whose function calls
    carry no signature gets ``DUMMY_SIGNATURE`` on its first."""
    names: dict[str, str] = {}  # tool_use id -> function name
    budget = _Inline(inline_limit)
    contents = []
    for index, message in enumerate(messages):
        parts: list[dict[str, Any]] = []
        signature: str | None = None
        for block in message.content:
            part = _part(block, names, budget, index)
            if part is None:  # an empty reasoning block: its signature marks the next part
                assert isinstance(block, ReasoningBlock)
                signature = block.signature
                continue
            if signature is not None:
                part[0]["thoughtSignature"] = signature
                signature = None
            parts.extend(part)
        if signature is not None:  # a signature with no part after it: keep it, on its own
            parts.append({"text": "", "thoughtSignature": signature})
        if signed_calls and message.role == "assistant":
            _sign_first_call(parts)
        contents.append(
            {"role": "model" if message.role == "assistant" else "user", "parts": parts}
        )
    return contents


def _sign_first_call(parts: list[dict[str, Any]]) -> None:
    calls = [part for part in parts if "functionCall" in part]
    if calls and not any("thoughtSignature" in part for part in calls):
        calls[0]["thoughtSignature"] = DUMMY_SIGNATURE


def _part(
    block: Any, names: dict[str, str], budget: _Inline, index: int
) -> list[dict[str, Any]] | None:
    if isinstance(block, TextBlock):
        return [{"text": block.text}]
    if isinstance(block, ImageBlock | VideoBlock | DocumentBlock | AudioBlock | FilePart):
        return [_media(block, budget)]
    if isinstance(block, ToolUseBlock):
        names[block.id] = block.name
        return [{"functionCall": {"id": block.id, "name": block.name, "args": block.plain_input()}}]
    if isinstance(block, ToolResultBlock):
        name = names.get(block.tool_use_id)
        if name is None:
            raise UnsupportedContentBlockError(
                DISPLAY_NAME,
                "tool_result",
                f"messages[{index}] answers tool call {block.tool_use_id!r}, which is not in the "
                "conversation: Gemini's functionResponse needs the function's name",
            )
        text = tool_result_text(block)
        key = "error" if block.is_error else "result"
        response = {"id": block.tool_use_id, "name": name, "response": {key: text}}
        media = (
            []
            if isinstance(block.content, str)
            else [_media(p, budget) for p in block.content if not isinstance(p, TextBlock)]
        )
        return [{"functionResponse": response}, *media]
    if isinstance(block, ReasoningBlock):
        if block.provider not in (None, PROVIDER) and (block.signature or block.redacted_data):
            return []  # another service's token: Gemini cannot read it
        if not block.text:
            return None if block.signature else []
        part: dict[str, Any] = {"text": block.text, "thought": True}
        if block.signature:
            part["thoughtSignature"] = block.signature
        return [part]
    raise AssertionError(f"unchecked block {block.type}")  # the capabilities refused it


def _media(
    block: ImageBlock | VideoBlock | DocumentBlock | AudioBlock | FilePart, budget: _Inline
) -> dict[str, Any]:
    source = block.source
    mime = WIRE_MEDIA_TYPE.get(source.media_type, source.media_type)
    if isinstance(source, Base64Source):
        budget.take(len(source.data) * 3 // 4 - source.data[-2:].count("="), block.type)
        return {"inlineData": {"mimeType": mime, "data": source.data}}
    if is_youtube(source.url):  # the documented form: a YouTube link has no MIME type
        return {"fileData": {"fileUri": source.url}}
    return {"fileData": {"mimeType": mime, "fileUri": source.url}}


class _Inline:
    """The decoded bytes of inline media a request has left."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, size: int, block_type: str) -> None:
        self.used += size
        if self.used > self.limit:
            raise UnsupportedContentBlockError(
                DISPLAY_NAME,
                block_type,
                f"the request's inline media ({self.used} decoded bytes so far) exceed the "
                f"inline limit of {self.limit} bytes (provider option inline_limit); "
                f"{INLINE_HINT}",
            )


def read_usage(reply: Mapping[str, Any]) -> Usage:
    """``usageMetadata`` as ``Usage``; thinking tokens count as output (they are billed so).

    ``promptTokenCount`` includes the cached tokens (``cachedContentTokenCount``), as oma's
    ``input_tokens`` does; ``toolUsePromptTokenCount`` (server tools' results, fed back as
    input) is added to it. Gemini reports no cache writes.
    """
    meta = reply.get("usageMetadata") or {}
    thoughts = _count(meta, "thoughtsTokenCount")
    return Usage(
        _count(meta, "promptTokenCount") + _count(meta, "toolUsePromptTokenCount"),
        _count(meta, "candidatesTokenCount") + thoughts,
        cache_read_tokens=_count(meta, "cachedContentTokenCount"),
        reasoning_tokens=thoughts,
    )


def _count(meta: Mapping[str, Any], name: str) -> int:
    return int(meta.get(name) or 0)


def read_candidate(reply: Mapping[str, Any]) -> tuple[list[Any], str | None]:
    """The blocks of a reply's first candidate (in order, text unmerged) and its finish
    reason; a blocked prompt raises ``ProviderError``, an unreadable reply a malformed one."""
    candidates = reply.get("candidates")
    if not candidates:
        feedback = reply.get("promptFeedback") or {}
        if feedback.get("blockReason"):
            raise _blocked(f"the prompt was blocked ({feedback['blockReason']})")
        return [], None
    try:
        candidate = candidates[0]
        parts = (candidate.get("content") or {}).get("parts") or []
        blocks = [b for part in parts for b in _blocks_of(part)]
    except (AttributeError, TypeError, KeyError):
        blocks = None
    if blocks is None:
        raise malformed_response(DISPLAY_NAME, "a candidate has unreadable parts")
    return blocks, candidate.get("finishReason")


def _blocks_of(part: Mapping[str, Any]) -> list[Any]:
    signature = part.get("thoughtSignature")
    if part.get("thought"):
        return [ReasoningBlock(part.get("text") or "", signature=signature, provider=PROVIDER)]
    blocks: list[Any] = (
        [ReasoningBlock("", signature=signature, provider=PROVIDER)] if signature else []
    )
    if "text" in part:
        blocks.append(TextBlock(part["text"]))
    elif "functionCall" in part:
        call = part["functionCall"]
        args = call.get("args") or {}
        call_id = call.get("id") or _call_id(call["name"], args)
        blocks.append(ToolUseBlock(call_id, call["name"], args))
    return blocks


def _call_id(name: str, args: Any) -> str:
    """An id for a call Gemini sent without one: stable, so a stream and a complete agree."""
    digest = hashlib.sha256(json.dumps([name, args], sort_keys=True).encode()).hexdigest()
    return f"call_{digest[:16]}"


def finish(reason: str | None, has_calls: bool) -> str:
    """oma's ``stop_reason`` for Gemini's ``finishReason``; raises for a withheld answer, and
    for none at all (a reply cut short or garbled: retryable)."""
    if reason is None:
        raise malformed_response(DISPLAY_NAME, "the reply has no candidate with a finishReason")
    if reason in _RETRY_FINISH_REASONS:
        raise ProviderError(
            f"{DISPLAY_NAME} stopped: the model produced a malformed tool call ({reason})",
            provider=DISPLAY_NAME,
            retryable=True,
        )
    if reason in BLOCKED_FINISH_REASONS or reason not in STOP_REASONS:
        raise _blocked(f"the answer was withheld (finishReason {scrub(str(reason))})")
    if has_calls and reason == "STOP":
        return "tool_use"
    return STOP_REASONS[reason]


def _blocked(what: str) -> ProviderError:
    return ProviderError(f"{DISPLAY_NAME}: {what}", provider=DISPLAY_NAME, retryable=False)


def merge_text(blocks: Iterable[Any]) -> tuple[Any, ...]:
    """Adjacent text blocks joined (a stream sends one per event; a reply may split too)."""
    merged: list[Any] = []
    for block in blocks:
        if isinstance(block, TextBlock) and merged and isinstance(merged[-1], TextBlock):
            merged[-1] = TextBlock(merged[-1].text + block.text)
        elif (
            isinstance(block, ReasoningBlock)
            and block.text
            and merged
            and isinstance(merged[-1], ReasoningBlock)
            and merged[-1].text
            and not merged[-1].signature
        ):
            merged[-1] = ReasoningBlock(
                merged[-1].text + block.text, signature=block.signature, provider=PROVIDER
            )
        else:
            merged.append(block)
    text_blocks = [b for b in merged if not (isinstance(b, TextBlock) and not b.text)]
    return tuple(text_blocks) or (TextBlock(""),)


def response_of(
    blocks: list[Any], reason: str | None, usage: Usage, model: str | None
) -> ProviderResponse:
    content = _unique_call_ids(merge_text(blocks))
    calls = any(isinstance(b, ToolUseBlock) for b in content)
    return ProviderResponse(LLMMessage("assistant", content), usage, finish(reason, calls), model)


def _unique_call_ids(blocks: tuple[Any, ...]) -> tuple[Any, ...]:
    """The turn with every tool-call id unique: two identical calls Gemini sent without ids
    get the same derived id, so a repeat gets its position appended (stable in a stream and a
    complete alike, which see the same calls in the same order)."""
    seen: set[str] = set()
    unique = []
    for index, block in enumerate(blocks):
        if isinstance(block, ToolUseBlock) and block.id in seen:
            block = ToolUseBlock(f"{block.id}_{index}", block.name, block.input)
        if isinstance(block, ToolUseBlock):
            seen.add(block.id)
        unique.append(block)
    return tuple(unique)
