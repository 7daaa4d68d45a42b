"""A fake of the Ollama-like service: ``POST /api/chat`` as Ollama's API documentation gives
it, answering JSON or newline-delimited JSON lines; errors are ``{"error": "text"}``."""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

from oma_core.testing import FakeServer, RecordedRequest, Response
from oma_core.testing.fake_server import JSONLine, StreamItem

ROLES = {"system", "user", "assistant", "tool"}
USAGE = {"prompt_eval_count": 12, "eval_count": 5}
_END = {"done": True, "done_reason": "stop", **USAGE}


class FakeNdjsonExample(FakeServer):
    """Replies queued with ``reply``; with none queued, a default text."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._replies: deque[tuple[str, list[dict[str, Any]], dict[str, Any]]] = deque()
        self._lock = threading.Lock()

    def reply(
        self,
        text: str = "",
        calls: list[dict[str, Any]] | None = None,
        *,
        done_reason: str = "stop",
        usage: Mapping[str, int] = USAGE,
    ) -> None:
        """Queue a reply; ``usage`` holds ``prompt_eval_count`` and ``eval_count``."""
        end = {"done": True, "done_reason": done_reason, **usage}
        with self._lock:
            self._replies.append((text, list(calls or ()), end))

    def handle(self, request: RecordedRequest) -> Response:
        if request.method != "POST" or request.path != "/api/chat":
            return self.error_response(404, "404 page not found")
        if request.headers.get("authorization") not in (None, "Bearer test-key"):
            return self.error_response(401, "unauthorized")
        refusal = _refusal(request.json)
        if refusal:
            return self.error_response(400, refusal)
        with self._lock:
            text, calls, end = (
                self._replies.popleft() if self._replies else ("Hello from NDJSON.", [], _END)
            )
        model = request.json["model"]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = calls
        if not request.json.get("stream", True):  # Ollama streams unless told not to
            return Response.json({"model": model, "message": message, **end})
        lines = [_line(model, "")]  # the first line carries no text
        lines += [_line(model, word) for word in re.findall(r"\S+\s*", text)]
        if calls:
            lines.append(_line(model, "", {"tool_calls": calls}))
        lines.append(JSONLine({"model": model, "message": {"role": "assistant", "content": ""},
                               **end}))  # fmt: skip
        return Response.ndjson(lines)

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        return Response.json({"error": message}, status=status)

    def error_event(self, error_type: str, message: str) -> StreamItem:
        return JSONLine({"error": message})  # a text, no type: the service has none


def _line(model: str, content: str, extra: Mapping[str, Any] | None = None) -> JSONLine:
    message = {"role": "assistant", "content": content, **(extra or {})}
    return JSONLine({"model": model, "message": message, "done": False})


def _refusal(body: Any) -> str | None:
    """What the service answers 400 for, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "model is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages are required"
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            return "invalid message role"
        if not isinstance(message.get("content"), str):
            return "message content must be a string"
        if message["role"] == "tool" and not message.get("tool_name"):
            return "a tool message names its tool"
        for image in message.get("images") or ():
            try:
                base64.b64decode(image, validate=True)
            except (binascii.Error, TypeError):
                return "illegal base64 data in images"
        for call in message.get("tool_calls") or ():
            if not isinstance(call.get("function", {}).get("arguments"), dict):
                return "tool call arguments must be an object"
    for tool in body.get("tools") or ():
        if tool.get("type") != "function" or "name" not in tool.get("function", {}):
            return "invalid tool"
    if not isinstance(body.get("options", {}), dict):
        return "options must be an object"
    return None
