"""A fake Anthropic Messages API on 127.0.0.1, written from Anthropic's API documentation.

``POST /v1/messages`` checks what it receives as the real service does and refuses what it
refuses, with the documented error shape (``{"type": "error", "error": {"type", "message"},
"request_id"}``) and status (400 ``invalid_request_error``, 401 ``authentication_error``, 404
``not_found_error``, 413 ``request_too_large``). It answers with scripted replies (text, tool
use, thinking with a signature, redacted thinking) as one JSON message or as the documented
event stream: ``message_start``, per block ``content_block_start`` / ``content_block_delta``... /
``content_block_stop`` (a ``ping`` after the first start), ``message_delta``, ``message_stop``.
Faults come from the kit (``oma_core.testing``): ``HTTPError(429, retry_after=1)``,
``ErrorMidStream()`` (an ``overloaded_error`` event), ``DropConnection``, ...; and from here,
``MalformedReply``: a 200 that cannot be read.

The checks are the documented rules, not whatever the plugin sends: required ``model``,
``max_tokens`` and non-empty ``messages``; roles; images (JPEG, PNG, GIF, WebP whose bytes match
the declared type) in user turns and tool results only; documents (a base64 PDF that starts
``%PDF-``, an http(s) URL, or a ``text/plain`` text source holding a string) likewise;
``tool_use`` in assistant turns and ``tool_result`` in user turns, each result answering a
``tool_use`` of the previous assistant turn and coming before any other block of its turn;
thinking blocks with a signature; no unknown block types (so no ``video`` or ``audio``); no
unknown top-level fields.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import attrs

from oma_core.testing import FakeServer, Fault, RecordedRequest, Response, SSEEvent

__all__ = ["FakeAnthropic", "MalformedReply", "Reply"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_TOP_LEVEL = {
    "model", "messages", "max_tokens", "system", "tools", "tool_choice", "thinking",
    "temperature", "top_p", "top_k", "stop_sequences", "stream", "metadata", "service_tier",
    "container", "mcp_servers", "cache_control", "output_config", "inference_geo",
}  # fmt: skip
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")
_MAX_BODY = 32 * 1024 * 1024


@attrs.frozen
class MalformedReply(Fault):
    """A 200 that cannot be read, instead of the reply: ``kind`` "not_json" (``{not json``),
    "empty" (no body), or "wrong_shape" (JSON that is not a message). A streamed request gets
    the same garbage as the data of a ``message_start`` event."""

    kind: Literal["not_json", "empty", "wrong_shape"] = "not_json"

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: Callable[[], Awaitable[Response]]
    ) -> Response:
        if isinstance(request.json, dict) and request.json.get("stream"):
            data = {"not_json": "{not json", "empty": "", "wrong_shape": "[1, 2, 3]"}[self.kind]
            return Response.sse([SSEEvent(data, "message_start")])
        body = {"not_json": b"{not json", "empty": b"", "wrong_shape": b'{"type": "message"}'}
        return Response.raw(body[self.kind], content_type="application/json")


class _Refused(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        self.status = status
        super().__init__(message)


@attrs.frozen
class Reply:
    """One scripted assistant turn, in the API's response shape (``content`` blocks)."""

    content: tuple[Mapping[str, Any], ...]
    stop_reason: str = "end_turn"
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: More ``usage`` fields, as the API names them (``cache_read_input_tokens``,
    #: ``cache_creation_input_tokens``, ``output_tokens_details``): reported as given.
    usage: Mapping[str, Any] = attrs.field(factory=dict)


class FakeAnthropic(FakeServer):
    """The Messages API. ``api_key`` (if set) is the only key accepted; ``chunk_size`` is how
    many characters each streamed text / thinking / JSON delta carries."""

    def __init__(
        self, *, api_key: str | None = None, chunk_size: int = 4, response_delay: float = 0.0
    ) -> None:
        super().__init__(response_delay=response_delay)
        self.api_key = api_key
        self.chunk_size = chunk_size
        self.default_reply = Reply(({"type": "text", "text": "Hello from the fake Messages API."},))
        self._replies: deque[Reply] = deque()
        self._ids = itertools.count(1)

    # -- scripting

    def reply_text(self, text: str, **kwargs: Any) -> None:
        self._replies.append(Reply(({"type": "text", "text": text},), **kwargs))

    def reply_tool_use(self, tool_id: str, name: str, tool_input: Mapping[str, Any]) -> None:
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": dict(tool_input)}
        self._replies.append(Reply((block,), stop_reason="tool_use"))

    def reply(self, *content: Mapping[str, Any], **kwargs: Any) -> None:
        """Queue a reply made of API-shaped content blocks (text, tool_use, thinking, ...)."""
        self._replies.append(Reply(tuple(content), **kwargs))

    # -- the error shapes

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        kind = error_type or _ERROR_TYPES.get(
            status, "api_error" if status >= 500 else "invalid_request_error"
        )
        request_id = f"req_fake_{next(self._ids)}"
        body = {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": request_id,
        }
        return Response.json(body, status=status, headers={"request-id": request_id})

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        return SSEEvent(
            {"type": "error", "error": {"type": error_type, "message": message}}, "error"
        )

    # -- the protocol

    def handle(self, request: RecordedRequest) -> Response:
        if request.method != "POST" or request.path != "/v1/messages":
            return self.error_response(404, f"Not found: {request.method} {request.path}")
        # The key comes as ``x-api-key`` (the documented header) or, as the 2.x SDK sends it,
        # as ``Authorization: Bearer <key>``; the service accepts either.
        key = request.headers.get("x-api-key")
        bearer = str(request.headers.get("authorization", ""))
        if not key and bearer.lower().startswith("bearer "):
            key = bearer[len("bearer ") :]
        if not key:
            return self.error_response(401, "x-api-key header is required")
        if self.api_key is not None and key != self.api_key:
            return self.error_response(401, "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return self.error_response(400, "anthropic-version: header is required")
        if len(request.body) > _MAX_BODY:
            return self.error_response(413, "Request exceeds the maximum allowed number of bytes.")
        if not isinstance(request.json, dict):
            return self.error_response(400, "The request body is not valid JSON.")
        try:
            _check_body(request.json)
        except _Refused as refused:
            return self.error_response(refused.status, str(refused))
        reply = self._replies.popleft() if self._replies else self.default_reply
        message = self._message(request, reply)
        headers = {"request-id": f"req_fake_{next(self._ids)}"}
        if request.json.get("stream"):
            return Response.sse(self._events(message), headers=headers)
        return Response.json(message, headers=headers)

    def _message(self, request: RecordedRequest, reply: Reply) -> dict[str, Any]:
        text = sum(len(json.dumps(b)) for b in reply.content)
        sent = request.json["messages"]
        return {
            "id": f"msg_fake_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": request.json["model"],
            "content": [dict(b) for b in reply.content],
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": {
                # from the messages alone, so a streamed and a plain request count the same
                "input_tokens": reply.input_tokens or max(1, len(json.dumps(sent)) // 4),
                "output_tokens": reply.output_tokens or max(1, text // 4),
                **reply.usage,
            },
        }

    def _events(self, message: dict[str, Any]) -> Iterator[SSEEvent]:
        start = {**message, "content": [], "stop_reason": None}
        # message_start: the input counts (cache ones too) and one output token so far
        start["usage"] = {
            k: v for k, v in message["usage"].items() if k != "output_tokens_details"
        } | {"output_tokens": 1}
        yield SSEEvent({"type": "message_start", "message": start}, "message_start")
        for index, block in enumerate(message["content"]):
            yield from self._block_events(index, block)
            if index == 0:
                yield SSEEvent({"type": "ping"}, "ping")
        delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        usage = {  # message_delta: the cumulative output counts
            k: v for k, v in message["usage"].items() if k.startswith("output_tokens")
        }
        yield SSEEvent({"type": "message_delta", "delta": delta, "usage": usage}, "message_delta")
        yield SSEEvent({"type": "message_stop"}, "message_stop")

    def _block_events(self, index: int, block: Mapping[str, Any]) -> Iterator[SSEEvent]:
        kind = block["type"]
        if kind == "text":
            start: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in self._pieces(block["text"])]
        elif kind == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            pieces = self._pieces(json.dumps(block["input"]))
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        elif kind == "thinking":
            start = {"type": "thinking", "thinking": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in self._pieces(block["thinking"])
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:  # redacted_thinking and anything else arrive whole in the start event
            start, deltas = dict(block), []
        yield SSEEvent(
            {"type": "content_block_start", "index": index, "content_block": start},
            "content_block_start",
        )
        for delta in deltas:
            yield SSEEvent(
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
        yield SSEEvent({"type": "content_block_stop", "index": index}, "content_block_stop")

    def _pieces(self, text: str) -> list[str]:
        size = self.chunk_size
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]


# --------------------------------------------------------------------------- the checks


def _check_body(body: dict[str, Any]) -> None:
    for key in body:
        if key not in _TOP_LEVEL:
            raise _Refused(f"{key}: Extra inputs are not permitted")
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            raise _Refused(f"{key}: Field required")
    if not isinstance(body["model"], str) or not body["model"]:
        raise _Refused("model: Input should be a valid string")
    max_tokens = body["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise _Refused("max_tokens: Input should be an integer greater than or equal to 1")
    if "stream" in body and not isinstance(body["stream"], bool):
        raise _Refused("stream: Input should be a valid boolean")
    temperature = body.get("temperature", 0.0)
    if not isinstance(temperature, int | float) or not 0.0 <= temperature <= 1.0:
        raise _Refused("temperature: Input should be between 0 and 1")
    stop = body.get("stop_sequences", [])
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise _Refused("stop_sequences: Input should be a valid list of strings")
    if "system" in body:
        _check_system(body["system"])
    if "tools" in body:
        _check_tools(body["tools"])
    _check_tool_choice(body)
    _check_thinking(body)
    if "output_config" in body:
        _check_output_config(body["output_config"])
    _check_cache_controls(body)
    messages = body["messages"]
    if not isinstance(messages, list):
        raise _Refused("messages: Input should be a valid list")
    if not messages:
        raise _Refused("messages: at least one message is required")
    previous_tool_uses: set[str] = set()
    for i, message in enumerate(messages):
        where = f"messages.{i}"
        if not isinstance(message, dict) or set(message) - {"role", "content"}:
            raise _Refused(f"{where}: Input should be an object with role and content")
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise _Refused(f"{where}.role: Input should be 'user' or 'assistant'")
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list) and content:
            blocks = content
        else:
            raise _Refused(f"{where}.content: Input should be a string or a non-empty list")
        answered: set[str] = set()
        seen_other = False
        for j, block in enumerate(blocks):
            kind = _check_block(block, role, f"{where}.content.{j}")
            if kind == "tool_result":
                if seen_other:
                    raise _Refused(
                        f"{where}.content.{j}: tool_result blocks must come before any other "
                        "content in a user message"
                    )
                tool_use_id = block["tool_use_id"]
                if tool_use_id not in previous_tool_uses:
                    raise _Refused(
                        f"{where}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                        f"blocks: {tool_use_id}. Each `tool_result` block must have a "
                        "corresponding `tool_use` block in the previous message."
                    )
                answered.add(tool_use_id)
            else:
                seen_other = True
        if previous_tool_uses - answered and role == "user":
            missing = ", ".join(sorted(previous_tool_uses - answered))
            raise _Refused(
                f"{where}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {missing}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message."
            )
        previous_tool_uses = (
            {b["id"] for b in blocks if b.get("type") == "tool_use"}
            if role == "assistant"
            else set()
        )


#: The most cache breakpoints one request may set (the top-level one included).
MAX_CACHE_CONTROLS = 4


def _check_cache_controls(body: dict[str, Any]) -> None:
    """Each ``cache_control`` is ``{"type": "ephemeral", "ttl"?: "5m" | "1h"}``, and a request
    holds at most four (on tools, system blocks, message blocks and the top level)."""
    found: list[tuple[str, Any]] = []
    if "cache_control" in body:
        found.append(("cache_control", body["cache_control"]))
    for key in ("tools", "system"):
        if isinstance(body.get(key), list):
            for i, item in enumerate(body[key]):
                if isinstance(item, dict) and "cache_control" in item:
                    found.append((f"{key}.{i}.cache_control", item["cache_control"]))
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        for j, block in enumerate(content if isinstance(content, list) else []):
            if isinstance(block, dict) and "cache_control" in block:
                found.append((f"messages.{i}.content.{j}.cache_control", block["cache_control"]))
    for where, control in found:
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            raise _Refused(f"{where}.type: Input should be 'ephemeral'")
        if set(control) - {"type", "ttl"} or control.get("ttl", "5m") not in ("5m", "1h"):
            raise _Refused(f"{where}: Input should be {{type: 'ephemeral', ttl?: '5m' | '1h'}}")
    if len(found) > MAX_CACHE_CONTROLS:
        raise _Refused(
            f"A maximum of {MAX_CACHE_CONTROLS} blocks with cache_control may be provided. "
            f"Found {len(found)}."
        )


def _check_tool_choice(body: dict[str, Any]) -> None:
    """A forced choice names a tool the request has; extended thinking refuses one."""
    choice = body.get("tool_choice")
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise _Refused("tool_choice: Input tag does not match any of the expected tags")
    if kind == "tool":
        names = {t.get("name") for t in body.get("tools") or () if isinstance(t, dict)}
        if choice.get("name") not in names:
            raise _Refused(f"tool_choice.name: tool {choice.get('name')!r} not found in tools")
    thinking = body.get("thinking")
    forced = kind in ("any", "tool")
    if forced and isinstance(thinking, dict) and thinking.get("type") != "disabled":
        raise _Refused("Thinking may not be enabled when tool_choice forces tool use.")


#: Per the models and thinking documentation: the models that think adaptively only (and refuse
#: sampling settings), those that think adaptively or by budget, those that cannot think.
_ADAPTIVE_ONLY = re.compile(r"claude-(opus-4-[78]|(opus|sonnet|haiku|fable|mythos)-5|mythos)")
_ADAPTIVE_TOO = re.compile(r"claude-(opus|sonnet)-4-6")
_ONE_SAMPLER = re.compile(r"claude-(opus|sonnet|haiku)-4-[56]|claude-opus-4-1")
_NO_THINKING = re.compile(r"claude-3-(5|haiku|opus|sonnet)")
_EFFORTS = ("low", "medium", "high", "xhigh", "max")


def _check_thinking(body: dict[str, Any]) -> None:
    """``thinking`` as ``ThinkingConfigParam`` types it, each model's documented modes, the
    sampling settings each refuses, and ``output_config.effort``'s values."""
    model, thinking = body["model"], body.get("thinking")
    newest = _ADAPTIVE_ONLY.match(model)
    for key in ("temperature", "top_p", "top_k"):
        if newest and key in body:
            raise _Refused(f"`{key}` is deprecated for this model.")
    if _ONE_SAMPLER.match(model) and "temperature" in body and "top_p" in body:
        raise _Refused("`temperature` and `top_p` cannot both be specified for this model.")
    effort = (body.get("output_config") or {}).get("effort")
    if effort is not None and effort not in _EFFORTS:
        raise _Refused("output_config.effort: Input should be 'low', 'medium', 'high', ...")
    if thinking is None:
        return
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind not in ("enabled", "disabled", "adaptive", "between_tools"):
        raise _Refused("thinking: Input tag does not match any of the expected tags")
    if kind == "disabled":
        if newest:
            raise _Refused("thinking.type: 'disabled' is not supported for this model.")
        return
    if _NO_THINKING.match(model):
        raise _Refused(f"thinking: {model} does not support thinking.")
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if newest:
            raise _Refused("thinking.type.enabled is not supported for this model; use adaptive.")
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1024:
            raise _Refused("thinking.enabled.budget_tokens: Input should be >= 1024")
        if budget >= body["max_tokens"]:
            raise _Refused("`max_tokens` must be greater than `thinking.budget_tokens`.")
    elif kind == "adaptive" and not (newest or _ADAPTIVE_TOO.match(model)):
        raise _Refused(f"thinking.type: adaptive thinking is not supported on {model}.")
    if body.get("temperature", 1) != 1:
        raise _Refused("`temperature` may only be set to 1 when thinking is enabled.")
    if "top_k" in body:
        raise _Refused("`top_k` is not supported when thinking is enabled.")


def _check_output_config(config: Any) -> None:
    """``output_config.format`` as structured outputs take it: ``json_schema`` with an object
    schema whose every object sets ``additionalProperties: false``."""
    if not isinstance(config, dict) or set(config) - {"effort", "format"}:
        raise _Refused("output_config: Extra inputs are not permitted")
    form = config.get("format")
    if form is None:
        return
    if (
        not isinstance(form, dict)
        or form.get("type") != "json_schema"
        or set(form)
        != {
            "type",
            "schema",
        }
    ):
        raise _Refused("output_config.format: Input should be a json_schema format")
    schema = form["schema"]
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise _Refused("output_config.format.schema: Invalid schema: the root must be an object")
    _check_closed(schema, "output_config.format.schema")


_UNSUPPORTED = ("minimum", "maximum", "minLength", "maxLength", "pattern", "default")


def _check_closed(node: Any, where: str) -> None:
    if isinstance(node, list):
        for item in node:
            _check_closed(item, where)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "object" and node.get("additionalProperties") is not False:
        raise _Refused(
            f"{where}: Invalid schema: For 'object' type, 'additionalProperties' must be "
            "explicitly set to false"
        )
    for key in _UNSUPPORTED:
        if key in node:
            raise _Refused(f"{where}: Invalid schema: '{key}' is not supported")
    for key in ("properties", "$defs"):
        for sub in (node.get(key) or {}).values():
            _check_closed(sub, where)
    for key in ("items", "anyOf", "allOf"):
        if key in node:
            _check_closed(node[key], where)


def _check_system(system: Any) -> None:
    if isinstance(system, str):
        return
    if isinstance(system, list) and all(
        isinstance(b, dict) and b.get("type") == "text" for b in system
    ):
        return
    raise _Refused("system: Input should be a string or a list of text blocks")


def _check_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise _Refused("tools: Input should be a valid list")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise _Refused(f"tools.{i}: Input should be an object")
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise _Refused(
                f"tools.{i}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
            )
        if name in names:
            raise _Refused("tools: Tool names must be unique.")
        names.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise _Refused(f"tools.{i}.input_schema.type: Input should be 'object'")
        if "description" in tool and not isinstance(tool["description"], str):
            raise _Refused(f"tools.{i}.description: Input should be a valid string")


def _check_block(block: Any, role: str, where: str) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise _Refused(f"{where}: Input should be a content block object with a type")
    kind = block["type"]
    if kind == "text":
        _fields(block, where, {"text"}, {"citations", "cache_control"})
        if not isinstance(block["text"], str) or not block["text"]:
            raise _Refused(f"{where}.text: text content blocks must be non-empty")
        if not block["text"].strip():
            raise _Refused(f"{where}.text: text content blocks must contain non-whitespace text")
    elif kind == "image":
        if role != "user":
            raise _Refused(f"{where}: image content blocks are only allowed in user messages")
        _fields(block, where, {"source"}, {"cache_control"})
        _check_image_source(block["source"], f"{where}.source")
    elif kind == "document":
        if role != "user":
            raise _Refused(f"{where}: document content blocks are only allowed in user messages")
        _fields(block, where, {"source"}, {"title", "context", "citations", "cache_control"})
        for name in ("title", "context"):
            if not isinstance(block.get(name, ""), str | None):
                raise _Refused(f"{where}.{name}: Input should be a valid string")
        _check_document_source(block["source"], f"{where}.source")
    elif kind == "tool_use":
        if role != "assistant":
            raise _Refused(f"{where}: tool_use blocks are only allowed in assistant messages")
        _fields(block, where, {"id", "name", "input"}, {"cache_control"})
        if not isinstance(block["input"], dict):
            raise _Refused(f"{where}.input: Input should be a valid dictionary")
        if not isinstance(block["id"], str) or not isinstance(block["name"], str):
            raise _Refused(f"{where}: id and name should be strings")
    elif kind == "tool_result":
        if role != "user":
            raise _Refused(f"{where}: tool_result blocks are only allowed in user messages")
        _fields(block, where, {"tool_use_id"}, {"content", "is_error", "cache_control"})
        if not isinstance(block.get("is_error", False), bool):
            raise _Refused(f"{where}.is_error: Input should be a valid boolean")
        content = block.get("content", "")
        if isinstance(content, list):
            for k, part in enumerate(content):
                part_kind = _check_block(part, "user", f"{where}.content.{k}")
                if part_kind not in ("text", "image", "document", "search_result"):
                    raise _Refused(
                        f"{where}.content.{k}.type: Input tag '{part_kind}' is not allowed in "
                        "tool_result content"
                    )
        elif not isinstance(content, str):
            raise _Refused(f"{where}.content: Input should be a string or a list")
    elif kind == "thinking":
        if role != "assistant":
            raise _Refused(f"{where}: thinking blocks are only allowed in assistant messages")
        _fields(block, where, {"thinking", "signature"}, set())
        if not isinstance(block["signature"], str) or not block["signature"]:
            raise _Refused(f"{where}.signature: Invalid `signature` in `thinking` block")
    elif kind == "redacted_thinking":
        if role != "assistant":
            raise _Refused(
                f"{where}: redacted_thinking blocks are only allowed in assistant messages"
            )
        _fields(block, where, {"data"}, set())
    else:
        expected = (
            "'text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', "
            "'redacted_thinking'"
        )
        raise _Refused(
            f"{where}.type: Input tag '{kind}' found using 'type' does not match any of the "
            f"expected tags: {expected}"
        )
    return kind


def _fields(block: Mapping[str, Any], where: str, required: set[str], optional: set[str]) -> None:
    for name in sorted(required):
        if name not in block:
            raise _Refused(f"{where}.{name}: Field required")
    extra = set(block) - required - optional - {"type"}
    if extra:
        raise _Refused(f"{where}.{sorted(extra)[0]}: Extra inputs are not permitted")


def _check_image_source(source: Any, where: str) -> None:
    if not isinstance(source, dict):
        raise _Refused(f"{where}: Input should be an object")
    kind = source.get("type")
    if kind == "url":
        _fields(source, where, {"url"}, set())
        if not re.match(r"^https?://", str(source["url"])):
            raise _Refused(f"{where}.url: Only HTTP(S) URLs are supported")
        return
    if kind != "base64":
        raise _Refused(f"{where}.type: Input tag '{kind}' does not match 'base64', 'url', 'file'")
    _fields(source, where, {"media_type", "data"}, set())
    media_type = source["media_type"]
    if media_type not in _IMAGE_TYPES:
        raise _Refused(
            f"{where}.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or "
            "'image/webp'"
        )
    data = _decode(source["data"], where)
    if not data.startswith(_MAGIC[media_type]):
        raise _Refused(f"{where}: Image does not match the provided media type {media_type}")


def _check_document_source(source: Any, where: str) -> None:
    if not isinstance(source, dict):
        raise _Refused(f"{where}: Input should be an object")
    kind = source.get("type")
    if kind == "url":
        _fields(source, where, {"url"}, set())
        if not re.match(r"^https?://", str(source["url"])):
            raise _Refused(f"{where}.url: Only HTTP(S) URLs are supported")
        return
    if kind == "text":
        _fields(source, where, {"media_type", "data"}, set())
        if source["media_type"] != "text/plain":
            raise _Refused(f"{where}.media_type: Input should be 'text/plain'")
        if not isinstance(source["data"], str):
            raise _Refused(f"{where}.data: Input should be a valid string")
        return
    if kind != "base64":
        raise _Refused(f"{where}.type: Input tag '{kind}' does not match 'base64', 'text', 'url'")
    _fields(source, where, {"media_type", "data"}, set())
    if source["media_type"] != "application/pdf":
        raise _Refused(f"{where}.media_type: Input should be 'application/pdf'")
    if not _decode(source["data"], where).startswith(b"%PDF-"):
        raise _Refused(f"{where}: The PDF specified was not valid.")


def _decode(data: Any, where: str) -> bytes:
    if not isinstance(data, str) or not data:
        raise _Refused(f"{where}.data: Input should be a non-empty string")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise _Refused(f"{where}.data: invalid base64 data") from None


def sent_messages(request: RecordedRequest) -> Sequence[dict[str, Any]]:
    """The ``messages`` of a recorded request, as the server received them."""
    return request.json["messages"]  # type: ignore[no-any-return]
