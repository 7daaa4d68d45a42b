"""The provider: one class for OpenAI and every OpenAI-compatible preset, speaking Chat
Completions or (OpenAI on its own host, by default) the Responses API.

This module imports the openai SDK, so only the provider factory loads it (on first use of a
provider), never plugin discovery. The SDK's own retries are off: the core owns the one retry
ladder. The body handed to the SDK is the dict ``render`` returns, passed as ``extra_body``: it
replaces the SDK's typed fields key by key, so the bytes on the wire are ``json.dumps`` of
exactly that dict. (``messages`` is given to the typed call empty: the SDK would otherwise walk
the whole conversation to transform a value that ``extra_body`` replaces anyway.)
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any
from urllib.parse import urlsplit

import openai

from oma_core import LLMMessage, ProviderError, ToolUseBlock, Usage
from oma_core.errors import PluginError
from oma_core.http import (
    DEFAULT_FIRST_BYTE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    READ_OPTIONS,
    ReadLimits,
    guard_hooks,
    malformed_response,
    pool_size,
    request_secrets,
)
from oma_core.toolkit import (
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ReasoningDelta,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)

from .convert import CLIENT_OPTIONS, content_blocks, parse_arguments, request_body
from .direct import DirectClient
from .errors import from_sdk_error, refused_before_sending
from .presets import Preset
from .responses_reply import ResponsesStream, read_response
from .responses_request import responses_body

__all__ = ["OpenAIChatProvider"]

#: What a broken reply looks like when read through attributes.
_SHAPE_ERRORS = (AttributeError, IndexError, KeyError, TypeError, ValueError)
#: Chat Completions' ``finish_reason`` -> oma's stop reason (others are kept as they are).
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
                "function_call": "tool_use"}  # fmt: skip


def _stop_reason(finish_reason: str | None) -> str | None:
    return None if finish_reason is None else STOP_REASONS.get(finish_reason, finish_reason)


class OpenAIChatProvider:
    """OpenAI (the Responses API or Chat Completions, ``api``) and compatible services through
    the official ``openai`` SDK (async client, no SDK retries).

    The SDK client is made on first use and remade if the event loop changes (its connection
    pool belongs to one loop); ``aclose`` closes it.
    """

    def __init__(self, preset: Preset, settings: ProviderSettings) -> None:
        self.name = preset.name
        self.display_name = preset.display_name
        # What the core checks a request against when this object is passed as
        # ``AgentConfig(provider=...)`` rather than by its registered name.
        self.capabilities = preset.capabilities
        self.preset = preset
        self.base_url = settings.base_url or preset.base_url
        self._api_key = settings.api_key or (
            os.environ.get(preset.api_key_env) if preset.api_key_env else None
        )
        self._transport = transport_option(settings.options.get("transport"), preset.name)
        #: "responses" or "chat": the API the requests go to.
        self.api = api_option(settings.options.get("api"), preset, self.base_url)
        self._limits = ReadLimits.from_options(settings.options, name=preset.name)
        self._pool = pool_size(settings.options, name=preset.name)
        self._client_options = _client_options(settings.options)
        self._body_options = {k: v for k, v in settings.options.items() if k not in CLIENT_OPTIONS}
        self._sdk: openai.AsyncOpenAI | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._direct: DirectClient | None = None

    # -- the Provider interface

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return self._body(request, stream=False)

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        if self.api == "responses":
            return await self._complete_responses(request)
        body = request_body(request, self.preset, stream=False, options=self._body_options)
        if self._transport == "direct":
            reply = await self._direct_client().complete(body, self._secrets(request))
            return self._read_completion(reply)
        client = self._client()
        # Each failure is built inside its ``except`` and raised after it, so the error holds
        # no reference to the SDK's exception (whose request carries the key and the prompt).
        error: ProviderError | None = None
        try:
            raw = await client.chat.completions.with_raw_response.create(
                model=body["model"], messages=(), extra_body=body
            )
        except Exception as exc:
            error = self._error(exc, request, sent=False)
        if error is not None:
            raise error
        try:
            return self._read_completion(raw.parse())
        except Exception as exc:
            error = self._error(exc, request, sent=True)
        raise error

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        if self.api == "responses":
            async with contextlib.aclosing(self._stream_responses(request)) as replies:
                async for reply in replies:
                    yield reply
            return
        body = request_body(request, self.preset, stream=True, options=self._body_options)
        error: ProviderError | None = None
        chunks: Any
        if self._transport == "direct":
            chunks = self._direct_client().stream(body, self._secrets(request))
        else:
            client = self._client()
            try:
                raw = await client.chat.completions.with_raw_response.create(
                    model=body["model"], messages=(), stream=True, extra_body=body
                )
                chunks = raw.parse()
            except Exception as exc:
                error = self._error(exc, request, sent=False)
            if error is not None:
                raise error
        assembly = _StreamAssembly(self.preset)
        try:
            while True:
                try:
                    chunk = await chunks.__anext__()
                    events = assembly.feed(chunk)
                except StopAsyncIteration:
                    break
                except Exception as exc:
                    error = self._error(exc, request, sent=True)
                if error is not None:
                    raise error
                for event in events:
                    yield event
        finally:
            await (chunks.aclose() if self._transport == "direct" else chunks.close())
        try:
            response = assembly.finish()
        except ProviderError as exc:
            error = exc
        if error is not None:
            raise error
        yield ResponseComplete(response)

    async def aclose(self) -> None:
        sdk, self._sdk, self._loop = self._sdk, None, None
        if sdk is not None:
            await sdk.close()
        if self._direct is not None:
            await self._direct.aclose()

    # -- the Responses API

    async def _complete_responses(self, request: ProviderRequest) -> ProviderResponse:
        body = self._body(request, stream=False)
        secrets = self._secrets(request)
        if self._transport == "direct":
            view = await self._direct_client().complete(body, secrets, "/responses")
            return read_response(view, self.preset, secrets)
        client = self._client()
        error: ProviderError | None = None
        try:
            raw = await client.responses.with_raw_response.create(
                model=body["model"], extra_body=body
            )
        except Exception as exc:
            error = self._error(exc, request, sent=False)
        if error is not None:
            raise error
        reply: Any = None
        try:
            reply = raw.parse()
        except Exception as exc:
            error = self._error(exc, request, sent=True)
        if error is not None:
            raise error
        return read_response(reply, self.preset, secrets)

    async def _stream_responses(
        self, request: ProviderRequest
    ) -> AsyncGenerator[ProviderEvent, None]:
        body = self._body(request, stream=True)
        secrets = self._secrets(request)
        error: ProviderError | None = None
        events: Any
        if self._transport == "direct":
            events = self._direct_client().stream(body, secrets, "/responses")
        else:
            try:
                raw = await self._client().responses.with_raw_response.create(
                    model=body["model"], stream=True, extra_body=body
                )
                events = raw.parse()
            except Exception as exc:
                error = self._error(exc, request, sent=False)
            if error is not None:
                raise error
        assembly = ResponsesStream(self.preset, secrets)
        try:
            while not assembly.finished:
                try:
                    event = await events.__anext__()
                    out = assembly.feed(event)
                except StopAsyncIteration:
                    break
                except Exception as exc:
                    error = self._error(exc, request, sent=True)
                if error is not None:
                    raise error
                for item in out:
                    yield item
            if self._transport != "direct":
                await _drain_sdk(events)
        finally:
            await (events.aclose() if self._transport == "direct" else events.close())
        try:
            response = assembly.finish()
        except ProviderError as exc:
            error = exc
        if error is not None:
            raise error
        yield ResponseComplete(response)

    # -- internals

    def _body(self, request: ProviderRequest, *, stream: bool) -> dict[str, Any]:
        build = responses_body if self.api == "responses" else request_body
        return build(request, self.preset, stream=stream, options=self._body_options)

    def _key(self) -> str:
        api_key = self._api_key or self.preset.key_placeholder
        if not api_key:
            raise ProviderError(
                f"{self.display_name}: no API key; set {self.preset.api_key_env} "
                "or AgentConfig.api_key",
                provider=self.display_name,
                retryable=False,
            )
        return api_key

    def _direct_client(self) -> DirectClient:
        if self._direct is None:
            base_url = self.base_url or "https://api.openai.com/v1"
            self._direct = DirectClient(
                self.display_name,
                base_url,
                self._key(),
                self._client_options,
                self._limits,
                self._pool,
            )
        return self._direct

    def _secrets(self, request: ProviderRequest) -> Callable[[], tuple[str, ...]]:
        """What an error must not quote, worked out only when an error is built."""
        return lambda: request_secrets(request, self._api_key)

    def _client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._sdk is not None and self._loop is loop:
            return self._sdk
        api_key = self._key()
        options = dict(self._client_options)
        # The SDK's own httpx or aiohttp client (its default timeout and connection limits,
        # and the per-request timeout the SDK passes on), with redirects never followed and
        # every reply read through the toolkit's bounds: the SDK reads the body itself.
        http_client = (
            openai.DefaultAioHttpClient
            if self._transport == "aiohttp"
            else openai.DefaultAsyncHttpxClient
        )
        # Default timeouts no run hangs on for long: 5 s to connect, 120 s for the reply to
        # start, 60 s of silence once it has (``timeout`` replaces the last two).
        timeout = options.setdefault(
            "timeout", openai.Timeout(DEFAULT_FIRST_BYTE_TIMEOUT, connect=5.0)
        )
        idle = float(timeout) if isinstance(timeout, int | float) else DEFAULT_IDLE_TIMEOUT
        options["http_client"] = http_client(
            follow_redirects=False, event_hooks=guard_hooks(self.display_name, self._limits, idle)
        )
        self._sdk = openai.AsyncOpenAI(
            api_key=api_key, base_url=self.base_url, max_retries=0, **options
        )
        self._loop = loop
        return self._sdk

    def _error(self, exc: BaseException, request: ProviderRequest, *, sent: bool) -> ProviderError:
        """The ``ProviderError`` for ``exc``, scrubbed of the key and the request's content.

        ``sent``: the reply had arrived, so what the SDK did not wrap is a reply that could not
        be decoded; before that, it is the SDK refusing its input.
        """
        secrets = request_secrets(request, self._api_key)
        mapped = from_sdk_error(exc, self.display_name, secrets)
        if mapped is not None:
            return mapped
        if sent:
            what = f"the reply could not be decoded ({type(exc).__name__})"
            return malformed_response(self.display_name, what)
        return refused_before_sending(self.display_name, exc, secrets)

    def _read_completion(self, completion: Any) -> ProviderResponse:
        name = self.display_name
        try:
            choice = completion.choices[0]
            message = choice.message
            text = message.content
            refusal = getattr(message, "refusal", None)
            if text is None:
                text = refusal or ""
            calls = tuple(
                ToolUseBlock(
                    call.id, call.function.name, parse_arguments(call.function.arguments, name)
                )
                for call in message.tool_calls or ()
            )
            blocks = content_blocks(
                _reasoning(message),
                text,
                calls,
                self.preset.reasoning_field is not None,
                self.preset.name,
            )
            return ProviderResponse(
                message=LLMMessage("assistant", blocks),
                usage=_usage(completion),
                # a refusal is never output: its stop reason says so (finish_reason is "stop")
                stop_reason="refusal" if refusal else _stop_reason(choice.finish_reason),
                model=completion.model,
            )
        except _SHAPE_ERRORS:
            pass  # raised below, outside the handler, so that it is not chained
        raise malformed_response(name, "the reply has no readable choice")


class _StreamAssembly:
    """Turns ``chat.completion.chunk`` objects into events and, at the end, the whole turn.

    Tool calls arrive as argument fragments keyed by ``index``, each passed on as a
    ``ToolCallDelta``; each call is emitted as one ``ToolCall`` once the choice has a
    ``finish_reason``. A stream that ends without one was
    cut short (retryable); usage comes from the last chunk that carries it.
    """

    def __init__(self, preset: Preset) -> None:
        self._preset = preset
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, dict[str, str]] = {}
        self._done: tuple[ToolUseBlock, ...] | None = None
        self._finish_reason: str | None = None
        self._usage = Usage()
        self._model: str | None = None

    def feed(self, chunk: Any) -> list[ProviderEvent]:
        try:
            return self._feed(chunk)
        except _SHAPE_ERRORS:
            pass  # raised below, outside the handler, so that it is not chained
        raise malformed_response(self._preset.display_name, "a stream chunk could not be read")

    def _feed(self, chunk: Any) -> list[ProviderEvent]:
        self._model = chunk.model or self._model
        choices = chunk.choices
        if chunk.usage is None and choices and len(choices) == 1:
            text = _text_alone(choices[0])
            if text:  # the common chunk: a piece of text and nothing else
                self._text.append(text)
                return [TextDelta(text)]
        return self._feed_any(chunk)

    def _feed_any(self, chunk: Any) -> list[ProviderEvent]:
        events: list[ProviderEvent] = []
        if chunk.usage is not None:
            self._usage = _usage(chunk)
        for choice in chunk.choices or ():
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None:
                reasoning = _reasoning(delta)
                if reasoning:
                    self._reasoning.append(reasoning)
                    events.append(ReasoningDelta(reasoning))
                if delta.content:
                    self._text.append(delta.content)
                    events.append(TextDelta(delta.content))
                if getattr(delta, "refusal", None):
                    self._refusal.append(delta.refusal)
                for call in delta.tool_calls or ():
                    piece = self._add_fragment(call)
                    if piece is not None:
                        events.append(piece)
            if choice.finish_reason and self._done is None:
                self._finish_reason = choice.finish_reason
                self._done = self._tool_calls()
                events.extend(ToolCall(block) for block in self._done)
        return events

    def _add_fragment(self, call: Any) -> ToolCallDelta | None:
        """Add one fragment of a call; the event for its piece of arguments, if it has one."""
        index = call.index
        slot = self._calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        if call.id and not slot["id"]:
            slot["id"] = call.id
        function = call.function
        if function is not None:
            if function.name and not slot["name"]:
                slot["name"] = function.name
            piece = function.arguments
            if piece:
                slot["arguments"] += piece
                return ToolCallDelta(index, piece, slot["name"] or None, slot["id"] or None)
        return None

    def _tool_calls(self) -> tuple[ToolUseBlock, ...]:
        name = self._preset.display_name
        calls = []
        for index in sorted(self._calls):
            slot = self._calls[index]
            if not slot["id"] or not slot["name"]:
                raise malformed_response(name, "a streamed tool call has no id or name")
            arguments = parse_arguments(slot["arguments"], name)
            calls.append(ToolUseBlock(slot["id"], slot["name"], arguments))
        return tuple(calls)

    def finish(self) -> ProviderResponse:
        name = self._preset.display_name
        if self._done is None:
            raise ProviderError(
                f"{name}: the stream ended before the reply was complete",
                provider=name,
                retryable=True,
            )
        refusal = "".join(self._refusal)
        blocks = content_blocks(
            "".join(self._reasoning),
            "".join(self._text) or refusal,
            self._done,
            self._preset.reasoning_field is not None,
            self._preset.name,
        )
        return ProviderResponse(
            message=LLMMessage("assistant", blocks),
            usage=self._usage,
            stop_reason="refusal" if refusal else _stop_reason(self._finish_reason),
            model=self._model,
        )


TRANSPORTS = ("httpx", "aiohttp", "direct")
APIS = ("responses", "chat")
#: OpenAI's own host, where ``openai`` speaks the Responses API unless told otherwise.
OPENAI_HOST = "api.openai.com"


def api_option(value: Any, preset: Preset, base_url: str | None) -> str:
    """``provider_options["api"]``: ``"responses"`` or ``"chat"``. Unset: the Responses API
    for ``openai`` on OpenAI's own host, Chat Completions for every other preset and host
    (a compatible server may speak Chat Completions only)."""
    if value is None:
        own_host = base_url is None or urlsplit(base_url).hostname == OPENAI_HOST
        return "responses" if preset.responses and own_host else "chat"
    if value not in APIS:
        raise PluginError(
            f'provider_options["api"] for {preset.name} must be "responses" or "chat", '
            f"got {value!r}",
            name=preset.name,
        )
    return str(value)


#: Seconds to wait for the rest of a Responses stream's body after its final event.
_DRAIN_GRACE = 2.0


async def _drain_sdk(events: Any) -> None:
    """Read a finished SDK stream to its body's end, so its connection goes back to the pool
    (a server that keeps it open gets a short grace; the caller then closes it)."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_DRAIN_GRACE):
            async for _ in events:
                pass


def transport_option(value: Any, name: str) -> str:
    """``provider_options["transport"]``: the SDK's default httpx client, its aiohttp one
    (faster with many calls in flight), or ``"direct"``: the plugin's own aiohttp client,
    without the SDK (fastest). The last two need the plugin's ``aiohttp`` extra."""
    if value is None:
        return "httpx"
    if value not in TRANSPORTS:
        raise PluginError(
            f'provider_options["transport"] for {name} must be "httpx", "aiohttp" or "direct", '
            f"got {value!r}",
            name=name,
        )
    if value != "httpx" and importlib.util.find_spec("aiohttp") is None:
        raise PluginError(
            f'provider_options["transport"] = "{value}" needs aiohttp: '
            "pip install 'oma-openai[aiohttp]'",
            name=name,
        )
    return str(value)


#: Client options the plugin reads itself, never handed to the SDK.
_OWN_CLIENT_OPTIONS = frozenset({"transport", "max_connections", "api", *READ_OPTIONS})


def _client_options(options: Any) -> dict[str, Any]:
    """The ``provider_options`` that configure the SDK client, as ``AsyncOpenAI`` keywords."""
    chosen = {
        k: v
        for k, v in options.items()
        if k in CLIENT_OPTIONS and k not in _OWN_CLIENT_OPTIONS and v is not None
    }
    headers = chosen.pop("headers", None)
    if headers:
        chosen["default_headers"] = {**dict(headers), **dict(chosen.get("default_headers") or {})}
    for key in ("default_headers", "default_query"):
        if key in chosen:
            chosen[key] = dict(chosen[key])
    return chosen


def _text_alone(choice: Any) -> str:
    """The text of a streamed choice that holds text alone (the first choice; no finish,
    tool call, refusal or reasoning): what ``_StreamAssembly._feed_any`` would make of it
    alone, found with fewer steps; else ""."""
    if choice.index != 0 or choice.finish_reason:
        return ""
    delta = choice.delta
    if delta is None or delta.tool_calls or getattr(delta, "refusal", None) or _reasoning(delta):
        return ""
    content = delta.content
    return content if type(content) is str else ""


def _reasoning(message: Any) -> str:
    """Reasoning text some compatible servers add (``reasoning_content`` or ``reasoning``).

    These are fields the SDK's models do not declare, so they sit in pydantic's extras; a
    dict lookup there is much cheaper per chunk than a failing ``getattr``.
    """
    extra = message.model_extra
    if not extra:
        return ""
    for field in ("reasoning_content", "reasoning"):
        value = extra.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def _usage(reply: Any) -> Usage:
    """oma's ``Usage`` of a reply's ``usage``. ``prompt_tokens`` counts the cached tokens
    too (``prompt_tokens_details.cached_tokens`` is a part of it), as oma's
    ``input_tokens`` does; ``completion_tokens`` counts the reasoning tokens."""
    usage = reply.usage
    if usage is None:
        return Usage()
    prompt = usage.prompt_tokens_details
    completion = usage.completion_tokens_details
    return Usage(
        int(usage.prompt_tokens or 0),
        int(usage.completion_tokens or 0),
        cache_read_tokens=_detail(prompt, "cached_tokens"),
        cache_write_tokens=_detail(prompt, "cache_write_tokens"),
        reasoning_tokens=_detail(completion, "reasoning_tokens"),
    )


def _detail(details: Any, name: str) -> int:
    """One count of a ``*_tokens_details`` object (absent on many compatible servers): 0
    when missing or not a count."""
    value = getattr(details, name, None) if details is not None else None
    return value if type(value) is int and value >= 0 else 0
