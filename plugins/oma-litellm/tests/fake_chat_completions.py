"""A small fake OpenAI Chat Completions API on 127.0.0.1, written from OpenAI's API reference.

``POST /v1/chat/completions`` with ``Authorization: Bearer <key>`` answers with a
``chat.completion`` object, or with ``stream: true`` a stream of ``chat.completion.chunk``
events (a first chunk with the role and no text, text a few characters per chunk, tool-call
deltas with the id and name first and the arguments in pieces, a chunk with the
``finish_reason``, a usage chunk when ``stream_options.include_usage`` is set, ``[DONE]``).
Errors have the documented ``{"error": {"message", "type", "param", "code"}}`` shape; inside
a stream an error is a data-only event holding that object. Azure OpenAI's shape of the same
API is served too: ``POST /openai/deployments/{deployment}/chat/completions?api-version=...``
with the key in an ``api-key`` header (or, for a server given an ``azure_token``, a Microsoft
Entra ID token as ``Authorization: Bearer <token>`` instead), and Azure's v1 API,
``/openai/v1/...``, in OpenAI's shape with the key (or token) as a bearer; and the
text-completion API
(``/v1/completions``, or Azure's ``.../deployments/{deployment}/completions``) answers a
``prompt`` with the next reply's text.

It refuses what the service refuses: unknown top-level fields, a missing model, an empty
message list, unknown roles, content parts other than ``text``, ``image_url``, ``file`` (a
base64 PDF data URL with its ``filename``) and ``input_audio`` (raw base64, ``wav`` or ``mp3``)
(so no video), image URLs that are neither ``http(s)`` nor a base64 ``data:`` URL of an image type,
and a ``tool`` message that answers no ``tool_calls`` id of an earlier assistant turn.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from oma_core.testing import FakeServer, Fault, RecordedRequest, Response, SSEEvent

__all__ = ["FakeChatCompletions", "Malformed", "Reply"]

_TOP_LEVEL = {
    "model",
    "messages",
    "temperature",
    "top_p",
    "n",
    "stream",
    "stream_options",
    "stop",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "user",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "seed",
    "logprobs",
    "top_logprobs",
    "reasoning_effort",
    "metadata",
    "store",
}
_DATA_URL = re.compile(r"^data:(image/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/]+=*)$")


@attrs.frozen
class Malformed(Fault):
    """Answer 200 with ``body`` (not the documented reply), without calling the handler; with
    ``events``, a stream of those data lines instead."""

    body: bytes = b"this is not JSON"
    events: tuple[str, ...] | None = None

    async def apply(self, server: FakeServer, request: RecordedRequest, make: Any) -> Response:
        if self.events is not None:
            return Response.sse(SSEEvent(e) for e in self.events)
        return Response.raw(self.body, content_type="application/json")


class _Refused(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        self.status = status
        super().__init__(message)


@attrs.frozen
class Reply:
    """One scripted assistant turn: text and/or tool calls ``(id, name, arguments)``."""

    text: str | None = None
    tool_calls: tuple[tuple[str, str, Mapping[str, Any]], ...] = ()
    #: ``reasoning_content`` (as DeepSeek and OpenAI-compatible servers send it)
    reasoning: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 9
    completion_tokens: int = 5


class FakeChatCompletions(FakeServer):
    """The Chat Completions API for one key; ``chunk_size`` characters per streamed delta."""

    def __init__(
        self, *, api_key: str = "test-key", chunk_size: int = 4, azure_token: str | None = None
    ) -> None:
        super().__init__()
        self.api_key = api_key
        self.azure_token = azure_token
        self.chunk_size = chunk_size
        self.default_reply = Reply(text="Hello from the fake Chat Completions API.")
        self._replies: deque[Reply] = deque()

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def reply(self, reply: Reply) -> None:
        self._replies.append(reply)

    def reply_text(self, text: str) -> None:
        self._replies.append(Reply(text=text))

    def reply_tool_call(self, call_id: str, name: str, arguments: Mapping[str, Any]) -> None:
        self._replies.append(Reply(tool_calls=((call_id, name, dict(arguments)),)))

    # -- the error shapes

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        kind = error_type or {
            400: "invalid_request_error",
            401: "invalid_request_error",
            404: "not_found_error",
            429: "rate_limit_exceeded",
        }.get(status, "server_error")
        error = {"message": message, "type": kind, "param": None, "code": None}
        return Response.json({"error": error}, status=status)

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        return SSEEvent(
            {"error": {"message": message, "type": error_type, "param": None, "code": None}}
        )

    # -- the protocol

    def handle(self, request: RecordedRequest) -> Response:
        route = self._route(request)
        if route is None:
            return self.error_response(404, f"Invalid URL ({request.method} {request.path})")
        api, azure = route
        if azure and "api-version=" not in request.query:
            return self.error_response(404, "Resource not found (no api-version)")
        v1 = request.path.startswith("/openai/v1/")  # Azure's v1 API: OpenAI's shape
        if (azure or v1) and self.azure_token is not None:  # Entra ID: a bearer, no key
            given = request.headers.get("authorization")
            if given != f"Bearer {self.azure_token}" or "api-key" in request.headers:
                return self.error_response(401, "Invalid Entra ID token.")
        else:
            given = request.headers.get("api-key" if azure else "authorization")
            if given != (self.api_key if azure else f"Bearer {self.api_key}"):
                return self.error_response(401, "Incorrect API key provided.")
        if api == "completions":
            return self._text_completion(request.json)
        try:
            self._check(request.json)
        except _Refused as exc:
            return self.error_response(exc.status, str(exc))
        reply = self._replies.popleft() if self._replies else self.default_reply
        body = request.json
        if azure:  # the deployment names the model; the SDK still sends it in the body
            body = {**body, "model": body.get("model") or request.path.split("/")[3]}
        if body.get("stream"):
            usage = (body.get("stream_options") or {}).get("include_usage", False)
            return Response.sse([*self._chunks(reply, body["model"], usage), SSEEvent("[DONE]")])
        return Response.json(self._completion(reply, body["model"]))

    @staticmethod
    def _route(request: RecordedRequest) -> tuple[str, bool] | None:
        """``(api, azure)`` for a POST to OpenAI's ``/v1/{api}`` (or Azure OpenAI's v1 API,
        ``/openai/v1/{api}``, the same shape) or Azure OpenAI's
        ``/openai/deployments/{deployment}/{api}`` (``api``: ``chat/completions`` or the
        text-completion API's ``completions``), or None."""
        if request.method != "POST":
            return None
        parts = request.path.strip("/").split("/")
        if parts[:1] == ["v1"]:
            api, azure = "/".join(parts[1:]), False
        elif parts[:2] == ["openai", "v1"]:
            api, azure = "/".join(parts[2:]), False
        elif parts[:2] == ["openai", "deployments"] and len(parts) > 3:
            api, azure = "/".join(parts[3:]), True
        else:
            return None
        return (api, azure) if api in ("chat/completions", "completions") else None

    def _text_completion(self, body: Any) -> Response:
        """The text-completion API's answer to ``body`` (its ``prompt``): the next reply's
        text, whole or as one streamed chunk per ``chunk_size`` characters."""
        if not isinstance(body, dict) or not body.get("prompt"):
            return self.error_response(400, "'prompt' is a required property")
        reply = self._replies.popleft() if self._replies else self.default_reply
        head = {"id": "cmpl-fake", "object": "text_completion", "created": 1}
        head["model"] = body.get("model", "")
        if not body.get("stream"):
            choice = {"index": 0, "text": reply.text, "logprobs": None, "finish_reason": "stop"}
            return Response.json({**head, "choices": [choice], "usage": self._usage(reply)})
        text, size = reply.text or "", self.chunk_size

        def chunk(piece: str, finish: str | None = None, **extra: Any) -> SSEEvent:
            choice = {"index": 0, "text": piece, "logprobs": None, "finish_reason": finish}
            return SSEEvent({**head, "choices": [choice], **extra})

        events = [chunk(text[i : i + size]) for i in range(0, len(text), size)]
        events.append(chunk("", "stop", usage=self._usage(reply)))
        return Response.sse([*events, SSEEvent("[DONE]")])

    def _finish(self, reply: Reply) -> str:
        return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")

    def _usage(self, reply: Reply) -> dict[str, int]:
        return {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }

    def _completion(self, reply: Reply, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        if reply.tool_calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, n, a in reply.tool_calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": self._finish(reply)}
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1,
            "model": model,
            "choices": [choice],
            "usage": self._usage(reply),
        }

    def _chunks(self, reply: Reply, model: str, usage: bool) -> Iterator[SSEEvent]:
        def chunk(delta: Mapping[str, Any], finish: str | None = None, **extra: Any) -> SSEEvent:
            choices = [{"index": 0, "delta": dict(delta), "finish_reason": finish}]
            head = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1}
            return SSEEvent({**head, "model": model, "choices": choices, **extra})

        yield chunk({"role": "assistant", "content": ""})
        size = self.chunk_size
        thought = reply.reasoning or ""
        for i in range(0, len(thought), size):
            yield chunk({"reasoning_content": thought[i : i + size]})
        text = reply.text or ""
        for i in range(0, len(text), size):
            yield chunk({"content": text[i : i + size]})
        for n, (call_id, name, arguments) in enumerate(reply.tool_calls):
            first = {
                "index": n,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            yield chunk({"tool_calls": [first]})
            raw = json.dumps(arguments)
            for i in range(0, len(raw), size):
                piece = {"index": n, "function": {"arguments": raw[i : i + size]}}
                yield chunk({"tool_calls": [piece]})
        yield chunk({}, self._finish(reply))
        if usage:
            yield SSEEvent(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": model,
                    "choices": [],
                    "usage": self._usage(reply),
                }
            )

    # -- the documented rules

    def _check(self, body: Any) -> None:
        if not isinstance(body, dict):
            raise _Refused("We could not parse the JSON body of your request.")
        unknown = sorted(set(body) - _TOP_LEVEL)
        if unknown:
            raise _Refused(f"Unrecognized request argument supplied: {unknown[0]}")
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise _Refused("you must provide a model parameter")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Refused("'messages' must contain at least one message.")
        calls: set[str] = set()
        for i, message in enumerate(messages):
            role = message.get("role")
            if role not in ("system", "developer", "user", "assistant", "tool"):
                raise _Refused(f"Invalid value for 'messages[{i}].role'.")
            if role == "assistant":
                for call in message.get("tool_calls") or ():
                    calls.add(call["id"])
                    json.loads(call["function"]["arguments"])
            if role == "tool" and message.get("tool_call_id") not in calls:
                raise _Refused(
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            content = message.get("content")
            if isinstance(content, list):
                for j, part in enumerate(content):
                    self._check_part(part, f"messages[{i}].content[{j}]", role)

    def _check_part(self, part: Any, where: str, role: str) -> None:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            return
        if kind == "file" and role == "user":
            self._check_file(part.get("file"), where)
            return
        if kind == "input_audio" and role == "user":
            self._check_audio(part.get("input_audio"), where)
            return
        if kind != "image_url" or role != "user":
            raise _Refused(
                f"Invalid value: '{kind}'. Supported values are: 'text', 'image_url', "
                f"'input_audio' and 'file' ({where})."
            )
        url = str(part.get("image_url", {}).get("url", ""))
        if url.startswith(("http://", "https://")):
            return
        match = _DATA_URL.match(url)
        if match is None:
            raise _Refused(f"Invalid image URL ({where}).")
        try:
            base64.b64decode(match.group(2), validate=True)
        except binascii.Error:
            raise _Refused(f"Invalid base64 image data ({where}).") from None

    def _check_file(self, file: Any, where: str) -> None:
        """OpenAI's file input: a PDF as a base64 data URL, with its filename."""
        if not isinstance(file, dict) or not isinstance(file.get("filename"), str):
            raise _Refused(f"Missing required parameter: 'file.filename' ({where}).")
        data = str(file.get("file_data", ""))
        if not data.startswith("data:application/pdf;base64,") or not _is_base64(
            data.partition(",")[2]
        ):
            raise _Refused(f"Invalid file data: only base64 PDF data URLs ({where}).")

    def _check_audio(self, audio: Any, where: str) -> None:
        """OpenAI's audio input: raw base64 and a format, "wav" or "mp3"."""
        if not isinstance(audio, dict) or audio.get("format") not in ("wav", "mp3"):
            raise _Refused(f"Invalid 'input_audio.format': expected 'wav' or 'mp3' ({where}).")
        if not _is_base64(str(audio.get("data", ""))):
            raise _Refused(f"Invalid 'input_audio.data': expected base64 ({where}).")


def _is_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except binascii.Error:
        return False
    return bool(data)
