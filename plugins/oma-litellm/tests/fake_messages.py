"""A small fake Anthropic Messages API on 127.0.0.1, written from Anthropic's API reference.

``POST /v1/messages`` with ``x-api-key`` and ``anthropic-version`` answers with a ``message``
object, or with ``stream: true`` the documented events (``message_start``, per block
``content_block_start`` / ``content_block_delta``... / ``content_block_stop``,
``message_delta`` with the stop reason and output tokens, ``message_stop``). Errors have the
documented ``{"type": "error", "error": {"type", "message"}}`` shape. It refuses what the
service refuses: a missing ``model`` or ``max_tokens``, no messages, roles other than user and
assistant, block types it does not have, images of other media types, ``tool_result`` blocks
that answer no ``tool_use`` of the previous assistant turn, unknown top-level fields.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from oma_core.testing import FakeServer, RecordedRequest, Response, SSEEvent

__all__ = ["ISSUED", "FakeMessages", "MessagesReply"]

#: What the thinking signatures this server verifies start with: one of that form it did not
#: issue (an altered one) is refused, as the service refuses a signature it cannot verify.
ISSUED = "fake-messages-signature:"

_TOP_LEVEL = {
    "model",
    "messages",
    "max_tokens",
    "system",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "top_k",
    "stop_sequences",
    "stream",
    "metadata",
    "thinking",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}


class _Refused(Exception):
    pass


@attrs.frozen
class MessagesReply:
    """One scripted assistant turn in the API's ``content`` shape."""

    content: tuple[Mapping[str, Any], ...]
    stop_reason: str = "end_turn"
    input_tokens: int = 13
    output_tokens: int = 6
    #: ``cache_read_input_tokens`` / ``cache_creation_input_tokens``, counted apart from
    #: ``input_tokens`` as the API does; left out when 0.
    cache_read: int = 0
    cache_write: int = 0


def _input_usage(reply: MessagesReply) -> dict[str, int]:
    usage = {"input_tokens": reply.input_tokens}
    if reply.cache_read:
        usage["cache_read_input_tokens"] = reply.cache_read
    if reply.cache_write:
        usage["cache_creation_input_tokens"] = reply.cache_write
    return usage


class FakeMessages(FakeServer):
    def __init__(self, *, api_key: str = "test-key", chunk_size: int = 4) -> None:
        super().__init__()
        self.api_key = api_key
        self.chunk_size = chunk_size
        self.default_reply = MessagesReply(({"type": "text", "text": "Hello from Messages."},))
        self._replies: deque[MessagesReply] = deque()
        #: The thinking signatures this server issued (those starting with ``ISSUED``).
        self.issued: set[str] = set()

    def reply_text(self, text: str) -> None:
        self._replies.append(MessagesReply(({"type": "text", "text": text},)))

    def reply_tool_use(self, tool_id: str, name: str, tool_input: Mapping[str, Any]) -> None:
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": dict(tool_input)}
        self._replies.append(MessagesReply((block,), stop_reason="tool_use"))

    def reply(self, reply: MessagesReply) -> None:
        self._replies.append(reply)

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        kind = error_type or _ERROR_TYPES.get(status, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": message}}
        return Response.json(body, status=status)

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        return SSEEvent(
            {"type": "error", "error": {"type": error_type, "message": message}}, "error"
        )

    def handle(self, request: RecordedRequest) -> Response:
        if request.method != "POST" or request.path != "/v1/messages":
            return self.error_response(404, f"Not found: {request.path}")
        if request.headers.get("x-api-key") != self.api_key:
            return self.error_response(401, "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return self.error_response(400, "anthropic-version header is required")
        try:
            self._check(request.json)
        except _Refused as exc:
            return self.error_response(400, str(exc))
        reply = self._replies.popleft() if self._replies else self.default_reply
        for block in reply.content:
            signature = block.get("signature")
            if isinstance(signature, str) and signature.startswith(ISSUED):
                self.issued.add(signature)
        if request.json.get("stream"):
            return Response.sse(self._events(reply, request.json["model"]))
        return Response.json(self._message(reply, request.json["model"]))

    def _message(self, reply: MessagesReply, model: str) -> dict[str, Any]:
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": list(reply.content),
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": {**_input_usage(reply), "output_tokens": reply.output_tokens},
        }

    def _events(self, reply: MessagesReply, model: str) -> Iterator[SSEEvent]:
        start = {**self._message(reply, model), "content": [], "stop_reason": None}
        start["usage"] = {**_input_usage(reply), "output_tokens": 1}
        yield SSEEvent({"type": "message_start", "message": start}, "message_start")
        size = self.chunk_size
        for index, block in enumerate(reply.content):
            if block["type"] == "text":
                first = {"type": "text", "text": ""}
                pieces = [
                    {"type": "text_delta", "text": block["text"][i : i + size]}
                    for i in range(0, len(block["text"]), size)
                ]
            elif block["type"] == "thinking":  # the text in pieces, then its signature whole
                first = {"type": "thinking", "thinking": "", "signature": ""}
                pieces = [
                    {"type": "thinking_delta", "thinking": block["thinking"][i : i + size]}
                    for i in range(0, len(block["thinking"]), size)
                ]
                pieces.append({"type": "signature_delta", "signature": block["signature"]})
            elif block["type"] == "redacted_thinking":
                first, pieces = dict(block), []
            else:
                first = {**block, "input": {}}
                raw = json.dumps(block["input"])
                pieces = [
                    {"type": "input_json_delta", "partial_json": raw[i : i + size]}
                    for i in range(0, len(raw), size)
                ]
            yield SSEEvent(
                {"type": "content_block_start", "index": index, "content_block": first},
                "content_block_start",
            )
            for delta in pieces:
                yield SSEEvent(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            yield SSEEvent({"type": "content_block_stop", "index": index}, "content_block_stop")
        yield SSEEvent(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
            "message_delta",
        )
        yield SSEEvent({"type": "message_stop"}, "message_stop")

    def _check(self, body: Any) -> None:
        if not isinstance(body, dict):
            raise _Refused("the body must be a JSON object")
        unknown = sorted(set(body) - _TOP_LEVEL)
        if unknown:
            raise _Refused(f"{unknown[0]}: Extra inputs are not permitted")
        if not isinstance(body.get("model"), str) or not isinstance(body.get("max_tokens"), int):
            raise _Refused("model and max_tokens are required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Refused("messages: at least one message is required")
        previous_calls: set[str] = set()
        for i, message in enumerate(messages):
            role = message.get("role")
            if role not in ("user", "assistant"):
                raise _Refused(f"messages.{i}.role: Input should be 'user' or 'assistant'")
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            calls: set[str] = set()
            for j, block in enumerate(blocks):
                kind = block.get("type")
                where = f"messages.{i}.content.{j}"
                if kind == "image":
                    if role != "user" or block["source"].get("media_type", "image/png") not in (
                        _IMAGE_TYPES
                    ):
                        raise _Refused(f"{where}: bad image")
                elif kind == "document":
                    source = block.get("source", {})
                    pdf = source.get("type") == "base64" and source.get("media_type") == (
                        "application/pdf"
                    )
                    if role != "user" or not (pdf or source.get("type") in ("url", "text")):
                        raise _Refused(f"{where}: bad document")
                elif kind == "tool_use":
                    if role != "assistant":
                        raise _Refused(f"{where}: tool_use is only allowed in assistant turns")
                    calls.add(block["id"])
                elif kind == "tool_result":
                    if role != "user" or block.get("tool_use_id") not in previous_calls:
                        raise _Refused(f"{where}: tool_result answers no tool_use")
                elif kind in ("thinking", "redacted_thinking"):
                    key = "signature" if kind == "thinking" else "data"
                    if role != "assistant" or not isinstance(block.get(key), str):
                        raise _Refused(f"{where}.{key}: Field required")
                    if block[key].startswith(ISSUED) and block[key] not in self.issued:
                        raise _Refused(f"{where}: Invalid `signature` in `thinking` block")
                elif kind != "text":
                    raise _Refused(f"{where}.type: Input tag '{kind}' is not a block type")
            previous_calls = calls
