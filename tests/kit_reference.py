"""A small reference provider, its fake service and its kit: proof that the conformance kit
can fail.

"Kitchat" is a made-up service with a simple JSON wire (documented below, as a service's
docs would). The provider is written as a plugin author would, with ``oma_core.toolkit`` and
``oma_core.http``; ``tests/test_kit_reference.py`` runs the kit on it, and
``tests/test_kit_catches_sabotage.py`` runs it again with one mistake switched on
(``OMA_KIT_SABOTAGE``) and expects the kit to fail.

The wire: ``POST /v1/chat`` with ``authorization: Bearer KEY`` and a JSON body

    {"model": str, "system": str?, "stream": bool?,
     "messages": [{"role": "user" | "assistant", "parts": [part, ...]}],
     "tools": [{"name", "description", "schema"}]?,
     "tool_choice": "auto" | "none" | "required" | {"tool": name}?,
     "format": {"name": str, "schema": {...}}?,
     "options": {"temperature": number?, "max_tokens": int?, "stop": [str]?}?}
    part: {"text": str} | {"image": {"mime": str, "b64": str}}
        | {"call": {"id": str, "name": str, "args": {...}}}
        | {"result": {"id": str, "content": str | [part], "error": bool?}}

Sampling settings outside ``options`` are ignored by the service; ``format`` holds the reply's
text to the JSON schema ``schema`` (structured output). The reply is
``{"text", "calls": [{"id"?, "name", "args"}], "stop": "end" | "length" | "tool",
"usage": {"in", "out"}}``; streamed, server-sent events ``start`` (no text), ``delta``
(``{"text"}``), ``call`` (``{"index", "id", "name", "args"}``, the args a JSON string in
pieces), ``done`` (``{"stop", "usage"}``; ``"stop": "error"`` with a ``"message"`` when the
generation failed), or ``error`` (``{"error": {"type", "message"}}``).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import aclosing
from typing import Any, ClassVar

import pytest

from oma_core import (
    Base64Source,
    Capabilities,
    ImageBlock,
    ProviderError,
    ProviderSpec,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    hookimpl,
)
from oma_core.http import (
    LoopLocalClient,
    ToolCallAssembler,
    assistant_response,
    event_json,
    malformed_response,
    post_json,
    stream_sse,
    tool_call_events,
)
from oma_core.testing import (
    FakeServer,
    NeutralRequest,
    RecordedRequest,
    Response,
    ScriptedReply,
    SSEEvent,
)
from oma_core.testing.conformance import ProviderConformance, Sample
from oma_core.toolkit import (
    BlockSupport,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    final_event_error,
)

NAME = "Kitchat"
KEY = "kitchat-test-key-0123"
STOP_REASONS = {"end": "end_turn", "length": "max_tokens", "tool": "tool_use"}
WIRE_STOP = {v: k for k, v in STOP_REASONS.items()}
SABOTAGES = (
    "stream-status-as-malformed",
    "404-retryable",
    "tool-results-dropped",
    "sampling-ignored",
    "usage-swapped",
    "error-events-ignored",
    "native-schema-dropped",
    "output-tool-not-forced",
    "reader-ignores-format",  # the wire reader's mistake, not the provider's
    "second-image-dropped",  # of issue 30: each passes every one-block sample
    "images-reordered",
    "final-event-error-ignored",
)


def _sabotage(name: str) -> bool:
    return os.environ.get("OMA_KIT_SABOTAGE") == name


# --------------------------------------------------------------------------- the provider


def _part(block: Any) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return {"text": block.text}
    if isinstance(block, ImageBlock):
        assert isinstance(block.source, Base64Source)
        return {"image": {"mime": block.source.media_type, "b64": block.source.data}}
    if isinstance(block, ToolUseBlock):
        return {"call": {"id": block.id, "name": block.name, "args": block.plain_input()}}
    if isinstance(block, ToolResultBlock):
        if _sabotage("tool-results-dropped"):
            return None
        content: Any = block.content
        if not isinstance(content, str):
            content = [_part(p) for p in content]
        result = {"id": block.tool_use_id, "content": content}
        return {"result": {**result, "error": True} if block.is_error else result}
    raise AssertionError(f"undeclared block {block.type}")


class KitchatProvider:
    name = "kitchat"
    display_name = NAME

    def __init__(self, settings: ProviderSettings) -> None:
        self._key = settings.api_key or ""
        self._url = (settings.base_url or "https://kitchat.invalid").rstrip("/") + "/v1/chat"
        self._options = dict(settings.options)
        self._clients = LoopLocalClient.from_options(
            {k: v for k, v in self._options.items() if k != "tool_choice"},
            headers={"authorization": f"Bearer {self._key}"},
            provider=NAME,
        )

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        messages = []
        for message in request.messages:
            parts = _sabotaged_parts([p for p in map(_part, message.content) if p is not None])
            messages.append({"role": message.role, "parts": parts or [{"text": ""}]})
        body: dict[str, Any] = {"model": request.model or "kit-1", "messages": messages}
        if request.system_prompt:
            body["system"] = request.system_prompt
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "schema": dict(t.input_schema)}
                for t in request.tools
            ]
        if "tool_choice" in self._options:
            body["tool_choice"] = self._options["tool_choice"]
        _render_output(request, body)
        options: dict[str, Any] = {}
        if request.temperature is not None:
            options["temperature"] = request.temperature
        if request.max_tokens is not None:
            options["max_tokens"] = request.max_tokens
        if request.stop is not None:
            options["stop"] = list(request.stop)
        if _sabotage("sampling-ignored"):  # top level, where the service ignores them
            body.update(options)
        elif options:
            body["options"] = options
        return body

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        try:
            reply = await post_json(
                self._clients.get(), self._url, self.render(request), provider=NAME,
                secrets=[self._key],
            )  # fmt: skip
        except ProviderError as error:
            raise _sabotaged(error) from None
        if not isinstance(reply, dict) or not isinstance(reply.get("text"), str):
            raise malformed_response(NAME, "the reply has no text")
        calls = ToolCallAssembler(NAME)
        for index, call in enumerate(reply.get("calls") or ()):
            args = json.dumps(call.get("args"))
            calls.feed(index, id=call.get("id"), name=call.get("name"), arguments=args)
        return _response(reply["text"], calls.finish(), reply)

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        body = {**self.render(request), "stream": True}
        text: list[str] = []
        calls = ToolCallAssembler(NAME)
        done = None
        events = stream_sse(
            self._clients.get(), self._url, body, provider=NAME, secrets=[self._key]
        )
        try:
            async with aclosing(events):
                async for event in events:
                    if event.event == "error" and _sabotage("error-events-ignored"):
                        continue
                    data = event_json(event, provider=NAME, secrets=[self._key])
                    if event.event == "delta":
                        text.append(data["text"])
                        yield TextDelta(data["text"])
                    elif event.event == "call":
                        calls.feed(
                            data["index"], id=data.get("id"), name=data.get("name"),
                            arguments=data.get("args"),
                        )  # fmt: skip
                    elif event.event == "done":
                        done = data
                        break
        except ProviderError as error:
            raise _sabotaged(error, streaming=True) from None
        if done is None:
            raise malformed_response(NAME, "the stream ended before its done event")
        if done.get("stop") == "error" and not _sabotage("final-event-error-ignored"):
            raise final_event_error(NAME, done.get("message"), reason="error", secrets=[self._key])
        response = _response("".join(text), calls.finish(), done)
        for call_event in tool_call_events(response):
            yield call_event
        yield ResponseComplete(response)

    async def aclose(self) -> None:
        await self._clients.aclose()


def _sabotaged_parts(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn's parts, the second image dropped or the images in reverse order (in their
    places among the texts) when those sabotages are on."""
    images = [n for n, p in enumerate(parts) if "image" in p]
    if _sabotage("second-image-dropped") and len(images) > 1:
        return [p for n, p in enumerate(parts) if n != images[1]]
    if _sabotage("images-reordered"):
        reordered = list(parts)
        for at, source in zip(images, reversed(images), strict=True):
            reordered[at] = parts[source]
        return reordered
    return parts


def _render_output(request: ProviderRequest, body: dict[str, Any]) -> None:
    """Structured output: the schema as ``format`` (native), or one more tool with the choice
    forced to it, to "some tool" beside the request's own (tool mode)."""
    output = request.output
    if output is None:
        return
    if output.mode == "native":
        if not _sabotage("native-schema-dropped"):
            body["format"] = {"name": output.name, "schema": dict(output.schema)}
        return
    tool = {"name": output.name, "description": output.description or "",
            "schema": dict(output.schema)}  # fmt: skip
    body["tools"] = [*body.get("tools", ()), tool]
    if not _sabotage("output-tool-not-forced"):
        body["tool_choice"] = "required" if request.tools else {"tool": output.name}


def _sabotaged(error: ProviderError, *, streaming: bool = False) -> ProviderError:
    if streaming and error.status_code and _sabotage("stream-status-as-malformed"):
        return malformed_response(NAME, "the reply could not be read")
    if error.status_code == 404 and _sabotage("404-retryable"):
        return ProviderError(error.message, status_code=404, provider=NAME, retryable=True)
    return error


def _response(text: str, calls: Any, reply: Mapping[str, Any]) -> ProviderResponse:
    usage = reply.get("usage") or {}
    counts = (usage.get("in", 0), usage.get("out", 0))
    if _sabotage("usage-swapped"):
        counts = counts[::-1]
    stop = reply.get("stop")
    reason = STOP_REASONS.get(stop, stop) if isinstance(stop, str) else None
    return assistant_response(text, calls, Usage(*counts), reason)


CAPABILITIES = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport(
            "image",
            roles=frozenset({"user", "tool_result"}),
            sources=frozenset({"base64"}),
            media_types=frozenset({"image/png", "image/jpeg"}),
        ),
        BlockSupport("tool_use", roles=frozenset({"assistant"})),
        BlockSupport("tool_result", roles=frozenset({"user"})),
    ),
    output_modes=frozenset({"native", "tool", "prompted"}),
)
SPEC = ProviderSpec(
    name="kitchat",
    display_name=NAME,
    factory=KitchatProvider,
    capabilities=CAPABILITIES,
    default_model="kit-1",
    shared=True,
)


class KitchatPlugin:
    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        return [SPEC]


# --------------------------------------------------------------------------- the fake service


class FakeKitchat(FakeServer):
    """``POST /v1/chat`` as documented above; replies queued with ``script``."""

    def __init__(self) -> None:
        super().__init__()
        self._replies: deque[ScriptedReply] = deque()
        self._queue_lock = threading.Lock()

    def script(self, reply: ScriptedReply) -> None:
        with self._queue_lock:
            self._replies.append(reply)

    def handle(self, request: RecordedRequest) -> Response:
        if request.method != "POST" or request.path != "/v1/chat":
            return self.error_response(404, "not found")
        if request.headers.get("authorization") != f"Bearer {KEY}":
            return self.error_response(401, "bad key")
        body = request.json
        if not isinstance(body, dict) or not body.get("messages"):
            return self.error_response(400, "messages: Field required")
        with self._queue_lock:
            reply = self._replies.popleft() if self._replies else ScriptedReply("Hi from Kitchat.")
        stop = WIRE_STOP[reply.stop_reason]
        usage = {"in": reply.usage.input_tokens, "out": reply.usage.output_tokens}
        calls = [
            {"id": c.id, "name": c.name, "args": dict(c.arguments)} if c.id
            else {"name": c.name, "args": dict(c.arguments)}
            for c in reply.tool_calls
        ]  # fmt: skip
        if not body.get("stream"):
            return Response.json({"text": reply.text, "calls": calls, "stop": stop, "usage": usage})
        events = [SSEEvent({}, event="start")]
        events += [SSEEvent({"text": w}, event="delta") for w in re.findall(r"\S+\s*", reply.text)]
        for index, call in enumerate(calls):
            args = json.dumps(call.pop("args"))
            events.append(SSEEvent({"index": index, **call, "args": args[:3]}, event="call"))
            events.append(SSEEvent({"index": index, "args": args[3:]}, event="call"))
        events.append(SSEEvent({"stop": stop, "usage": usage}, event="done"))
        return Response.sse(events)

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        error = {"type": error_type or "error", "message": message}
        return Response.json({"error": error}, status=status)

    def error_event(self, error_type: str, message: str) -> SSEEvent:
        return SSEEvent({"error": {"type": error_type, "message": message}}, event="error")

    def error_final_event(self, message: str) -> SSEEvent:
        usage = {"in": 3, "out": 1}
        return SSEEvent({"stop": "error", "message": message, "usage": usage}, event="done")


# --------------------------------------------------------------------------- the wire reader


def _read_part(part: Mapping[str, Any]) -> dict[str, Any]:
    if "text" in part:
        return {"type": "text", "text": part["text"]}
    if "image" in part:
        image = part["image"]
        source = {"type": "base64", "media_type": image["mime"], "data": image["b64"]}
        return {"type": "image", "source": source}
    if "call" in part:
        call = part["call"]
        return {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["args"]}
    result = part["result"]
    content = result["content"]
    if not isinstance(content, str):
        content = [_read_part(p) for p in content]
    return {
        "type": "tool_result",
        "tool_use_id": result["id"],
        "content": content,
        "is_error": bool(result.get("error", False)),
    }


def read_request(body: Mapping[str, Any]) -> NeutralRequest:
    """What Kitchat understands from ``body``, from its documentation above."""
    messages = [
        {"role": m["role"], "content": [_read_part(p) for p in m["parts"]]}
        for m in body["messages"]
    ]
    options = body.get("options") or {}  # sampling anywhere else is ignored by the service
    choice = body.get("tool_choice")
    return NeutralRequest(
        messages=messages,
        system_prompt=body.get("system"),
        tools=[
            {"name": t["name"], "description": t["description"], "input_schema": t["schema"]}
            for t in body.get("tools") or ()
        ],
        tool_choice=choice["tool"] if isinstance(choice, dict) else choice,
        temperature=options.get("temperature"),
        max_tokens=options.get("max_tokens"),
        stop=options.get("stop"),
        output_schema=None
        if _sabotage("reader-ignores-format")
        else (body.get("format") or {}).get("schema"),
    )


# --------------------------------------------------------------------------- the kit


class KitchatConformance(ProviderConformance):
    """The kit on Kitchat (subclassed as ``Test...`` where it runs)."""

    provider_name = "kitchat"
    api_key = KEY
    tool_call_ids = "sometimes"  # a call's id is optional on the wire
    output_modes = frozenset({"native", "tool", "prompted"})
    final_event_errors = True  # a done event may say "error"
    tool_choices: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "auto": {"tool_choice": "auto"},
        "required": {"tool_choice": "required"},
        "lookup": {"tool_choice": {"tool": "lookup"}},
    }

    @pytest.fixture(autouse=True)
    def _registered(self) -> Any:
        from oma_core import PluginHost

        host = PluginHost.default()
        name = host.register(KitchatPlugin(), "kitchat-reference")
        yield
        host.unregister(name=name)

    @pytest.fixture
    def server(self) -> Iterator[FakeKitchat]:
        with FakeKitchat() as server:
            assert isinstance(server, FakeKitchat)
            yield server
            assert server.handler_errors == []

    def script_text(self, server: FakeKitchat, text: str) -> None:
        server.script(ScriptedReply(text))

    def script_tool_call(
        self, server: FakeKitchat, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        from oma_core.testing import ScriptedCall

        call = ScriptedCall(name, arguments, call_id)
        server.script(ScriptedReply(tool_calls=(call,), stop_reason="tool_use"))

    def script_reply(self, server: FakeKitchat, reply: ScriptedReply) -> None:
        server.script(reply)

    def read_request(self, body: Mapping[str, Any]) -> NeutralRequest:
        return read_request(body)

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        message, index, part = sample.locator
        sent = request.json["messages"][message]["parts"][index]
        if part is not None:
            sent = sent["result"]["content"][part]
        assert _read_part(sent)["type"] == sample.block_type, sample.id
