"""A fake Gemini API on 127.0.0.1, written from the Gemini API reference (``generateContent``).

``POST {prefix}/{version}/models/{model}:generateContent`` answers one
``GenerateContentResponse``; ``:streamGenerateContent?alt=sse`` streams whole
``GenerateContentResponse`` objects, one per ``data:`` event, with no end marker (the last
carries ``finishReason`` and the full ``usageMetadata``); without ``alt=sse`` it answers them
as one JSON array. Any path prefix and API version (``v1``, ``v1beta``, ``v1alpha``) is
taken, as are snake_case and camelCase field names (the API's JSON mapping accepts both).
The key is read from ``x-goog-api-key`` (or ``?key=``).

It refuses what the service refuses, with Google's error shape ``{"error": {"code",
"message", "status"}}``: unknown fields, a part with no data or two, an unsupported
``mimeType``, invalid base64, inline data over the request limit (100 MB since January 2026),
a ``fileUri`` that is neither https (File API URIs, public and signed URLs) nor a YouTube link,
an external URL without its ``mimeType``, a ``functionResponse`` turn that does not follow a
``functionCall`` turn with as many calls, roles other than ``user`` and ``model``, a
``responseJsonSchema`` without ``responseMimeType: application/json`` (or beside
``responseSchema``), a ``functionCallingConfig`` of an unknown mode or naming a function that
is not declared, a declaration with both ``parameters`` and ``parametersJsonSchema``. Replies are
queued with ``reply(Reply(...))`` (``default_reply`` when none is queued); a reply may finish
with any ``finishReason`` or be a blocked prompt. The first streamed event carries an empty
text part (no text), as a thinking model's first chunk can. Faults come from
``oma_core.testing.fake_server``.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections import deque
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from oma_core.testing import FakeServer, RecordedRequest, Response, SSEEvent

__all__ = ["API_KEY", "FakeGemini", "Reply"]

API_KEY = "test-key"
#: The API's limit on a request's inline data (decoded bytes; 100 MB since January 2026).
INLINE_LIMIT = 100 * 1000 * 1000

_PATH = re.compile(
    r"^(?P<prefix>(?:/[^/]+)*?)/(?P<version>v\d+(?:alpha|beta)?)/models/"
    r"(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$"
)
_TOP_LEVEL = frozenset(
    {
        "contents",
        "systemInstruction",
        "tools",
        "toolConfig",
        "safetySettings",
        "generationConfig",
        "cachedContent",
        "labels",
    }
)
_GENERATION_CONFIG = frozenset(
    {
        "temperature",
        "maxOutputTokens",
        "stopSequences",
        "topP",
        "topK",
        "candidateCount",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "responseLogprobs",
        "logprobs",
        "thinkingConfig",
        "responseModalities",
        "mediaResolution",
        "speechConfig",
    }
)
_DATA_FIELDS = (
    "text",
    "inlineData",
    "fileData",
    "functionCall",
    "functionResponse",
    "executableCode",
    "codeExecutionResult",
)
_PART_FIELDS = frozenset({*_DATA_FIELDS, "thought", "thoughtSignature", "videoMetadata"})
_MIME_TYPES = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/webp",
        "image/heic",
        "image/heif",
        "video/mp4",
        "video/mpeg",
        "video/mov",
        "video/avi",
        "video/x-flv",
        "video/mpg",
        "video/webm",
        "video/wmv",
        "video/3gpp",
        "application/pdf",
        "text/plain",
        "text/markdown",
        "text/md",
        "text/csv",
        "text/html",
        "text/xml",
        "text/css",
        "text/rtf",
        "text/javascript",
        "text/x-python",
        "audio/wav",
        "audio/mp3",
        "audio/aiff",
        "audio/aac",
        "audio/ogg",
        "audio/flac",
    }
)
_YOUTUBE = re.compile(
    r"https?://(?:www\.|m\.)?(?:youtube\.com/(?:watch\?v=|shorts/)|youtu\.be/)"
    r"[\w-]+"
)
_FILE_URI = re.compile(r"https://generativelanguage\.googleapis\.com/v\d+\w*/files/[\w-]+")
# Values the API treats as data, whose keys are not field names.
_OPAQUE = frozenset(
    {
        "args",
        "response",
        "parameters",
        "responseSchema",
        "responseJsonSchema",
        "parametersJsonSchema",
        "labels",
    }
)
_WORDS = re.compile(r"\S+\s*|\s+")
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@attrs.frozen
class Reply:
    """One scripted model turn: text, function calls ``(id or None, name, args)``, thought
    summaries (sent before the text, marked ``thought``), a thought signature (on the first
    part), a ``finishReason``, token counts, or a blocked prompt (``block_reason``)."""

    text: str = "Hello from the fake Gemini."
    calls: tuple[tuple[str | None, str, dict[str, Any]], ...] = ()
    thoughts: str | None = None
    signature: str | None = None
    #: The signature on the thought part itself (a thought summary Gemini signed), not on the
    #: part after it.
    signed_thought: bool = False
    finish_reason: str = "STOP"
    prompt_tokens: int = 9
    output_tokens: int = 6
    thoughts_tokens: int = 0
    #: ``cachedContentTokenCount`` (a part of ``promptTokenCount``) and
    #: ``toolUsePromptTokenCount``; left out when 0.
    cached_tokens: int = 0
    tool_use_tokens: int = 0
    block_reason: str | None = None


class _Refused(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.status = message, status


def camel(value: Any) -> Any:
    """``value`` with snake_case field names camelCased (data values left as they are)."""
    if isinstance(value, list):
        return [camel(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        name = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
        out[name] = item if name in _OPAQUE else camel(item)
    return out


#: What the thought signatures this server verifies start with.
ISSUED = "fake-gemini-signature:"


class FakeGemini(FakeServer):
    """The fake Gemini API; ``url + "/v1beta"`` (or any prefix and version) is a base URL."""

    def __init__(self, *, api_key: str = API_KEY, response_delay: float = 0.0) -> None:
        super().__init__(response_delay=response_delay)
        self.api_key = api_key
        self.default_reply = Reply()
        self._replies: deque[Reply] = deque()
        self._replies_lock = threading.Lock()
        #: The thought signatures this server issued (``Reply.signature`` starting with
        #: ``ISSUED``): one of that form that comes back altered is refused, as the service
        #: refuses a signature it cannot verify.
        self.issued: set[str] = set()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1beta"

    def reply(self, *replies: Reply) -> None:
        with self._replies_lock:
            self._replies.extend(replies)

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        error = {
            "code": status,
            "message": message,
            "status": error_type or _STATUS.get(status, "UNKNOWN"),
        }
        return Response.json({"error": error}, status=status)

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        code = {v: k for k, v in _STATUS.items()}.get(error_type, 500)
        return SSEEvent({"error": {"code": code, "message": message, "status": error_type}})

    # -- the wire

    def handle(self, request: RecordedRequest) -> Response:
        match = _PATH.match(request.path)
        if request.method != "POST" or match is None:
            return self.error_response(404, f"Method not found: {request.path}")
        query = parse_qs(request.query)
        key = request.headers.get("x-goog-api-key") or next(iter(query.get("key", [])), None)
        if key != self.api_key:
            return self.error_response(400, "API key not valid. Please pass a valid API key.")
        try:
            if not isinstance(request.json, dict):
                raise _Refused("Invalid JSON payload received.")
            self._check(camel(request.json), len(request.body))
            _check_thinking(match["model"], camel(request.json))
            self._check_issued(camel(request.json))
        except _Refused as refused:
            return self.error_response(refused.status, refused.message)
        with self._replies_lock:
            reply = self._replies.popleft() if self._replies else self.default_reply
            if reply.signature and reply.signature.startswith(ISSUED):
                self.issued.add(reply.signature)
        model = match["model"]
        if match["method"] == "generateContent":
            return Response.json(self._whole(reply, model))
        chunks = self._chunks(reply, model)
        if query.get("alt") == ["sse"]:
            return Response.sse(SSEEvent(c) for c in chunks)
        return Response.json(chunks)

    def _check_issued(self, body: dict[str, Any]) -> None:
        for content in body.get("contents") or ():
            for part in content.get("parts") or ():
                signature = part.get("thoughtSignature")
                forged = isinstance(signature, str) and signature.startswith(ISSUED)
                if forged and signature not in self.issued:
                    raise _Refused("Corrupted thought signature.")

    def _check(self, body: dict[str, Any], size: int) -> None:
        for key in body:
            if key not in _TOP_LEVEL:
                raise _Refused(
                    f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'
                )
        if size > INLINE_LIMIT * 2:
            raise _Refused("Request payload size exceeds the limit.", 413)
        config = body.get("generationConfig") or {}
        for key in config:
            if key not in _GENERATION_CONFIG:
                raise _Refused(f"Unknown name \"{key}\" at 'generation_config'")
        if len(config.get("stopSequences") or ()) > 5:
            raise _Refused("stopSequences: at most 5")
        system = body.get("systemInstruction")
        if system is not None:
            for part in system.get("parts") or ():
                if set(part) != {"text"}:
                    raise _Refused("systemInstruction parts must be text")
        declared: set[str] = set()
        for tool in body.get("tools") or ():
            for declaration in tool.get("functionDeclarations") or ():
                if not re.fullmatch(r"[A-Za-z_][\w.:-]{0,63}", declaration.get("name", "")):
                    raise _Refused("function_declarations[].name: invalid")
                if "parameters" in declaration and "parametersJsonSchema" in declaration:
                    raise _Refused(
                        "function_declarations[].parameters and parameters_json_schema are "
                        "mutually exclusive"
                    )
                declared.add(declaration["name"])
        self._check_output_settings(config, body.get("toolConfig") or {}, declared)
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            raise _Refused("* GenerateContentRequest.contents: contents is not specified")
        inline = 0
        calls = 0
        for i, content in enumerate(contents):
            role = content.get("role", "user")
            if role not in ("user", "model"):
                raise _Refused(f"Please use a valid role: user, model. (contents[{i}])")
            parts = content.get("parts")
            if not isinstance(parts, list) or not parts:
                raise _Refused(
                    f"* GenerateContentRequest.contents[{i}].parts: contents.parts "
                    "must not be empty."
                )
            responses = 0
            for j, part in enumerate(parts):
                inline += self._check_part(part, role, f"contents[{i}].parts[{j}]")
                responses += "functionResponse" in part
            if responses and responses != calls:
                raise _Refused(
                    "Please ensure that the number of function response parts is "
                    "equal to the number of function call parts of the function "
                    "call turn."
                )
            calls = sum("functionCall" in p for p in parts) if role == "model" else 0
        if inline > INLINE_LIMIT:
            raise _Refused("Request payload size exceeds the limit: 104857600 bytes.", 400)

    def _check_output_settings(
        self, config: dict[str, Any], tool_config: dict[str, Any], declared: set[str]
    ) -> None:
        if "responseJsonSchema" in config:
            if "responseSchema" in config:
                raise _Refused("response_schema and response_json_schema cannot both be set")
            if config.get("responseMimeType") != "application/json":
                raise _Refused("response_json_schema requires response_mime_type application/json")
        unknown = sorted(set(tool_config) - {"functionCallingConfig", "retrievalConfig"})
        if unknown:
            raise _Refused(f"Unknown name \"{unknown[0]}\" at 'tool_config'")
        calling = tool_config.get("functionCallingConfig") or {}
        mode = calling.get("mode", "AUTO")
        if mode not in ("MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"):
            raise _Refused(f"Invalid value at 'tool_config.function_calling_config.mode': {mode}")
        names = calling.get("allowedFunctionNames")
        if names is not None:
            if mode not in ("ANY", "VALIDATED"):
                raise _Refused("allowed_function_names may be set only when the mode is ANY")
            missing = sorted(set(names) - declared)
            if missing:
                raise _Refused(f"allowed_function_names: no function declared as {missing[0]}")

    def _check_part(self, part: dict[str, Any], role: str, where: str) -> int:
        unknown = sorted(set(part) - _PART_FIELDS)
        if unknown:
            raise _Refused(
                f'Invalid JSON payload received. Unknown name "{unknown[0]}" at '
                f"'{where}': Cannot find field."
            )
        data = [f for f in _DATA_FIELDS if f in part]
        if len(data) != 1:
            raise _Refused(f"* {where}: a part must hold exactly one of its data fields")
        kind = data[0]
        if kind == "inlineData":
            blob = part["inlineData"]
            self._check_mime(blob.get("mimeType"), where)
            try:
                return len(base64.b64decode(blob.get("data", ""), validate=True))
            except (binascii.Error, ValueError):
                raise _Refused(
                    f"Invalid value at '{where}.inline_data.data' (TYPE_BYTES), "
                    "Base64 decoding failed"
                ) from None
        if kind == "fileData":
            blob = part["fileData"]
            uri = blob.get("fileUri", "")
            external = not (_FILE_URI.fullmatch(uri) or _YOUTUBE.match(uri))
            if external and not uri.startswith("https://"):
                raise _Refused(
                    f"* {where}.file_data.file_uri: Invalid or unsupported file uri: {uri}"
                )
            if external and "mimeType" not in blob:
                raise _Refused(f"* {where}.file_data.mime_type: required for an external URL")
            if "mimeType" in blob:
                self._check_mime(blob["mimeType"], where)
        if kind == "functionCall" and (role != "model" or not part["functionCall"].get("name")):
            raise _Refused(f"* {where}: a function call is a model part with a name")
        if kind == "functionResponse":
            response = part["functionResponse"]
            if role != "user" or not response.get("name"):
                raise _Refused(f"* {where}: a function response is a user part with a name")
            if not isinstance(response.get("response"), dict):
                raise _Refused(f"* {where}.function_response.response: must be an object")
        if kind == "text" and not isinstance(part["text"], str):
            raise _Refused(f"Invalid value at '{where}.text' (TYPE_STRING)")
        return 0

    def _check_mime(self, mime: Any, where: str) -> None:
        if mime not in _MIME_TYPES:
            raise _Refused(f"* {where}: Unsupported MIME type: {mime}")

    # -- replies

    def _usage(self, reply: Reply, final: bool = True) -> dict[str, Any]:
        usage = {"promptTokenCount": reply.prompt_tokens}
        if final:
            usage["candidatesTokenCount"] = reply.output_tokens
            if reply.thoughts_tokens:
                usage["thoughtsTokenCount"] = reply.thoughts_tokens
            if reply.cached_tokens:
                usage["cachedContentTokenCount"] = reply.cached_tokens
            if reply.tool_use_tokens:
                usage["toolUsePromptTokenCount"] = reply.tool_use_tokens
            usage["totalTokenCount"] = (
                reply.prompt_tokens
                + reply.output_tokens
                + reply.thoughts_tokens
                + reply.tool_use_tokens
            )
        return usage

    def _parts(self, reply: Reply) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        if reply.thoughts:
            parts.append({"text": reply.thoughts, "thought": True})
        if reply.text:
            parts.append({"text": reply.text})
        for call_id, name, args in reply.calls:
            call: dict[str, Any] = {"name": name, "args": args}
            if call_id:
                call["id"] = call_id
            parts.append({"functionCall": call})
        if reply.signature and parts:
            after = 0 if not reply.thoughts or reply.signed_thought else 1
            parts[after if len(parts) > after else 0]["thoughtSignature"] = reply.signature
        return parts

    def _whole(self, reply: Reply, model: str) -> dict[str, Any]:
        if reply.block_reason:
            return {
                "promptFeedback": {"blockReason": reply.block_reason},
                "usageMetadata": self._usage(reply),
                "modelVersion": model,
            }
        candidate = {
            "content": {"role": "model", "parts": self._parts(reply) or [{"text": ""}]},
            "finishReason": reply.finish_reason,
            "index": 0,
        }
        return {
            "candidates": [candidate],
            "usageMetadata": self._usage(reply),
            "modelVersion": model,
            "responseId": "fake-response",
        }

    def _chunks(self, reply: Reply, model: str) -> list[dict[str, Any]]:
        if reply.block_reason:
            return [self._whole(reply, model)]

        def chunk(parts: list[dict[str, Any]], final: bool = False) -> dict[str, Any]:
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if final:
                candidate["finishReason"] = reply.finish_reason
            return {
                "candidates": [candidate],
                "usageMetadata": self._usage(reply, final),
                "modelVersion": model,
                "responseId": "fake-response",
            }

        whole = self._parts(reply)
        chunks = [chunk([{"text": ""}])]
        for part in whole:
            if "text" in part and len(_WORDS.findall(part["text"])) > 1:
                words = _WORDS.findall(part["text"])
                extra = {k: v for k, v in part.items() if k != "text"}
                # a thought's signature comes with its last piece, once the thought is whole
                last = extra.pop("thoughtSignature", None) if part.get("thought") else None
                chunks.extend(
                    chunk(
                        [{**extra, "text": w}]
                        if i == 0
                        else [{"text": w, **({"thought": True} if part.get("thought") else {})}]
                    )
                    for i, w in enumerate(words)
                )
                if last is not None:
                    chunks[-1]["candidates"][0]["content"]["parts"][0]["thoughtSignature"] = last
            else:
                chunks.append(chunk([part]))
        chunks.append(chunk([{"text": ""}], final=True))
        return chunks


#: Per the thinking documentation: the models that cannot think, the ranges of the 2.5 models'
#: ``thinkingBudget`` (0 turns thinking off where allowed), Gemini 3's levels.
_NO_THINKING = re.compile(r"gemini-(2\.0|1\.)")
_GEMINI_3 = re.compile(r"gemini-3")
_BUDGETS = (
    (re.compile(r"gemini-2\.5-pro"), 128, 32768, False),
    (re.compile(r"gemini-2\.5-flash-lite"), 512, 24576, True),
    (re.compile(r"gemini-2\.5-flash"), 1, 24576, True),
)
_LEVELS = ("minimal", "low", "medium", "high")


def _check_thinking(model: str, body: dict[str, Any]) -> None:
    """``thinkingConfig`` as each model takes it, and Gemini 3's thought signatures: the first
    function call of each model step in the current turn carries one."""
    thinking = (body.get("generationConfig") or {}).get("thinkingConfig")
    if thinking is not None:
        unknown = sorted(set(thinking) - {"thinkingBudget", "thinkingLevel", "includeThoughts"})
        if unknown:
            raise _Refused(f"Unknown name \"{unknown[0]}\" at 'generation_config.thinking_config'")
        if "thinkingBudget" in thinking and "thinkingLevel" in thinking:
            raise _Refused("thinking_budget and thinking_level are not supported together.")
        if _NO_THINKING.match(model):
            raise _Refused("Thinking is not supported for this model.")
        level = thinking.get("thinkingLevel")
        if level is not None and (str(level).lower() not in _LEVELS or not _GEMINI_3.match(model)):
            raise _Refused(f"Invalid thinking level {level!r} for {model}.")
        # "minimal" is the Flash models' only; Gemini 3 Pro (3.0) takes low and high
        if str(level).lower() == "minimal" and "flash" not in model:
            raise _Refused(f"Thinking level MINIMAL is not supported for {model}.")
        if str(level).lower() == "medium" and model.startswith("gemini-3-pro"):
            raise _Refused(f"Thinking level MEDIUM is not supported for {model}.")
        budget = thinking.get("thinkingBudget")
        for pattern, low, high, can_stop in _BUDGETS:
            if budget is not None and pattern.match(model):
                if budget == 0 and not can_stop:
                    raise _Refused("Budget 0 is invalid. This model only works in thinking mode.")
                if budget != 0 and not low <= budget <= high:
                    raise _Refused(f"The thinking budget {budget} is out of range [{low}, {high}].")
                break
    if _GEMINI_3.match(model):
        _check_signatures(body["contents"])


def _check_signatures(contents: list[dict[str, Any]]) -> None:
    start = max(
        (
            i
            for i, c in enumerate(contents)
            if c.get("role", "user") == "user" and any("text" in p for p in c["parts"])
        ),
        default=0,
    )
    for i, content in enumerate(contents[start:], start):
        calls = [p for p in content["parts"] if "functionCall" in p]
        if content.get("role") == "model" and calls and "thoughtSignature" not in calls[0]:
            raise _Refused(
                f"Function call `{calls[0]['functionCall']['name']}` in the {i}. content block "
                "is missing a `thought_signature`."
            )


def file_uri(name: str = "abc123") -> str:
    """A File API URI, as ``files.upload`` returns."""
    return f"https://generativelanguage.googleapis.com/v1beta/files/{name}"


def is_youtube(url: str) -> bool:
    return bool(_YOUTUBE.match(url)) and urlsplit(url).scheme in ("http", "https")
