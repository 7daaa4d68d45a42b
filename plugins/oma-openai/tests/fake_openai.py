"""A fake Chat Completions service on 127.0.0.1, written from OpenAI's API reference.

It speaks ``POST /v1/chat/completions`` with ``Authorization: Bearer``: JSON replies, or
``data: {...}`` server-sent chunks ending in ``data: [DONE]`` (with the extra usage chunk, whose
``choices`` is empty, when ``stream_options.include_usage`` is set). It checks what it receives
the way the real service does and answers what it refuses with a 400 and ``{"error": {...}}``:
a tool message that answers no pending tool call, tool calls left unanswered, an image part in an
assistant message, unknown part types, missing ``model``/``messages``, invalid data URLs, a
``file`` part's ``file_data`` without its ``filename``, an ``input_audio`` part that is not raw
base64 with a ``wav`` or ``mp3`` format, ``stream_options`` without ``stream``.

``mode="strict"`` behaves like OpenAI (``video_url`` parts and unknown fields are refused);
``mode="compatible"`` like MiniMax and other compatible servers (``video_url`` accepted, unknown
fields ignored, ``reasoning_content`` accepted on assistant messages and sent in replies; a
``file`` part's ``file_data`` may be an https URL, as OpenRouter takes it).
Replies are scripted with ``server.reply(Reply(...))`` (``default_reply`` when none is queued);
streamed text is cut into words, or into ``chunk_size`` characters. Faults come from the base
(``oma_core.testing.fake_server``), plus ``MalformedReply``: a 200 that cannot be read.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import attrs

from oma_core.testing.fake_server import FakeServer, Fault, RecordedRequest, Response, SSEEvent

__all__ = ["FakeChatCompletions", "MalformedReply", "Reply"]

API_KEY = "test-key"

_TOP_LEVEL = frozenset(
    {
        "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens",
        "temperature", "top_p", "tools", "tool_choice", "n", "stop", "seed", "response_format",
        "user", "parallel_tool_calls", "presence_penalty", "frequency_penalty", "logprobs",
        "top_logprobs", "reasoning_effort", "metadata", "store", "service_tier", "modalities",
        "prediction", "audio", "logit_bias", "web_search_options", "verbosity",
        "safety_identifier", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
    }
)  # fmt: skip
_MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "developer": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls", "refusal", "audio", "function_call"},
    "tool": {"role", "content", "tool_call_id"},
}
_USER_PARTS = ("text", "image_url", "input_audio", "file")
IMAGE_DATA_URL = re.compile(r"data:(image/(?:png|jpeg|gif|webp));base64,(.*)", re.S)
DATA_URL = re.compile(r"data:([a-z0-9.+-]+/[a-z0-9.+-]+);base64,(.*)", re.S)
TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
WORDS = re.compile(r"\S+\s*|\s+")


@attrs.frozen
class Reply:
    """One scripted assistant turn: text, tool calls ``(id, name, arguments JSON)``, reasoning
    (sent as ``reasoning_content`` by a compatible server), token counts."""

    text: str | None = "Hello from the fake service."
    tool_calls: tuple[tuple[str, str, str], ...] = ()
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 12
    completion_tokens: int = 7
    #: ``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details
    #: .reasoning_tokens`` (parts of the two counts above); left out when None.
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    #: ``prompt_tokens_details.cache_write_tokens`` (a part of ``prompt_tokens``).
    cache_write_tokens: int | None = None
    #: A refusal (structured outputs): sent in ``message.refusal`` with ``content`` null.
    refusal: str | None = None


@attrs.frozen
class MalformedReply(Fault):
    """A 200 that cannot be read, instead of the reply: ``kind`` "not_json" (``{not json``),
    "empty" (no body), or "wrong_shape" (JSON that is not a completion). A streamed request
    gets the same garbage as the data of its SSE events (then ``[DONE]``)."""

    kind: Literal["not_json", "empty", "wrong_shape"] = "not_json"

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: Callable[[], Awaitable[Response]]
    ) -> Response:
        if isinstance(request.json, dict) and request.json.get("stream"):
            data = {"not_json": "{not json", "empty": "", "wrong_shape": "[1, 2, 3]"}[self.kind]
            return Response.sse([SSEEvent(data), SSEEvent("[DONE]")])
        body = {"not_json": b"{not json", "empty": b"", "wrong_shape": b'{"object": "list"}'}
        return Response.raw(body[self.kind], content_type="application/json")


#: The most cache breakpoints one request may carry (OpenAI's prompt caching guide).
MAX_BREAKPOINTS = 4
_TTLS = ("30m", "12h")


def check_breakpoints(contents: list[tuple[Any, Any]], options: Any) -> None:
    """OpenAI's rules for explicit cache breakpoints (``prompt_cache_breakpoint`` on input
    content parts), over each message's ``(role, content)``: ``{"mode": "explicit"}`` with an
    optional ``ttl`` of "30m" or "12h", never on an assistant's part, at most four in a
    request; ``prompt_cache_options`` an object of ``mode``, ``ttl``, ``prewarm``..."""
    if options is not None:
        if not isinstance(options, dict) or options.get("mode", "implicit") not in (
            "implicit",
            "explicit",
        ):
            raise Refused("Invalid 'prompt_cache_options'.", "prompt_cache_options")
        if options.get("ttl", "30m") not in _TTLS:
            raise Refused("Invalid 'prompt_cache_options.ttl'.", "prompt_cache_options.ttl")
    count = 0
    for role, content in contents:
        for part in content if isinstance(content, list) else ():
            mark = part.get("prompt_cache_breakpoint") if isinstance(part, dict) else None
            if mark is None:
                continue
            if role == "assistant":
                raise Refused("Unknown parameter: 'prompt_cache_breakpoint' on an output part.")
            if (
                not isinstance(mark, dict)
                or mark.get("mode") != "explicit"
                or set(mark) - {"mode", "ttl"}
                or mark.get("ttl", "30m") not in _TTLS
            ):
                raise Refused("Invalid 'prompt_cache_breakpoint'.", "prompt_cache_breakpoint")
            count += 1
    if count > MAX_BREAKPOINTS:
        raise Refused(
            f"Too many cache breakpoints: {count}; a request takes at most {MAX_BREAKPOINTS}."
        )


def check_strict(node: Any, name: str, where: str) -> None:
    """OpenAI's strict-mode refusals: an object not closed, or with a property not required."""
    if not isinstance(node, dict):
        return
    if node.get("type") == "object" or "properties" in node:
        if node.get("additionalProperties") is not False:
            raise Refused(
                f"Invalid schema for response_format '{name}': In context=({where}), "
                "'additionalProperties' is required to be supplied and to be false."
            )
        properties = node.get("properties") or {}
        missing = [k for k in properties if k not in (node.get("required") or [])]
        if missing:
            raise Refused(
                f"Invalid schema for response_format '{name}': In context=({where}), "
                f"'required' is required to be supplied and to be an array including every "
                f"key in properties. Missing '{missing[0]}'."
            )
        for key, sub in properties.items():
            check_strict(sub, name, f"{where}, 'properties', '{key}'")
    if isinstance(node.get("items"), dict):
        check_strict(node["items"], name, f"{where}, 'items'")
    for option in node.get("anyOf") or ():
        check_strict(option, name, f"{where}, 'anyOf'")


class Refused(Exception):
    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


class FakeChatCompletions(FakeServer):
    """The fake service; ``url`` + ``/v1`` is what a client's ``base_url`` points at."""

    def __init__(
        self,
        *,
        mode: Literal["strict", "compatible"] = "strict",
        api_key: str = API_KEY,
        response_delay: float = 0.0,
        chunk_size: int | None = None,
    ) -> None:
        super().__init__(response_delay=response_delay)
        self.mode = mode
        self.api_key = api_key
        self.chunk_size = chunk_size
        self.default_reply = Reply()
        self._replies: deque[Reply] = deque()
        self._replies_lock = threading.Lock()
        self._ids = 0

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def reply(self, *replies: Reply) -> None:
        """Queue replies, one per accepted request; an empty queue answers ``default_reply``."""
        with self._replies_lock:
            self._replies.extend(replies)

    # -- the provider's error shapes

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        default = {400: "invalid_request_error", 401: "invalid_request_error", 404: "not_found"}
        kind = error_type or default.get(status, "rate_limit_exceeded" if status == 429 else "")
        error = {
            "message": message,
            "type": kind or "server_error",
            "param": None,
            "code": None,
        }
        return Response.json({"error": error}, status=status)

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        # OpenAI sends a stream error as a data-only event with an "error" object.
        error = {"message": message, "type": error_type, "param": None, "code": None}
        return SSEEvent({"error": error})

    # -- the wire protocol

    def handle(self, request: RecordedRequest) -> Response:
        if request.method != "POST" or request.path != "/v1/chat/completions":
            return self.error_response(404, f"Invalid URL ({request.method} {request.path})")
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return self.error_response(401, "Incorrect API key provided.")
        body = request.json
        try:
            if not isinstance(body, dict):
                raise Refused("We could not parse the JSON body of your request.")
            self._check_body(body)
        except Refused as refused:
            return self.error_response(400, refused.message)
        with self._replies_lock:
            reply = self._replies.popleft() if self._replies else self.default_reply
            self._ids += 1
            ident = f"chatcmpl-{self._ids}"
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return Response.sse(self._chunks(ident, body["model"], reply, include_usage))
        return Response.json(self._completion(ident, body["model"], reply))

    # -- checks, as the service makes them

    def _check_body(self, body: dict[str, Any]) -> None:
        for key in ("model", "messages"):
            if key not in body:
                raise Refused(f"Missing required parameter: '{key}'.", key)
        if not isinstance(body["model"], str) or not body["model"]:
            raise Refused("Invalid type for 'model': expected a string.", "model")
        if self.mode == "strict":
            for key in body:
                if key not in _TOP_LEVEL:
                    raise Refused(f"Unrecognized request argument supplied: {key}", key)
        if "stream_options" in body and not body.get("stream"):
            raise Refused(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                "stream_options",
            )
        temperature = body.get("temperature")
        if temperature is not None and not (
            isinstance(temperature, int | float) and 0 <= temperature <= 2
        ):
            raise Refused("Invalid 'temperature': must be between 0 and 2.", "temperature")
        for key in ("max_tokens", "max_completion_tokens"):
            value = body.get(key)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise Refused(f"Invalid '{key}': integer below minimum value.", key)
        stop = body.get("stop")
        if isinstance(stop, list):
            if len(stop) > 4 or not all(isinstance(s, str) for s in stop):
                raise Refused("Invalid 'stop': expected up to 4 strings.", "stop")
        elif stop is not None and not isinstance(stop, str):
            raise Refused("Invalid type for 'stop': expected a string or an array.", "stop")
        self._check_tools(body.get("tools"))
        messages = body["messages"]
        if not isinstance(messages, list) or not messages:
            raise Refused("Invalid 'messages': empty array.", "messages")
        self._check_messages(messages)
        self._check_response_format(body.get("response_format"))
        check_breakpoints(
            [(m.get("role"), m.get("content")) for m in messages], body.get("prompt_cache_options")
        )

    def _check_response_format(self, value: Any) -> None:
        """``json_schema`` as OpenAI takes it: a name, an object schema and, with
        ``strict: true``, every object closed (``additionalProperties: false``) with every
        property required (its strict-mode rules)."""
        if value is None or value.get("type") != "json_schema":
            return
        spec = value.get("json_schema")
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise Refused("Missing required parameter: 'response_format.json_schema.name'.")
        if not TOOL_NAME.fullmatch(spec["name"]):
            raise Refused("Invalid 'response_format.json_schema.name'.")
        schema = spec.get("schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise Refused("Invalid schema for response_format: the root must be an object.")
        if spec.get("strict"):
            check_strict(schema, spec["name"], "root")

    def _check_tools(self, tools: Any) -> None:
        if tools is None:
            return
        if not isinstance(tools, list):
            raise Refused("Invalid type for 'tools': expected an array.", "tools")
        for i, tool in enumerate(tools):
            where = f"tools[{i}]"
            function = tool.get("function") if isinstance(tool, dict) else None
            if tool.get("type") != "function" or not isinstance(function, dict):
                raise Refused(f"Invalid '{where}': expected a function tool.", where)
            if not isinstance(function.get("name"), str) or not TOOL_NAME.fullmatch(
                function["name"]
            ):
                raise Refused(f"Invalid '{where}.function.name'.", f"{where}.function.name")
            parameters = function.get("parameters", {})
            if not isinstance(parameters, dict):
                raise Refused(f"Invalid '{where}.function.parameters'.", where)

    def _check_messages(self, messages: list[Any]) -> None:
        pending: list[str] = []  # tool calls of the last assistant message not yet answered
        for i, message in enumerate(messages):
            where = f"messages[{i}]"
            if not isinstance(message, dict):
                raise Refused(f"Invalid type for '{where}': expected an object.", where)
            role = message.get("role")
            if role not in _MESSAGE_KEYS:
                raise Refused(f"Invalid value for '{where}.role': {role!r}.", f"{where}.role")
            allowed = set(_MESSAGE_KEYS[role])
            if self.mode == "compatible" and role == "assistant":
                allowed.add("reasoning_content")
            for key in message:
                if key not in allowed and self.mode == "strict":
                    raise Refused(f"Unrecognized property '{where}.{key}'.", f"{where}.{key}")
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in pending:
                    raise Refused(
                        "Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceeding message with 'tool_calls'.",
                        f"{where}.role",
                    )
                pending.remove(call_id)
                self._check_text_content(message.get("content"), f"{where}.content")
                continue
            if pending:
                raise Refused(
                    "An assistant message with 'tool_calls' must be followed by tool messages "
                    "responding to each 'tool_call_id'. The following tool_call_ids did not "
                    f"have response messages: {', '.join(pending)}",
                    f"{where}.role",
                )
            if role == "assistant":
                pending = self._check_assistant(message, where)
            elif role == "user":
                self._check_user_content(message.get("content"), f"{where}.content")
            else:
                self._check_text_content(message.get("content"), f"{where}.content")
        if pending:
            raise Refused(
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {', '.join(pending)}",
                "messages",
            )

    def _check_assistant(self, message: dict[str, Any], where: str) -> list[str]:
        calls = message.get("tool_calls")
        content = message.get("content")
        if content is None and not calls:
            raise Refused(
                f"Invalid '{where}': content is required unless tool_calls is set.", where
            )
        if isinstance(content, list):
            for j, part in enumerate(content):
                kind = part.get("type") if isinstance(part, dict) else None
                if kind not in ("text", "refusal"):
                    raise Refused(
                        f"Invalid value: '{kind}'. Supported values are: 'text' and 'refusal'.",
                        f"{where}.content[{j}].type",
                    )
        elif content is not None and not isinstance(content, str):
            raise Refused(f"Invalid type for '{where}.content'.", f"{where}.content")
        if not calls:
            return []
        if not isinstance(calls, list):
            raise Refused(f"Invalid type for '{where}.tool_calls'.", f"{where}.tool_calls")
        ids = []
        for j, call in enumerate(calls):
            at = f"{where}.tool_calls[{j}]"
            function = call.get("function") if isinstance(call, dict) else None
            if (
                not isinstance(call.get("id"), str)
                or call.get("type") != "function"
                or not isinstance(function, dict)
                or not isinstance(function.get("name"), str)
                or not isinstance(function.get("arguments"), str)
            ):
                raise Refused(f"Invalid '{at}'.", at)
            ids.append(call["id"])
        return ids

    def _check_text_content(self, content: Any, where: str) -> None:
        if isinstance(content, str):
            return
        if not isinstance(content, list) or not content:
            raise Refused(f"Invalid type for '{where}'.", where)
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind != "text" or not isinstance(part.get("text"), str):
                raise Refused(
                    f"Invalid value: '{kind}'. Supported values are: 'text'.", f"{where}[{j}]"
                )

    def _check_user_content(self, content: Any, where: str) -> None:
        if isinstance(content, str):
            return
        if not isinstance(content, list) or not content:
            raise Refused(f"Invalid type for '{where}'.", where)
        for j, part in enumerate(content):
            at = f"{where}[{j}]"
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                if not isinstance(part.get("text"), str):
                    raise Refused(f"Invalid '{at}.text'.", at)
            elif kind == "image_url":
                self._check_image(part.get("image_url"), at)
            elif kind == "file":
                self._check_file(part.get("file"), at)
            elif kind == "input_audio":
                self._check_audio(part.get("input_audio"), at)
            elif kind == "video_url" and self.mode == "compatible":
                self._check_video(part.get("video_url"), at)
            elif kind not in _USER_PARTS:
                supported = ", ".join(f"'{k}'" for k in _USER_PARTS)
                raise Refused(
                    f"Invalid value: '{kind}'. Supported values are: {supported}.", f"{at}.type"
                )

    def _check_image(self, image: Any, at: str) -> None:
        if not isinstance(image, dict) or not isinstance(image.get("url"), str):
            raise Refused(f"Missing required parameter: '{at}.image_url.url'.", at)
        if image.get("detail", "auto") not in ("auto", "low", "high"):
            raise Refused(f"Invalid value for '{at}.image_url.detail'.", at)
        url: str = image["url"]
        if url.startswith("data:"):
            match = IMAGE_DATA_URL.fullmatch(url)
            if match is None or not is_base64(match.group(2)):
                raise Refused(
                    "Invalid image URL: expected a data URL with a base64-encoded PNG, JPEG, "
                    "GIF or WEBP image.",
                    f"{at}.image_url.url",
                )
        elif not url.startswith(("http://", "https://")):
            raise Refused("Invalid image URL.", f"{at}.image_url.url")

    def _check_video(self, video: Any, at: str) -> None:
        if not isinstance(video, dict) or not isinstance(video.get("url"), str):
            raise Refused(f"Missing required parameter: '{at}.video_url.url'.", at)
        url: str = video["url"]
        if url.startswith("data:"):
            match = DATA_URL.fullmatch(url)
            if match is None or not match.group(1).startswith("video/"):
                raise Refused("Invalid video URL.", f"{at}.video_url.url")
            if not is_base64(match.group(2)):
                raise Refused("Invalid video data.", f"{at}.video_url.url")
        elif not url.startswith(("http://", "https://")):
            raise Refused("Invalid video URL.", f"{at}.video_url.url")

    def _check_file(self, file: Any, at: str) -> None:
        if not isinstance(file, dict) or not ("file_data" in file or "file_id" in file):
            raise Refused(f"Invalid '{at}.file': file_data or file_id is required.", at)
        data = file.get("file_data")
        if data is None:
            return
        if not isinstance(file.get("filename"), str) or not file["filename"]:
            raise Refused(f"Missing required parameter: '{at}.file.filename'.", at)
        if self.mode == "compatible" and isinstance(data, str) and data.startswith("https://"):
            return  # OpenRouter fetches a PDF by URL; OpenAI's file_data is base64 only
        match = DATA_URL.fullmatch(data) if isinstance(data, str) else None
        if match is None or not is_base64(match.group(2)):
            raise Refused("Invalid file data.", f"{at}.file.file_data")
        if self.mode == "strict" and match.group(1) != "application/pdf":
            raise Refused("Invalid file type: only PDF files are supported.", at)

    def _check_audio(self, audio: Any, at: str) -> None:
        if not isinstance(audio, dict) or not isinstance(audio.get("data"), str):
            raise Refused(f"Missing required parameter: '{at}.input_audio.data'.", at)
        if audio.get("format") not in ("wav", "mp3"):
            raise Refused(
                f"Invalid value for '{at}.input_audio.format': expected 'wav' or 'mp3'.", at
            )
        if set(audio) - {"data", "format"}:
            raise Refused(f"Unrecognized parameter in '{at}.input_audio'.", at)
        if not is_base64(audio["data"]):  # raw base64, not a data URL
            raise Refused("Invalid audio data: expected base64.", f"{at}.input_audio.data")

    # -- replies

    def _pieces(self, text: str) -> list[str]:
        size = self.chunk_size
        if size is None:
            return WORDS.findall(text)
        return [text[i : i + size] for i in range(0, len(text), size)]

    def _message(self, reply: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None if reply.refusal else reply.text,
            "refusal": reply.refusal,
        }
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in reply.tool_calls
            ]
        if reply.reasoning is not None and self.mode == "compatible":
            message["reasoning_content"] = reply.reasoning
        return message

    def _completion(self, ident: str, model: str, reply: Reply) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": self._message(reply),
                    "logprobs": None,
                    "finish_reason": _finish(reply),
                }
            ],
            "usage": _usage(reply),
            "system_fingerprint": None,
        }

    def _chunks(self, ident: str, model: str, reply: Reply, include_usage: bool) -> list[SSEEvent]:
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> SSEEvent:
            data: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if include_usage:
                data["usage"] = None
            return SSEEvent(data)

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        if reply.reasoning and self.mode == "compatible":
            events += [chunk({"reasoning_content": w}) for w in WORDS.findall(reply.reasoning)]
        if reply.refusal:
            events += [chunk({"refusal": piece}) for piece in self._pieces(reply.refusal)]
        elif reply.text:
            events += [chunk({"content": piece}) for piece in self._pieces(reply.text)]
        for index, (call_id, name, arguments) in enumerate(reply.tool_calls):
            events.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for start in range(0, len(arguments), 5):
                piece = arguments[start : start + 5]
                events.append(
                    chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                )
        events.append(chunk({}, _finish(reply)))
        if include_usage:
            events.append(
                SSEEvent(
                    {
                        "id": ident,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model,
                        "choices": [],
                        "usage": _usage(reply),
                    }
                )
            )
        events.append(SSEEvent("[DONE]"))
        return events


def _finish(reply: Reply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    if reply.cached_tokens is not None or reply.cache_write_tokens is not None:
        details = {"cached_tokens": reply.cached_tokens or 0, "audio_tokens": 0}
        if reply.cache_write_tokens is not None:
            details["cache_write_tokens"] = reply.cache_write_tokens
        usage["prompt_tokens_details"] = details
    if reply.reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
    return usage


def is_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return bool(data)
