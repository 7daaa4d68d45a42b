"""oma provider plugin ``mistral``: Mistral's chat completions API, on ``oma_core.toolkit``.

Text, images in user turns (URL or base64, in the plain-string ``image_url`` form), PDF
documents by URL (``document_url``), audio as base64 (``input_audio``, for Mistral's audio
models), tools, reasoning (``thinking`` chunks; ``AgentConfig.thinking`` as
``reasoning_effort``, ``oma_mistral.thinking``) and streaming; video, base64 documents and audio
URLs are refused locally. Structured output natively (``response_format``
``json_schema``) or by a forced tool call (``tool_choice`` naming one more function). The
toolkit imports httpx on first use, so loading the plugin does not. See
``docs/providers/mistral.md``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from oma_core import (
    AudioBlock,
    Base64Source,
    Capabilities,
    DocumentBlock,
    ImageBlock,
    LLMMessage,
    ProviderSpec,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UrlSource,
    Usage,
    hookimpl,
)
from oma_core.http import (
    CLIENT_OPTIONS,
    LoopLocalClient,
    ToolCallAssembler,
    assistant_response,
    chat_tools,
    chat_usage,
    event_json,
    malformed_response,
    media_url,
    missing_api_key,
    post_json,
    request_secrets,
    stream_sse,
    tool_call_events,
    tool_result_text,
)
from oma_core.messages import thaw_json
from oma_core.toolkit import (
    CLIENT_OPTION_TYPES,
    BlockSupport,
    MediaLimit,
    OutputRequest,
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
)

from .thinking import MODEL_RULES, add_thinking, split_content, thinking_chunk

__version__ = "0.1.0"  # the distribution's version (hatch reads it here)

__all__ = ["CAPABILITIES", "DISPLAY_NAME", "SPEC", "MistralProvider", "wire_id"]

DISPLAY_NAME = "Mistral"
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("image", frozenset({"user"}), media_types=_IMAGE_TYPES),
        # Mistral's document understanding reads a PDF by URL (it OCRs it); the chat wire
        # documents no base64 form for it
        BlockSupport(
            "document", frozenset({"user"}), frozenset({"url"}), frozenset({"application/pdf"})
        ),
        # Mistral's audio models (Voxtral) take base64 audio; the wire carries no media type,
        # the service reads the container itself
        BlockSupport("audio", frozenset({"user"}), frozenset({"base64"})),
        BlockSupport("tool_use", frozenset({"assistant"})),
        BlockSupport("tool_result", frozenset({"user"})),
        BlockSupport("reasoning", frozenset({"assistant"})),  # thinking chunks
    ),
    limits=(MediaLimit(10_000_000, {"image"}),),  # Mistral's vision docs: 10 MB per image
    output_modes=frozenset({"native", "tool", "prompted"}),
    # AgentConfig.thinking as reasoning_effort, per model family (thinking.py)
    thinking=True,
    models=MODEL_RULES,
)
#: The provider's registered name: what its reasoning blocks' ``provider`` says.
PROVIDER = "mistral"
#: The chat completions body fields Mistral documents that oma does not fill itself, with
#: their types in Mistral's API reference (the ``ChatCompletionRequest`` schema of its OpenAPI
#: spec, read on 2026-12-02); each is forwarded as given. A number field takes an int too.
BODY_OPTIONS: dict[str, type | tuple[type, ...]] = {
    **{"temperature": float, "top_p": float, "max_tokens": int, "stop": (str, list)},
    **{"random_seed": int, "metadata": dict, "response_format": dict, "n": int},
    **{"tool_choice": (str, dict), "presence_penalty": float, "frequency_penalty": float},
    **{"prediction": dict, "parallel_tool_calls": bool, "prompt_mode": str},
    "reasoning_effort": str,
    "safe_prompt": bool,
}
_OPTIONS: dict[str, type | tuple[type, ...]] = {**CLIENT_OPTION_TYPES, **BODY_OPTIONS}
_ID = re.compile(r"[A-Za-z0-9]{9}")


def wire_id(call_id: str) -> str:
    """``call_id`` as Mistral takes it (nine letters and digits): itself, or a stable digest."""
    return call_id if _ID.fullmatch(call_id) else hashlib.sha256(call_id.encode()).hexdigest()[:9]


class MistralProvider:
    """Sends ``ProviderRequest``s to ``{base_url}/chat/completions`` (Bearer auth)."""

    name = "mistral"
    display_name = DISPLAY_NAME

    def __init__(self, settings: ProviderSettings) -> None:
        self._key = settings.api_key or os.environ.get("MISTRAL_API_KEY")
        self._url = (settings.base_url or "https://api.mistral.ai/v1").rstrip("/")
        self._url += "/chat/completions"
        self._options = {k: v for k, v in settings.options.items() if k not in CLIENT_OPTIONS}
        auth = {"authorization": f"Bearer {self._key}"} if self._key else {}
        self._clients = LoopLocalClient.from_options(
            settings.options, headers=auth, provider=DISPLAY_NAME
        )

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        system = [{"role": "system", "content": request.system_prompt}]
        messages = system if request.system_prompt else []
        names: dict[str, str] = {}  # tool_use id -> function name, for the tool messages
        for message in request.messages:
            messages.extend(_messages(message, names))
        body: dict[str, Any] = {"model": request.model or SPEC.default_model, "messages": messages}
        for key in ("temperature", "max_tokens", "stop"):
            if (value := getattr(request, key)) is not None:
                body[key] = list(value) if key == "stop" else value
        if request.tools:
            body["tools"] = chat_tools(request.tools)
        body = {**body, **self._options, **request.options}
        add_thinking(body, request.thinking, body["model"], DISPLAY_NAME)
        if request.output is not None:  # the output asked for wins over a response_format option
            body.update(_output_fields(request.output, body.get("tools") or []))
        return body

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        body, secrets = self.render(request), self._secrets(request)
        reply = await post_json(
            self._client(), self._url, body, provider=DISPLAY_NAME, secrets=secrets
        )
        calls = ToolCallAssembler(DISPLAY_NAME)
        try:
            choice = reply["choices"][0]
            for i, call in enumerate(choice["message"].get("tool_calls") or ()):
                calls.feed_chat(call, index=i)
            thought, text = split_content(choice["message"].get("content"))
        except (KeyError, IndexError, TypeError, AttributeError):
            text = None
        if text is None:  # raised here, not in the except: nothing chained to the reply
            raise malformed_response(DISPLAY_NAME, "the reply has no readable choice")
        return _with_reasoning(thought, assistant_response(
            text, calls.finish(), chat_usage(reply), _stop(choice.get("finish_reason")),
            reply.get("model"),
        ))  # fmt: skip

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        body, secrets = {**self.render(request), "stream": True}, self._secrets(request)
        text, calls, usage, reason, model = [], ToolCallAssembler(DISPLAY_NAME), Usage(), None, None
        thoughts: list[str] = []
        events = stream_sse(self._client(), self._url, body, provider=DISPLAY_NAME, secrets=secrets)
        async with aclosing(events):
            async for event in events:
                if event.data.strip() == "[DONE]":
                    break
                chunk = event_json(event, provider=DISPLAY_NAME, secrets=secrets)
                model, usage = chunk.get("model") or model, chat_usage(chunk) or usage
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    thought, piece = split_content(delta.get("content"))
                    if thought:
                        thoughts.append(thought)
                        yield ReasoningDelta(thought)
                    if piece:
                        text.append(piece)
                        yield TextDelta(piece)
                    for call in delta.get("tool_calls") or ():
                        if arguments := calls.feed_chat(call):  # a piece of its arguments
                            yield arguments
                    reason = choice.get("finish_reason") or reason
        if reason is None:  # cut short: the same request may well succeed when sent again
            raise malformed_response(DISPLAY_NAME, "the stream ended before a finish_reason")
        response = assistant_response("".join(text), calls.finish(), usage, _stop(reason), model)
        response = _with_reasoning("".join(thoughts), response)
        for call_event in tool_call_events(response):
            yield call_event
        yield ResponseComplete(response)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def _client(self) -> Any:
        if not self._key:
            raise missing_api_key(DISPLAY_NAME, "MISTRAL_API_KEY")
        return self._clients.get()

    def _secrets(self, request: ProviderRequest) -> tuple[str, ...]:
        """The key and the request's text and media: none may show in an error."""
        return request_secrets(request, self._key)


def _output_fields(output: OutputRequest, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The body fields that hold a reply to ``output``: ``response_format`` ``json_schema``
    (native), or the tools plus one function that ``tool_choice`` forces (tool)."""
    schema = thaw_json(output.schema)
    if output.mode == "native":
        spec: dict[str, Any] = {"name": output.name, "schema": schema, "strict": output.strict}
        if output.description:
            spec["description"] = output.description
        return {"response_format": {"type": "json_schema", "json_schema": spec}}
    function = {"name": output.name, "description": output.description or "", "parameters": schema}
    # the output function; with tools of the agent's own, any tool (they may be called first)
    forced = {"type": "function", "function": {"name": output.name}}
    return {
        "tools": [*tools, {"type": "function", "function": function}],
        "tool_choice": "any" if tools else forced,
    }


def _with_reasoning(thought: str, response: ProviderResponse) -> ProviderResponse:
    """``response`` with the turn's thinking, if any, as its first block."""
    if not thought:
        return response
    blocks = (ReasoningBlock(thought, provider=PROVIDER), *response.message.content)
    message = LLMMessage("assistant", blocks)
    return ProviderResponse(message, response.usage, response.stop_reason, response.model)


def _messages(message: LLMMessage, names: dict[str, str]) -> list[dict[str, Any]]:
    """One oma message as Mistral messages: its tool results become ``tool`` messages."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ReasoningBlock):
            if block.text and block.provider in (None, PROVIDER):  # another's stays out
                parts.append(thinking_chunk(block.text))
        elif isinstance(block, ImageBlock):
            parts.append({"type": "image_url", "image_url": media_url(block.source)})
        elif isinstance(block, DocumentBlock):
            parts.append(_document_chunk(block))
        elif isinstance(block, AudioBlock):
            assert isinstance(block.source, Base64Source)  # the capabilities: base64 only
            parts.append({"type": "input_audio", "input_audio": block.source.data})
        elif isinstance(block, ToolUseBlock):
            names[block.id] = block.name
            arguments = json.dumps(block.plain_input(), ensure_ascii=False)
            function = {"name": block.name, "arguments": arguments}
            calls.append({"id": wire_id(block.id), "type": "function", "function": function})
        elif isinstance(block, ToolResultBlock):
            text = tool_result_text(block)
            text = f"Error: {text}" if block.is_error else text
            call_id, name = wire_id(block.tool_use_id), names.get(block.tool_use_id, "")
            out.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": text})
    if message.role == "assistant":
        thinks = any(p["type"] == "thinking" for p in parts)
        content = parts if thinks else "".join(p["text"] for p in parts)
        assistant = {"role": "assistant", "content": content}
        out.append(assistant | ({"tool_calls": calls} if calls else {}))
    elif parts:
        plain = len(parts) == 1 and parts[0]["type"] == "text"
        out.append({"role": "user", "content": parts[0]["text"] if plain else parts})
    return out


def _document_chunk(block: DocumentBlock) -> dict[str, Any]:
    """A ``document_url`` chunk, named after the block's file name when it has one."""
    assert isinstance(block.source, UrlSource)  # the capabilities: by URL only
    chunk: dict[str, Any] = {"type": "document_url", "document_url": block.source.url}
    if block.filename:
        chunk["document_name"] = block.filename
    return chunk


SPEC = ProviderSpec(
    name="mistral",
    display_name=DISPLAY_NAME,
    factory=MistralProvider,
    capabilities=CAPABILITIES,
    description=(
        "Mistral chat completions over httpx (text, images, PDF URLs, audio, tools, streaming)."
    ),
    default_model="mistral-medium-latest",
    # from Mistral's models overview (its API endpoints), read on 2026-12-02
    known_models=(
        *("mistral-medium-latest", "mistral-large-latest", "mistral-small-latest"),
        *("magistral-medium-latest", "pixtral-large-latest", "codestral-latest"),
    ),
    default_base_url="https://api.mistral.ai/v1",
    api_key_env="MISTRAL_API_KEY",
    shared=True,  # one httpx client per event loop serves concurrent runs
    requires_api_key=True,
    provider_options=_OPTIONS,
)


@hookimpl
def oma_register_providers() -> list[ProviderSpec]:
    return [SPEC]


#: Mistral's ``finish_reason`` -> oma's stop reason (others are kept as they are).
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "model_length": "max_tokens",
                "tool_calls": "tool_use"}  # fmt: skip


def _stop(reason: Any) -> str | None:
    return None if reason is None else STOP_REASONS.get(str(reason), str(reason))
