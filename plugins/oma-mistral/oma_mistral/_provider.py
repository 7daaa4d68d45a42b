"""The Mistral provider: oma's provider interface over ``POST {base_url}/chat/completions``.

Images go in the documented plain-string ``image_url`` form (a URL or a base64 data URL).
Mistral takes tool call ids of exactly nine letters and digits; any other id is sent as a
stable nine-character digest of it, on the call and on its result alike.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from oma_core.toolkit import (
    Base64Source,
    HttpTimeouts,
    ImageBlock,
    LLMMessage,
    LoopLocalClient,
    ProviderError,
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    TextBlock,
    TextDelta,
    ToolCall,
    ToolCallAssembler,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    error_fields,
    malformed_response,
    post_json,
    scrub,
    stream_sse,
)

from . import DISPLAY_NAME, SPEC

_ID = re.compile(r"[A-Za-z0-9]{9}")
_CLIENT_OPTIONS = ("timeout", "headers")


def wire_id(call_id: str) -> str:
    """``call_id`` as Mistral accepts it: itself when valid, else a stable digest."""
    return call_id if _ID.fullmatch(call_id) else hashlib.sha256(call_id.encode()).hexdigest()[:9]


class MistralProvider:
    """See ``docs/providers/mistral.md``."""

    name = "mistral"
    display_name = DISPLAY_NAME

    def __init__(self, settings: ProviderSettings) -> None:
        self._key = settings.api_key or os.environ.get("MISTRAL_API_KEY")
        self._url = (settings.base_url or SPEC.default_base_url or "").rstrip("/")
        self._options = {k: v for k, v in settings.options.items() if k not in _CLIENT_OPTIONS}
        timeout = settings.options.get("timeout")
        auth = {"authorization": f"Bearer {self._key}"} if self._key else {}
        self._clients = LoopLocalClient(
            headers={**dict(settings.options.get("headers") or {}), **auth},
            timeouts=HttpTimeouts(read=float(timeout)) if timeout else None,
        )

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        names: dict[str, str] = {}
        for message in request.messages:
            messages.extend(_messages(message, names))
        body: dict[str, Any] = {"model": request.model or SPEC.default_model, "messages": messages}
        for key in ("temperature", "max_tokens", "stop"):
            value = getattr(request, key)
            if value is not None:
                body[key] = list(value) if key == "stop" else value
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.input_schema),
                    },
                }
                for t in request.tools
            ]
        return {**body, **self._options, **request.options}

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        body = self.render(request)
        reply = await post_json(
            self._client(),
            f"{self._url}/chat/completions",
            body,
            provider=DISPLAY_NAME,
            secrets=self._secrets(),
        )
        calls = ToolCallAssembler(DISPLAY_NAME)
        try:
            choice = reply["choices"][0]
            message = choice["message"]
            for i, call in enumerate(message.get("tool_calls") or ()):
                function = call["function"]
                calls.feed(
                    i, id=call.get("id"), name=function["name"], arguments=function.get("arguments")
                )
            text, reason = _text(message.get("content")), choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError):
            text = None
        if text is None:  # raised here, not in the except: no chained reply
            raise malformed_response(DISPLAY_NAME, "the reply has no readable choice")
        return _response(text, calls.finish(), _usage(reply), reason, reply.get("model"))

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        body = {**self.render(request), "stream": True}
        text: list[str] = []
        calls = ToolCallAssembler(DISPLAY_NAME)
        usage, reason, model = Usage(), None, None
        events = stream_sse(
            self._client(),
            f"{self._url}/chat/completions",
            body,
            provider=DISPLAY_NAME,
            secrets=self._secrets(),
        )
        async with aclosing(events):
            async for event in events:
                if event.data.strip() == "[DONE]":
                    break
                chunk = _chunk(event.data)
                model = chunk.get("model") or model
                if chunk.get("usage"):
                    usage = _usage(chunk)
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    piece = _text(delta.get("content"))
                    if piece:
                        text.append(piece)
                        yield TextDelta(piece)
                    for call in delta.get("tool_calls") or ():
                        function = call.get("function") or {}
                        calls.feed(
                            call.get("index", 0),
                            id=call.get("id"),
                            name=function.get("name"),
                            arguments=function.get("arguments"),
                        )
                    reason = choice.get("finish_reason") or reason
        if reason is None:  # cut short: the same request may well succeed when sent again
            raise malformed_response(DISPLAY_NAME, "the stream ended before a finish_reason")
        response = _response("".join(text), calls.finish(), usage, reason, model)
        for block in response.message.content:
            if isinstance(block, ToolUseBlock):
                yield ToolCall(block)
        yield ResponseComplete(response)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def _client(self) -> Any:
        if not self._key:
            raise ProviderError(
                f"{DISPLAY_NAME} needs an API key: set AgentConfig.api_key or MISTRAL_API_KEY",
                provider=DISPLAY_NAME,
                retryable=False,
            )
        return self._clients.get()

    def _secrets(self) -> tuple[str, ...]:
        return (self._key,) if self._key else ()


def _messages(message: LLMMessage, names: dict[str, str]) -> list[dict[str, Any]]:
    """One oma message as Mistral messages: tool results become ``tool`` messages first."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageBlock):
            source = block.source
            url = (
                f"data:{source.media_type};base64,{source.data}"
                if isinstance(source, Base64Source)
                else source.url
            )
            parts.append({"type": "image_url", "image_url": url})
        elif isinstance(block, ToolUseBlock):
            names[block.id] = block.name
            calls.append(
                {
                    "id": wire_id(block.id),
                    "type": "function",
                    "function": {
                        "name": block.name,
                        "arguments": json.dumps(block.plain_input(), ensure_ascii=False),
                    },
                }
            )
        elif isinstance(block, ToolResultBlock):
            content = (
                block.content
                if isinstance(block.content, str)
                else "\n".join(p.text for p in block.content if isinstance(p, TextBlock))
            )
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": wire_id(block.tool_use_id),
                    "name": names.get(block.tool_use_id, ""),
                    "content": f"Error: {content}" if block.is_error else content,
                }
            )
    if message.role == "assistant":
        text = "".join(p["text"] for p in parts)
        out.append(
            {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}
        )
    elif parts:
        only_text = all(p["type"] == "text" for p in parts) and len(parts) == 1
        out.append({"role": "user", "content": parts[0]["text"] if only_text else parts})
    return out


def _text(content: Any) -> str:
    """A message's content: a string, or chunks of which the ``text`` ones count."""
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if c.get("type") == "text")
    return content or ""


def _chunk(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError:
        chunk = None
    if not isinstance(chunk, dict):
        raise malformed_response(DISPLAY_NAME, "a stream event is not a JSON object")
    if chunk.get("object") == "error" or "error" in chunk:  # an error inside a 200 stream
        kind, message = error_fields(chunk)
        error = chunk.get("error", chunk)
        code = error.get("code") if isinstance(error, dict) else None
        status = code if isinstance(code, int) and 400 <= code < 600 else None
        raise ProviderError(
            f"{DISPLAY_NAME} stream failed ({kind}): {scrub(message or '')}",
            status_code=status,
            provider=DISPLAY_NAME,
            retryable=None if status else True,
        )
    return chunk


def _usage(reply: dict[str, Any]) -> Usage:
    usage = reply.get("usage") or {}
    return Usage(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))


def _response(
    text: str, calls: tuple[ToolUseBlock, ...], usage: Usage, reason: str | None, model: Any
) -> ProviderResponse:
    blocks = ((TextBlock(text),) if text or not calls else ()) + calls
    return ProviderResponse(LLMMessage("assistant", blocks), usage, reason, model)
