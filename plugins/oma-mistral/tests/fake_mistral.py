"""A fake Mistral chat completions service on 127.0.0.1, written from Mistral's API reference.

``POST /v1/chat/completions`` with ``Authorization: Bearer <key>``: a JSON ``chat.completion``,
or (``"stream": true``) ``data: {chat.completion.chunk}`` events ending in ``data: [DONE]``,
the last chunk carrying ``finish_reason`` and ``usage``. A streamed reply opens with a chunk
that carries only the role (no text), as the service's do. It refuses what the service
refuses, with its error shape ``{"object": "error", "message", "type", "param", "code"}``:
unknown fields (422), a tool call id that is not nine letters and digits, a ``tool`` message
answering no pending call, an image, document or audio chunk in a non-user message, an
``image_url`` that is neither an http(s) URL nor a base64 image data URL, a ``document_url``
that is not an http(s) URL (or a ``document_name`` that is not a string), an ``input_audio``
that is not a base64 string, a conversation that does not end with a user or
tool message, a ``response_format`` of another shape than ``{"type": "text" | "json_object"}``
or ``{"type": "json_schema", "json_schema": {"name", "schema", "description"?, "strict"?}}``,
a ``tool_choice`` other than ``auto`` / ``none`` / ``any`` / ``required`` or
``{"type"?: "function", "function": {"name"}}`` naming a declared tool. Replies are
queued with ``reply(Reply(...))``; ``default_reply`` answers when the queue is empty. Faults
come from ``oma_core.testing.fake_server``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
from collections import deque
from typing import Any

import attrs

from oma_core.testing import FakeServer, RecordedRequest, Response, SSEEvent

__all__ = ["API_KEY", "FakeMistral", "Reply"]

API_KEY = "test-key"

_TOP_LEVEL = frozenset(
    {
        "model",
        "messages",
        "temperature",
        "top_p",
        "max_tokens",
        "stream",
        "stop",
        "random_seed",
        "response_format",
        "tools",
        "tool_choice",
        "presence_penalty",
        "frequency_penalty",
        "n",
        "prediction",
        "parallel_tool_calls",
        "safe_prompt",
        "prompt_mode",
        "metadata",
        "reasoning_effort",
    }
)
#: Per the reasoning documentation: the ``reasoning_effort`` values each model takes.
_EFFORTS = (
    (re.compile(r"mistral-small-(latest|2603)|mistral-medium-3[-.]5"), ("high", "none")),
    (re.compile(r"mistral-large-4"), ("low", "medium", "high", "none")),
)
_ID = re.compile(r"[A-Za-z0-9]{9}")
_IMAGE_DATA_URL = re.compile(r"data:image/(?:png|jpeg|webp|gif);base64,(.*)", re.S)
_WORDS = re.compile(r"\S+\s*|\s+")


@attrs.frozen
class Reply:
    """One scripted assistant turn: text and tool calls ``(id, name, arguments JSON)``."""

    text: str = "Hello from the fake Mistral."
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    #: the turn's reasoning, sent as a ``thinking`` chunk before the text (content a list)
    thinking: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 11
    completion_tokens: int = 5
    #: ``prompt_tokens_details.cached_tokens`` (a part of ``prompt_tokens``); left out when None.
    cached_tokens: int | None = None


class _Refused(Exception):
    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.message, self.status, self.kind = message, status, kind


class FakeMistral(FakeServer):
    """The fake service; ``url + "/v1"`` is the provider's ``base_url``."""

    def __init__(self, *, api_key: str = API_KEY, response_delay: float = 0.0) -> None:
        super().__init__(response_delay=response_delay)
        self.api_key = api_key
        self.default_reply = Reply()
        self._replies: deque[Reply] = deque()
        self._lock2 = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def reply(self, *replies: Reply) -> None:
        with self._lock2:
            self._replies.extend(replies)

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        kind = error_type or {401: "unauthorized", 429: "rate_limited"}.get(
            status, "invalid_request_error" if status < 500 else "internal_server_error"
        )
        body = {"object": "error", "message": message, "type": kind, "param": None, "code": None}
        return Response.json(body, status=status)

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        code = 503 if error_type == "service_unavailable" else 500
        return SSEEvent({"object": "error", "message": message, "type": error_type, "code": code})

    # -- the wire

    def handle(self, request: RecordedRequest) -> Response:
        if request.method != "POST" or request.path != "/v1/chat/completions":
            return self.error_response(404, "Not Found", "not_found")
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self.error_response(401, "Unauthorized")
        try:
            body = request.json
            if not isinstance(body, dict):
                raise _Refused("Invalid JSON body", 422, "invalid_request_message_error")
            self._check(body)
        except _Refused as refused:
            return self.error_response(refused.status, refused.message, refused.kind)
        with self._lock2:
            reply = self._replies.popleft() if self._replies else self.default_reply
        if body.get("stream"):
            return Response.sse(self._chunks(reply, body["model"]))
        return Response.json(self._completion(reply, body["model"]))

    def _check(self, body: dict[str, Any]) -> None:
        extra = sorted(set(body) - _TOP_LEVEL)
        if extra:
            raise _Refused(
                f"Extra inputs are not permitted: {extra}", 422, "invalid_request_message_error"
            )
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise _Refused("model: Field required", 422, "invalid_request_message_error")
        effort = body.get("reasoning_effort")
        if effort is not None:
            takes = next((v for p, v in _EFFORTS if p.match(body["model"])), None)
            if takes is None or effort not in takes:
                raise _Refused(f"reasoning_effort {effort!r} is not supported by this model")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Refused("messages: Field required", 422, "invalid_request_message_error")
        stop = body.get("stop")
        strings = isinstance(stop, list) and all(isinstance(s, str) for s in stop)
        if stop is not None and not (isinstance(stop, str) or strings):
            raise _Refused("stop: must be a string or a list of strings", 422)
        for tool in body.get("tools") or ():
            if tool.get("type") != "function" or not tool.get("function", {}).get("name"):
                raise _Refused("tools: each tool is {type: function, function: {name, ...}}")
        self._check_output(body)
        pending: set[str] = set()
        for i, message in enumerate(messages):
            role = message.get("role")
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in pending:
                    raise _Refused(
                        f"messages[{i}]: unexpected tool call id {call_id}",
                        kind="invalid_function_call",
                    )
                pending.discard(call_id)
                if not isinstance(message.get("content"), str):
                    raise _Refused(f"messages[{i}].content: a tool result is a string")
                continue
            if pending:
                raise _Refused(
                    f"messages[{i}]: tool calls {sorted(pending)} have no result",
                    kind="invalid_function_call",
                )
            if role not in ("system", "user", "assistant"):
                raise _Refused(f"messages[{i}].role: unknown role {role!r}", 422)
            self._check_content(message.get("content"), role, i)
            for call in message.get("tool_calls") or ():
                if role != "assistant":
                    raise _Refused(f"messages[{i}]: only assistant messages call tools")
                call_id = call.get("id")
                if not isinstance(call_id, str) or not _ID.fullmatch(call_id):
                    raise _Refused(
                        f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, "
                        "with a length of 9.",
                        kind="invalid_function_call",
                    )
                function = call.get("function") or {}
                if not function.get("name") or not isinstance(function.get("arguments"), str):
                    raise _Refused(f"messages[{i}].tool_calls: function name and arguments")
                pending.add(call_id)
        last = messages[-1]
        prefix = last.get("role") == "assistant" and last.get("prefix")
        if pending or not (last.get("role") in ("user", "tool") or prefix):
            raise _Refused(
                f"Expected last role User or Tool (or Assistant with prefix True) "
                f"for serving but got {last.get('role')}"
            )

    def _check_output(self, body: dict[str, Any]) -> None:
        """``response_format`` and ``tool_choice`` as the API reference types them."""
        response_format = body.get("response_format")
        if response_format is not None:
            kind = response_format.get("type") if isinstance(response_format, dict) else None
            if kind not in ("text", "json_object", "json_schema"):
                raise _Refused(f"response_format.type: unknown {kind!r}", 422)
            spec = response_format.get("json_schema")
            if kind == "json_schema":
                if not isinstance(spec, dict) or set(spec) - {
                    "name",
                    "schema",
                    "description",
                    "strict",
                }:
                    raise _Refused("response_format.json_schema: {name, schema, ...}", 422)
                if not isinstance(spec.get("name"), str) or not isinstance(
                    spec.get("schema"), dict
                ):
                    raise _Refused("response_format.json_schema: name and schema required", 422)
            elif spec is not None:
                raise _Refused("response_format.json_schema: only with type json_schema", 422)
        choice = body.get("tool_choice")
        if choice is None or choice in ("auto", "none", "any", "required"):
            return
        named = choice.get("function") if isinstance(choice, dict) else None
        if (
            not isinstance(named, dict)
            or choice.get("type", "function") != "function"
            or set(choice) - {"type", "function"}
        ):
            raise _Refused("tool_choice: a ToolChoiceEnum or {type: function, function}", 422)
        declared = {t["function"]["name"] for t in body.get("tools") or ()}
        if named.get("name") not in declared:
            raise _Refused(f"tool_choice: no tool named {named.get('name')!r}")

    def _check_content(self, content: Any, role: str, i: int) -> None:
        if content is None or isinstance(content, str):
            return
        if not isinstance(content, list):
            raise _Refused(f"messages[{i}].content: a string or a list of chunks", 422)
        for j, chunk in enumerate(content):
            kind = chunk.get("type") if isinstance(chunk, dict) else None
            if kind == "text":
                if not isinstance(chunk.get("text"), str):
                    raise _Refused(f"messages[{i}].content[{j}].text: a string", 422)
            elif kind == "thinking":
                texts = chunk.get("thinking")
                if role != "assistant" or not isinstance(texts, list):
                    raise _Refused(f"messages[{i}].content[{j}]: thinking is assistant chunks", 422)
                if any(not isinstance(t, dict) or t.get("type") != "text" for t in texts):
                    raise _Refused(f"messages[{i}].content[{j}].thinking: text chunks", 422)
            elif kind == "image_url":
                if role != "user":
                    raise _Refused(f"messages[{i}].content[{j}]: images go in user messages")
                url = chunk.get("image_url")
                url = url.get("url") if isinstance(url, dict) else url
                self._check_image_url(url, f"messages[{i}].content[{j}]")
            elif kind in ("document_url", "input_audio"):
                if role != "user":
                    raise _Refused(f"messages[{i}].content[{j}]: {kind} goes in user messages")
                self._check_file_chunk(chunk, kind, f"messages[{i}].content[{j}]")
            else:
                raise _Refused(f"messages[{i}].content[{j}].type: unknown chunk {kind!r}", 422)

    def _check_file_chunk(self, chunk: dict[str, Any], kind: str, where: str) -> None:
        allowed = {"type", "document_url", "document_name"} if kind == "document_url" else None
        if kind == "document_url":
            url = chunk.get("document_url")
            if not isinstance(url, str) or not url.startswith(("https://", "http://")):
                raise _Refused(f"{where}.document_url: an http(s) URL", 422)
            if not isinstance(chunk.get("document_name", ""), str):
                raise _Refused(f"{where}.document_name: a string", 422)
        else:
            allowed = {"type", "input_audio"}
            try:
                base64.b64decode(chunk.get("input_audio"), validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise _Refused(f"{where}.input_audio: a base64 string", 422) from None
        if set(chunk) - allowed:
            raise _Refused(f"{where}: extra inputs are not permitted", 422)

    def _check_image_url(self, url: Any, where: str) -> None:
        if not isinstance(url, str):
            raise _Refused(f"{where}.image_url: a string", 422)
        if url.startswith(("https://", "http://")):
            return
        match = _IMAGE_DATA_URL.fullmatch(url)
        if match is None:
            raise _Refused(f"{where}.image_url: not a URL or a base64 image data URL")
        try:
            base64.b64decode(match.group(1), validate=True)
        except binascii.Error:
            raise _Refused(f"{where}.image_url: invalid base64") from None

    # -- replies

    def _completion(self, reply: Reply, model: str) -> dict[str, Any]:
        calls = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
            for call_id, name, arguments in reply.tool_calls
        ]
        message = {
            "role": "assistant",
            "content": _content(reply),
            "tool_calls": calls or None,
            "prefix": False,
        }
        return {
            "id": "cmpl-fake",
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
            "usage": _usage(reply),
        }

    def _chunks(self, reply: Reply, model: str) -> list[SSEEvent]:
        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> SSEEvent:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            return SSEEvent(
                {
                    "id": "cmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": model,
                    "choices": [choice],
                    **extra,
                }
            )

        events = [chunk({"role": "assistant", "content": ""})]
        if reply.thinking:
            events.extend(
                chunk(
                    {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": w}]}]}
                )
                for w in _WORDS.findall(reply.thinking)
            )
        events.extend(chunk({"content": word}) for word in _WORDS.findall(reply.text))
        for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
            half = len(arguments) // 2  # the service sends whole calls; halves test assembly
            first = {
                "id": call_id,
                "type": "function",
                "index": index,
                "function": {"name": name, "arguments": arguments[:half]},
            }
            events.append(chunk({"tool_calls": [first]}))
            rest = {"index": index, "function": {"arguments": arguments[half:]}}
            events.append(chunk({"tool_calls": [rest]}))
        events.append(chunk({"content": ""}, _finish(reply), usage=_usage(reply)))
        events.append(SSEEvent("[DONE]"))
        return events


def _content(reply: Reply) -> Any:
    if not reply.thinking:
        return reply.text
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": reply.thinking}]}
    return [thinking, {"type": "text", "text": reply.text}]


def _finish(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _usage(reply: Reply) -> dict[str, Any]:
    total = reply.prompt_tokens + reply.completion_tokens
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": total,
    }
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    return usage


def tool_reply(call_id: str, name: str, arguments: Any) -> Reply:
    return Reply(text="", tool_calls=((call_id, name, json.dumps(arguments)),))
