"""A fake Bedrock runtime (the Converse API) on 127.0.0.1, written from AWS's documentation.

``POST /model/{modelId}/converse`` answers with the Converse JSON reply;
``POST /model/{modelId}/converse-stream`` with the ``application/vnd.amazon.eventstream``
framing (each frame: a prelude of total and header lengths with its CRC32, typed headers
``:message-type`` / ``:event-type`` / ``:content-type``, a JSON payload, a message CRC32):
``messageStart``, per block ``contentBlockStart`` (tool calls) / ``contentBlockDelta``... /
``contentBlockStop``, ``messageStop``, ``metadata``. Errors carry the ``x-amzn-errortype``
header and a ``{"message"}`` body, with the documented status of each exception; an error
inside a stream is an ``exception`` frame (``:exception-type: throttlingException``, ...).

Every request must be authenticated: a SigV4 ``Authorization`` header that this server
recomputes from the configured credentials (canonical request, string to sign, the derived
signing key; service ``bedrock``, the configured region), or, when ``api_key`` is set, a
Bedrock API key as ``Authorization: Bearer``. The body is checked as the service does: known
top-level fields, alternating roles starting with a user turn, each content block a union with
one known member, image / video / document / audio formats from the documented enums with
bytes that decode (and images whose bytes match their format), media in user turns only,
document names of the allowed characters (at most 200) and unique across the conversation, at
most five documents in a message and a text block beside them, tool calls in assistant turns
and tool results in user turns (and a ``toolConfig`` whenever the conversation holds
either), inference settings of the documented names, a ``toolChoice`` that sets one of
``auto`` / ``any`` / ``tool`` (naming a declared tool), an ``outputConfig.textFormat`` of
type ``json_schema`` whose ``structure.jsonSchema.schema`` is a string holding a JSON object;
``cachePoint`` checkpoints (``{"type": "default"}``, an optional ``ttl`` of ``5m`` or ``1h``) in
``system``, message content and ``toolConfig.tools``, at most four in a request, in tools only for
Claude and anywhere only for Claude and Nova models; reasoning this server signed
(``reply_reasoning``) coming back with its signature and its text unchanged.

Faults come from the kit (``oma_core.testing``) plus three of this wire's own:
``CorruptFrame`` (a frame whose message CRC is wrong), ``Malformed`` (a 200 whose body is not
the documented reply) and ``StreamGarbage`` (bytes that are no frame at all).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import struct
import urllib.parse
import zlib
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from oma_core.testing import FakeServer, Fault, RecordedRequest, Response, SSEEvent

__all__ = [
    "CorruptFrame",
    "EventFrame",
    "FakeBedrock",
    "Malformed",
    "Reply",
    "StreamGarbage",
    "decode_frames",
    "encode_frame",
]

EVENT_STREAM = "application/vnd.amazon.eventstream"
ACCESS_KEY = "AKIAFAKEBEDROCK00001"
SECRET_KEY = "fake-secret-key/for+the+bedrock+fake+server+0001"
REGION = "us-east-1"

#: The documented exceptions of the runtime API: name -> status.
EXCEPTION_STATUS = {
    "ValidationException": 400,
    "UnrecognizedClientException": 401,
    "AccessDeniedException": 403,
    "ResourceNotFoundException": 404,
    "ModelTimeoutException": 408,
    "ModelErrorException": 424,
    "ThrottlingException": 429,
    "InternalServerException": 500,
    "ServiceUnavailableException": 503,
}
_STATUS_EXCEPTION = {status: name for name, status in EXCEPTION_STATUS.items()}
#: Documented: at most four cache checkpoints in a request.
MAX_CHECKPOINTS = 4
_TOP_LEVEL = {
    "messages",
    "system",
    "inferenceConfig",
    "toolConfig",
    "guardrailConfig",
    "additionalModelRequestFields",
    "promptVariables",
    "additionalModelResponseFieldPaths",
    "requestMetadata",
    "performanceConfig",
    "outputConfig",
}
_INFERENCE = {"maxTokens", "temperature", "topP", "stopSequences"}
_IMAGE_FORMATS = {"png", "jpeg", "gif", "webp"}
_VIDEO_FORMATS = {"mkv", "mov", "mp4", "webm", "flv", "mpeg", "mpg", "wmv", "three_gp"}
_DOCUMENT_FORMATS = {"pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"}
_AUDIO_FORMATS = {
    *("mp3", "opus", "wav", "aac", "flac", "mp4", "ogg", "mkv", "mka", "x-aac", "m4a"),
    *("mpeg", "mpga", "pcm", "webm"),
}
#: Documented: up to five documents in a message, each beside a text block.
MAX_DOCUMENTS = 5
_MAGIC = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpeg": (b"\xff\xd8\xff",),
    "gif": (b"GIF87a", b"GIF89a"),
    "webp": (b"RIFF",),
}
DOCUMENT_NAME = re.compile(r"^(?:[A-Za-z0-9\-()\[\]]|\s(?!\s)){1,200}$")
_PATH = re.compile(r"^/model/([^/]+)/(converse|converse-stream)$")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
    r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$"
)


# --------------------------------------------------------------------------- event-stream framing


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    return (
        struct.pack(">B", len(raw_name))
        + raw_name
        + b"\x07"
        + struct.pack(">H", len(raw_value))
        + raw_value
    )


def encode_frame(headers: Mapping[str, str], payload: bytes, *, corrupt: bool = False) -> bytes:
    """One event-stream message: prelude (lengths, CRC32), string headers, payload, CRC32."""
    head = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    crc = zlib.crc32(message) ^ (1 if corrupt else 0)
    return message + struct.pack(">I", crc)


def decode_frames(data: bytes) -> Iterator[tuple[dict[str, str], bytes]]:
    """The frames of ``data`` (for the fake's own tests), checking both checksums."""
    while data:
        total, head_length, prelude_crc = struct.unpack(">III", data[:12])
        assert zlib.crc32(data[:8]) == prelude_crc, "prelude CRC"
        (crc,) = struct.unpack(">I", data[total - 4 : total])
        assert zlib.crc32(data[: total - 4]) == crc, "message CRC"
        head, payload = data[12 : 12 + head_length], data[12 + head_length : total - 4]
        headers: dict[str, str] = {}
        while head:
            n = head[0]
            name = head[1 : 1 + n].decode()
            assert head[1 + n] == 7, "string header"
            (length,) = struct.unpack(">H", head[2 + n : 4 + n])
            headers[name] = head[4 + n : 4 + n + length].decode()
            head = head[4 + n + length :]
        yield headers, payload
        data = data[total:]


@attrs.frozen
class EventFrame(SSEEvent):
    """One event-stream frame as the kit's stream element: ``event`` is the event (or
    exception) type, ``data`` the JSON payload."""

    message_type: str = "event"
    corrupt: bool = False
    raw: bytes | None = None

    def encode(self) -> bytes:
        if self.raw is not None:
            return self.raw
        kind = ":event-type" if self.message_type == "event" else ":exception-type"
        headers = {
            kind: str(self.event),
            ":content-type": "application/json",
            ":message-type": self.message_type,
        }
        payload = json.dumps(self.data, separators=(",", ":")).encode()
        return encode_frame(headers, payload, corrupt=self.corrupt)


# --------------------------------------------------------------------------- faults of this wire


@attrs.frozen
class CorruptFrame(Fault):
    """Send the real stream with the message CRC of frame ``index`` wrong."""

    index: int = 1

    async def apply(self, server: FakeServer, request: RecordedRequest, make: Any) -> Response:
        response: Response = await make()
        events = list(response.events or ())
        events[self.index] = attrs.evolve(events[self.index], corrupt=True)
        return attrs.evolve(response, events=tuple(events))


@attrs.frozen
class StreamGarbage(Fault):
    """Send the real stream's first ``after`` frames, then ``garbage`` bytes as a frame."""

    after: int = 1
    garbage: bytes = b"\x00\x00\x00\x05not a frame at all"

    async def apply(self, server: FakeServer, request: RecordedRequest, make: Any) -> Response:
        response: Response = await make()
        junk = EventFrame(None, raw=self.garbage)
        return attrs.evolve(response, events=(*(response.events or ())[: self.after], junk))


@attrs.frozen
class Malformed(Fault):
    """Answer 200 with ``body`` (not the documented reply), without calling the handler."""

    body: bytes = b"this is not JSON"
    content_type: str = "application/json"

    async def apply(self, server: FakeServer, request: RecordedRequest, make: Any) -> Response:
        return Response.raw(self.body, content_type=self.content_type)


# --------------------------------------------------------------------------- the server


class _Refused(Exception):
    def __init__(self, message: str, name: str = "ValidationException") -> None:
        self.name = name
        super().__init__(message)


@attrs.frozen
class Reply:
    """One scripted assistant turn: Converse content blocks, a stop reason, usage."""

    content: tuple[Mapping[str, Any], ...]
    stop_reason: str = "end_turn"
    input_tokens: int = 11
    output_tokens: int = 7
    #: ``cacheReadInputTokens`` / ``cacheWriteInputTokens`` (not counted in ``inputTokens``);
    #: left out when None.
    cache_read: int | None = None
    cache_write: int | None = None


class FakeBedrock(FakeServer):
    """The Converse API for one set of credentials (``access_key``, ``secret_key``, optional
    ``session_token``) in ``region``; ``api_key`` also accepts that Bedrock API key as a bearer
    token. ``chunk_size`` is how many characters each streamed delta carries."""

    def __init__(
        self,
        *,
        access_key: str = ACCESS_KEY,
        secret_key: str = SECRET_KEY,
        session_token: str | None = None,
        region: str = REGION,
        api_key: str | None = None,
        chunk_size: int = 4,
        response_delay: float = 0.0,
    ) -> None:
        super().__init__(response_delay=response_delay)
        self.access_key = access_key
        self.secret_key = secret_key
        self.session_token = session_token
        self.region = region
        self.api_key = api_key
        self.chunk_size = chunk_size
        self.default_reply = Reply(({"text": "Hello from the fake Converse API."},))
        self._replies: deque[Reply] = deque()
        #: The reasoning this server signed: signature -> text.
        self.signed: dict[str, str] = {}
        #: Model ids the requests named (decoded from the path), in order.
        self.models: list[str] = []

    # -- scripting

    def reply_text(self, text: str, **kwargs: Any) -> None:
        self._replies.append(Reply(({"text": text},), **kwargs))

    def reply_tool_use(self, tool_id: str, name: str, tool_input: Mapping[str, Any]) -> None:
        block = {"toolUse": {"toolUseId": tool_id, "name": name, "input": dict(tool_input)}}
        self._replies.append(Reply((block,), stop_reason="tool_use"))

    def reply_reasoning(
        self, reasoning: str, *then: Mapping[str, Any], stop_reason: str = "end_turn"
    ) -> str:
        """Queue a reply of ``reasoning`` signed by this server (as Claude's thinking is),
        followed by the content blocks ``then``; returns the signature, which must come back
        with the text unchanged."""
        signature = "fake-sig-" + hashlib.sha256((self.secret_key + reasoning).encode()).hexdigest()
        self.signed[signature] = reasoning
        text = {"text": reasoning, "signature": signature}
        self.reply({"reasoningContent": {"reasoningText": text}}, *then, stop_reason=stop_reason)
        return signature

    def reply(self, *content: Mapping[str, Any], **kwargs: Any) -> None:
        """Queue a reply made of Converse content blocks (text, toolUse, reasoningContent)."""
        self._replies.append(Reply(tuple(content), **kwargs))

    # -- the error shapes

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        name = error_type or _STATUS_EXCEPTION.get(
            status, "ServiceUnavailableException" if status >= 500 else "ValidationException"
        )
        headers = {
            "x-amzn-errortype": f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "x-amzn-requestid": "00000000-fake-0000-0000-000000000000",
        }
        return Response.json({"message": message}, status=status, headers=headers)

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        return EventFrame({"message": message}, event=error_type, message_type="exception")

    # -- the protocol

    def handle(self, request: RecordedRequest) -> Response:
        match = _PATH.match(request.path)
        if request.method != "POST" or match is None:
            return self.error_response(
                404,
                f"no such operation: {request.method} {request.path}",
                "UnknownOperationException",
            )
        refusal = self._authenticate(request)
        if refusal is not None:
            return self.error_response(403, refusal, "InvalidSignatureException")
        model = urllib.parse.unquote(match.group(1))
        self.models.append(model)
        try:
            self._check(request.json)
            _check_thinking(model, request.json)
            _check_cache_points(model, request.json)
        except _Refused as exc:
            return self.error_response(EXCEPTION_STATUS.get(exc.name, 400), str(exc), exc.name)
        reply = self._replies.popleft() if self._replies else self.default_reply
        if match.group(2) == "converse":
            return Response.json(self._body(reply))
        return Response(
            headers={"content-type": EVENT_STREAM, "x-amzn-requestid": "fake"},
            events=tuple(self._events(reply)),
        )

    def _body(self, reply: Reply) -> dict[str, Any]:
        return {
            "output": {"message": {"role": "assistant", "content": list(reply.content)}},
            "stopReason": reply.stop_reason,
            "usage": self._usage(reply),
            "metrics": {"latencyMs": 1},
        }

    def _usage(self, reply: Reply) -> dict[str, int]:
        cache = {
            "cacheReadInputTokens": reply.cache_read,
            "cacheWriteInputTokens": reply.cache_write,
        }
        cached = {k: v for k, v in cache.items() if v is not None}
        total = reply.input_tokens + reply.output_tokens + sum(cached.values())
        return {
            "inputTokens": reply.input_tokens,
            "outputTokens": reply.output_tokens,
            "totalTokens": total,
            **cached,
        }

    def _events(self, reply: Reply) -> Iterator[EventFrame]:
        yield EventFrame({"role": "assistant"}, "messageStart")
        size = self.chunk_size
        for index, block in enumerate(reply.content):
            if "text" in block:
                text = block["text"]
                for i in range(0, max(len(text), 1), size):
                    delta = {"contentBlockIndex": index, "delta": {"text": text[i : i + size]}}
                    yield EventFrame(delta, "contentBlockDelta")
            elif "toolUse" in block:
                use = block["toolUse"]
                start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
                yield EventFrame({"contentBlockIndex": index, "start": start}, "contentBlockStart")
                raw = json.dumps(use["input"])
                for i in range(0, len(raw), size):
                    delta = {"toolUse": {"input": raw[i : i + size]}}
                    yield EventFrame(
                        {"contentBlockIndex": index, "delta": delta}, "contentBlockDelta"
                    )
            elif "reasoningContent" in block:
                reasoning = block["reasoningContent"]
                if "redactedContent" in reasoning:
                    delta = {"reasoningContent": {"redactedContent": reasoning["redactedContent"]}}
                    yield EventFrame(
                        {"contentBlockIndex": index, "delta": delta}, "contentBlockDelta"
                    )
                else:
                    text = reasoning["reasoningText"]
                    for i in range(0, len(text["text"]), size):
                        delta = {"reasoningContent": {"text": text["text"][i : i + size]}}
                        yield EventFrame(
                            {"contentBlockIndex": index, "delta": delta}, "contentBlockDelta"
                        )
                    if "signature" in text:
                        delta = {"reasoningContent": {"signature": text["signature"]}}
                        yield EventFrame(
                            {"contentBlockIndex": index, "delta": delta}, "contentBlockDelta"
                        )
            yield EventFrame({"contentBlockIndex": index}, "contentBlockStop")
        yield EventFrame({"stopReason": reply.stop_reason}, "messageStop")
        yield EventFrame({"usage": self._usage(reply), "metrics": {"latencyMs": 1}}, "metadata")

    # -- authentication (SigV4, from the AWS General Reference's signing steps)

    def _authenticate(self, request: RecordedRequest) -> str | None:
        """None when the request is signed for this server's credentials; else why not."""
        header = str(request.headers.get("authorization", ""))
        if header.lower().startswith("bearer "):
            if self.api_key is not None and hmac.compare_digest(header[7:], self.api_key):
                return None
            return "The security token included in the request is invalid."
        match = _AUTH.match(header)
        if match is None:
            return "Missing or malformed SigV4 Authorization header."
        key_id, date, region, service, signed, signature = match.groups()
        amz_date = str(request.headers.get("x-amz-date", ""))
        if key_id != self.access_key:
            return "The security token included in the request is invalid."
        if (region, service) != (self.region, "bedrock") or not amz_date.startswith(date):
            return f"Credential should be scoped to a valid region and service ({region})."
        names = signed.split(";")
        if not {"host", "x-amz-date"} <= set(names):
            return "host and x-amz-date must be signed."
        if self.session_token is not None and (
            request.headers.get("x-amz-security-token") != self.session_token
            or "x-amz-security-token" not in names
        ):
            return "The security token included in the request is invalid."
        canonical_uri = "/".join(
            urllib.parse.quote(segment, safe="-_.~") for segment in request.path.split("/")
        )
        query = "&".join(sorted(p for p in request.query.split("&") if p))
        headers = "".join(
            f"{n}:{' '.join(str(request.headers.get(n, '')).split())}\n" for n in names
        )
        payload = hashlib.sha256(request.body).hexdigest()
        canonical = "\n".join(["POST", canonical_uri, query, headers, signed, payload])
        scope = f"{date}/{region}/{service}/aws4_request"
        to_sign = "\n".join(
            ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
        )
        key = f"AWS4{self.secret_key}".encode()
        for part in (date, region, service, "aws4_request"):
            key = hmac.new(key, part.encode(), hashlib.sha256).digest()
        expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, signature):
            return "The request signature we calculated does not match the signature you provided."
        return None

    # -- the documented rules of the body

    def _check(self, body: Any) -> None:
        if not isinstance(body, dict):
            raise _Refused("The request body must be a JSON object.")
        unknown = set(body) - _TOP_LEVEL
        if unknown:
            raise _Refused(f"Unknown fields: {sorted(unknown)}")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Refused("messages must be a non-empty list.")
        for i, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role != ("user" if i % 2 == 0 else "assistant"):
                raise _Refused(
                    "A conversation must start with a user message and alternate between "
                    "user and assistant roles."
                )
            content = message.get("content")
            if not isinstance(content, list) or not content:
                raise _Refused(f"messages.{i}.content must be a non-empty list.")
            for j, block in enumerate(content):
                self._check_block(block, role, f"messages.{i}.content.{j}")
            documents = [b for b in content if "document" in b]
            if len(documents) > MAX_DOCUMENTS:
                raise _Refused(f"messages.{i}: a message can hold at most 5 documents.")
            if documents and not any("text" in b for b in content):
                raise _Refused(
                    f"messages.{i}: a message with a document must also hold a text block."
                )
        names = [
            str(d["name"]).casefold()
            for message in messages
            for block in message["content"]
            for d in _documents_of(block)
        ]
        if len(names) != len(set(names)):
            raise _Refused(
                "Messages can't contain duplicate document names. Rename the document and "
                "retry your request."
            )
        system = body.get("system")
        if system is not None and not (
            isinstance(system, list)
            and all(isinstance(s, dict) and len(s) == 1 and set(s) <= {"text", "cachePoint"}
                    for s in system)
        ):  # fmt: skip
            raise _Refused("system must be a list of text and cachePoint blocks.")
        inference = body.get("inferenceConfig", {})
        if not isinstance(inference, dict) or set(inference) - _INFERENCE:
            raise _Refused(f"inferenceConfig may hold only {sorted(_INFERENCE)}.")
        tools = body.get("toolConfig")
        uses_tools = any(
            isinstance(block, dict) and ("toolUse" in block or "toolResult" in block)
            for message in messages
            for block in message["content"]
        )
        if uses_tools and tools is None:
            raise _Refused(
                "The toolConfig field must be defined when using toolUse and toolResult "
                "content blocks."
            )
        if tools is not None:
            for tool in tools.get("tools", ()):
                if set(tool) == {"cachePoint"}:
                    continue
                spec = tool.get("toolSpec", {})
                if not isinstance(spec.get("name"), str) or "json" not in spec.get(
                    "inputSchema", {}
                ):
                    raise _Refused("toolConfig.tools[].toolSpec needs a name and inputSchema.json")
            self._check_tool_choice(tools)
        self._check_output_config(body.get("outputConfig"))

    def _check_tool_choice(self, tools: dict[str, Any]) -> None:
        choice = tools.get("toolChoice")
        if choice is None:
            return
        if (
            not isinstance(choice, dict)
            or len(choice) != 1
            or not set(choice)
            <= {
                "auto",
                "any",
                "tool",
            }
        ):
            raise _Refused("toolConfig.toolChoice must set exactly one of auto, any and tool.")
        forced = choice.get("tool")
        if forced is not None:
            names = {t.get("toolSpec", {}).get("name") for t in tools.get("tools", ())}
            if not isinstance(forced, dict) or forced.get("name") not in names:
                raise _Refused("toolConfig.toolChoice.tool.name must name a tool in tools.")

    def _check_output_config(self, config: Any) -> None:
        if config is None:
            return
        if not isinstance(config, dict) or set(config) - {"textFormat", "effort"}:
            raise _Refused("outputConfig may hold only textFormat and effort.")
        text_format = config.get("textFormat")
        if text_format is None:
            return
        if text_format.get("type") != "json_schema" or set(text_format) != {"type", "structure"}:
            raise _Refused("outputConfig.textFormat needs type json_schema and a structure.")
        structure = text_format["structure"]
        if not isinstance(structure, dict) or set(structure) != {"jsonSchema"}:
            raise _Refused("outputConfig.textFormat.structure must set jsonSchema.")
        schema = structure["jsonSchema"]
        if set(schema) - {"schema", "name", "description"} or not isinstance(
            schema.get("schema"), str
        ):
            raise _Refused("outputConfig.textFormat.structure.jsonSchema.schema must be a string.")
        try:
            parsed = json.loads(schema["schema"])
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise _Refused("The provided JSON schema is not a valid JSON object.")

    def _check_block(self, block: Any, role: str, where: str) -> None:
        if not isinstance(block, dict) or len(block) != 1:
            raise _Refused(f"{where} must set exactly one member of the ContentBlock union.")
        ((kind, value),) = block.items()
        if kind == "text":
            if not isinstance(value, str):
                raise _Refused(f"{where}.text must be a string.")
        elif kind in ("image", "video", "document", "audio"):
            if role != "user":
                raise _Refused(f"{where}: {kind} blocks are only allowed in user messages.")
            self._check_media(value, kind, where)
        elif kind == "toolUse":
            if role != "assistant":
                raise _Refused(f"{where}: toolUse is only allowed in assistant messages.")
            if not (
                isinstance(value.get("toolUseId"), str)
                and isinstance(value.get("name"), str)
                and isinstance(value.get("input"), dict)
            ):
                raise _Refused(f"{where}.toolUse needs toolUseId, name and input.")
        elif kind == "toolResult":
            if role != "user":
                raise _Refused(f"{where}: toolResult is only allowed in user messages.")
            if not isinstance(value.get("toolUseId"), str):
                raise _Refused(f"{where}.toolResult needs a toolUseId.")
            if value.get("status", "success") not in ("success", "error"):
                raise _Refused(f"{where}.toolResult.status must be success or error.")
            for k, part in enumerate(value.get("content", ())):
                if not isinstance(part, dict) or len(part) != 1:
                    raise _Refused(f"{where}.toolResult.content.{k} must set one member.")
                ((part_kind, part_value),) = part.items()
                if part_kind in ("image", "video", "document"):
                    self._check_media(part_value, part_kind, f"{where}.toolResult.content.{k}")
                elif part_kind not in ("text", "json"):
                    raise _Refused(f"{where}.toolResult.content.{k}: unknown member {part_kind}.")
        elif kind == "reasoningContent":
            if role != "assistant":
                raise _Refused(f"{where}: reasoningContent is only allowed in assistant messages.")
            if not isinstance(value, dict) or len(value) != 1:
                raise _Refused(f"{where}.reasoningContent must set one member.")
            text = value.get("reasoningText") or {}
            issued = self.signed.get(text.get("signature", ""))
            if issued is not None and issued != text.get("text"):
                raise _Refused(f"{where}: the thinking block was modified; its signature fails.")
        elif kind == "cachePoint":
            pass  # checked with the request's other checkpoints (_check_cache_points)
        else:
            raise _Refused(f"{where}: unknown ContentBlock member {kind}.")

    def _check_media(self, value: Any, kind: str, where: str) -> None:
        formats = {
            "image": _IMAGE_FORMATS,
            "video": _VIDEO_FORMATS,
            "document": _DOCUMENT_FORMATS,
            "audio": _AUDIO_FORMATS,
        }[kind]
        if not isinstance(value, dict) or value.get("format") not in formats:
            raise _Refused(f"{where}.{kind}.format must be one of {sorted(formats)}.")
        if kind == "document" and not DOCUMENT_NAME.match(str(value.get("name", ""))):
            raise _Refused(f"{where}.document.name has characters a name may not hold.")
        source = value.get("source")
        if not isinstance(source, dict) or set(source) != {"bytes"}:
            # S3 locations exist on the real service; no plugin under test sends them
            raise _Refused(f"{where}.{kind}.source must hold bytes.")
        try:
            data = base64.b64decode(source["bytes"], validate=True)
        except (binascii.Error, TypeError):
            raise _Refused(f"{where}.{kind}.source.bytes is not base64.") from None
        if not data:
            raise _Refused(f"{where}.{kind}.source.bytes is empty.")
        magic = _MAGIC.get(value["format"]) if kind == "image" else None
        if magic and not data.startswith(magic):
            raise _Refused(f"{where}: the image bytes are not {value['format']}.")


def _check_cache_points(model: str, body: dict[str, Any]) -> None:
    """Each ``cachePoint`` a ``CachePointBlock`` (type ``default``, ttl ``5m`` or ``1h``), at
    most four in the request, in the places the model caches (tools: Claude only)."""
    points = [("system", s["cachePoint"]) for s in body.get("system") or () if "cachePoint" in s]
    tools = (body.get("toolConfig") or {}).get("tools") or ()
    points += [("tools", t["cachePoint"]) for t in tools if "cachePoint" in t]
    points += [
        ("messages", b["cachePoint"])
        for m in body["messages"]
        for b in m["content"]
        if "cachePoint" in b
    ]
    for _, point in points:
        if not isinstance(point, dict) or point.get("type") != "default":
            raise _Refused("cachePoint.type: Input should be 'default'")
        if set(point) - {"type", "ttl"} or point.get("ttl", "5m") not in ("5m", "1h"):
            raise _Refused("cachePoint.ttl: Input should be '5m' or '1h'")
    if len(points) > MAX_CHECKPOINTS:
        raise _Refused(f"A maximum of {MAX_CHECKPOINTS} cache checkpoints is allowed.")
    claude = "anthropic.claude" in model
    if points and not (claude or "amazon.nova" in model):
        raise _Refused("This model doesn't support prompt caching.")
    if not claude and any(place == "tools" for place, _ in points):
        raise _Refused("Prompt caching of tools is not supported for this model.")
    if not claude and any(p.get("ttl") == "1h" for _, p in points):
        raise _Refused("The 1h cache TTL is not supported for this model.")


def _documents_of(block: Any) -> Iterator[Mapping[str, Any]]:
    """The document members of a content block, and of the parts of a tool result."""
    if "document" in block:
        yield block["document"]
    for part in (block.get("toolResult") or {}).get("content", ()):
        if "document" in part:
            yield part["document"]


#: Per Bedrock's extended and adaptive thinking pages: the Claude models that think adaptively
#: only (and refuse sampling settings), those that think adaptively or by budget, those that
#: cannot think.
_ADAPTIVE_ONLY = re.compile(r".*anthropic\.claude-(opus-4-[78]|(opus|sonnet|haiku|fable)-5|mythos)")
_ADAPTIVE_TOO = re.compile(r".*anthropic\.claude-(opus|sonnet)-4-6")
_NO_THINKING = re.compile(r".*anthropic\.claude-3-(5|haiku|opus|sonnet)")


def _check_thinking(model: str, body: dict[str, Any]) -> None:
    """Claude's ``thinking`` and ``output_config`` in ``additionalModelRequestFields``, each
    model's documented modes and the sampling settings each refuses."""
    fields = body.get("additionalModelRequestFields") or {}
    inference = body.get("inferenceConfig") or {}
    newest = _ADAPTIVE_ONLY.match(model)
    if newest and ({"temperature", "topP"} & set(inference)):
        raise _Refused("temperature and top_p are deprecated for this model.")
    effort = (fields.get("output_config") or {}).get("effort")
    if effort is not None and effort not in ("low", "medium", "high", "xhigh", "max"):
        raise _Refused("output_config.effort: Input should be 'low', 'medium', 'high', ...")
    thinking = fields.get("thinking")
    if thinking is None:
        return
    if "anthropic.claude" not in model:
        raise _Refused("The model returned the following errors: extraneous key [thinking]")
    kind = thinking.get("type")
    if kind == "disabled":
        if newest:
            raise _Refused("thinking.type: 'disabled' is not supported for this model.")
        return
    if _NO_THINKING.match(model):
        raise _Refused("thinking: this model does not support thinking.")
    if kind == "enabled":
        budget = thinking.get("budget_tokens")
        if newest:
            raise _Refused("thinking.type.enabled is not supported for this model; use adaptive.")
        if not isinstance(budget, int) or budget < 1024:
            raise _Refused("thinking.budget_tokens: Input should be >= 1024")
        if budget >= inference.get("maxTokens", 4096):
            raise _Refused("max_tokens must be greater than thinking.budget_tokens.")
    elif kind == "adaptive":
        if not (newest or _ADAPTIVE_TOO.match(model)):
            raise _Refused("thinking.type: adaptive thinking is not supported on this model.")
    else:
        raise _Refused("thinking: Input tag does not match any of the expected tags")
    if inference.get("temperature", 1) != 1:
        raise _Refused("temperature may only be set to 1 when thinking is enabled.")
