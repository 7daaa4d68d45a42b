"""The Anthropic Messages provider: oma's provider interface over the official ``anthropic`` SDK.

This module imports the SDK; the plugin loads it only when a provider is first built. The
SDK's own retries are off (the core owns the one retry ladder). One ``AsyncAnthropic`` client
is kept per event loop, since an HTTP connection pool belongs to the loop that opened it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anthropic

from oma_core import ProviderError
from oma_core.capabilities import cache_ttl
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
    ResponseComplete,
)

from .capabilities import CAPABILITIES, DISPLAY_NAME
from .direct import DirectClient
from .errors import map_error, refused_before_sending
from .mapping import BODY_OPTIONS, build_body, response_from_message
from .streaming import StreamAssembler

__all__ = ["CLIENT_OPTIONS", "TRANSPORTS", "AnthropicProvider"]

#: ``provider_options`` that configure the client rather than the body.
CLIENT_OPTIONS = ("headers", "timeout", "transport", "max_connections", *READ_OPTIONS)
#: What ``provider_options["transport"]`` may be: the SDK's httpx client (the default), its
#: aiohttp one (faster with many calls in flight), or ``"direct"``, the plugin's own aiohttp
#: client without the SDK (fastest); the last two need the plugin's ``aiohttp`` extra.
TRANSPORTS = ("httpx", "aiohttp", "direct")
_REQUEST_OPTIONS = frozenset({*BODY_OPTIONS, "max_tokens", "model", "extra_body", "cache_ttl"})
_KNOWN_OPTIONS = frozenset({*CLIENT_OPTIONS, *_REQUEST_OPTIONS})


def _sdk_keys() -> frozenset[str]:
    """The body parameters the SDK's ``messages.create`` takes as keywords."""
    params = inspect.signature(anthropic.resources.messages.AsyncMessages.create).parameters
    extras = {"extra_headers", "extra_query", "extra_body", "timeout", "self"}
    return frozenset(p for p in params if p not in extras)


_SDK_KEYS = _sdk_keys()


class AnthropicProvider:
    """Sends ``ProviderRequest``s to ``POST /v1/messages``; see ``docs/providers/anthropic.md``."""

    name = "anthropic"
    display_name = DISPLAY_NAME
    capabilities = CAPABILITIES

    def __init__(self, settings: ProviderSettings) -> None:
        unknown = sorted(set(settings.options) - _KNOWN_OPTIONS)
        if unknown:
            raise PluginError(
                f"unknown provider_options for anthropic: {', '.join(unknown)} "
                f"(known: {', '.join(sorted(_KNOWN_OPTIONS))})",
                name=self.name,
            )
        cache_ttl(settings.options, "anthropic")  # a bad value is refused now, not when sent
        self._transport = _transport(settings.options.get("transport"))
        self._limits = ReadLimits.from_options(settings.options, name=self.name)
        self._pool = pool_size(settings.options, name=self.name)
        self._settings = settings
        self._options: Mapping[str, Any] = settings.options
        self._base_url = _sdk_base_url(settings.base_url)
        self._clients: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop], Any]] = {}
        self._direct: DirectClient | None = None

    # -- the provider interface

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        options = self._options
        if request.options:
            options = {
                **options,
                **{k: v for k, v in request.options.items() if k in _REQUEST_OPTIONS},
            }
        return build_body(request, options, _SDK_KEYS)

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        body = self.render(request)
        if self._transport == "direct":
            reply = await self._direct_client().complete(body, self._secrets(request))
            return response_from_message(reply)
        client = self._client()
        # Each failure is built inside its ``except`` and raised after it, so the error holds
        # no reference to the SDK's exception (whose request carries the key and the prompt).
        error: ProviderError | None = None
        try:
            raw = await client.messages.with_raw_response.create(**_split(body))
        except Exception as exc:
            error = self._error(exc, request, sent=False)
        if error is not None:
            raise error
        try:
            return response_from_message(await raw.parse())
        except Exception as exc:
            error = self._error(exc, request, sent=True)
        raise error

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        body = self.render(request)
        error: ProviderError | None = None
        events: Any
        if self._transport == "direct":
            events = self._direct_client().stream(body, self._secrets(request))
        else:
            client = self._client()
            try:
                raw = await client.messages.with_raw_response.create(**_split(body), stream=True)
                events = await raw.parse()
            except Exception as exc:
                error = self._error(exc, request, sent=False)
            if error is not None:
                raise error
        assembler = StreamAssembler()
        feed = assembler.feed
        iterator = events.__aiter__()
        try:
            while True:
                try:
                    out = feed(await iterator.__anext__())
                except StopAsyncIteration:
                    break
                except Exception as exc:
                    error = self._error(exc, request, sent=True)
                if error is not None:
                    raise error
                if out is not None:
                    yield out
                if assembler.complete:
                    break  # the reply is whole: stop reading, and close the connection below
        finally:
            await (events.aclose() if self._transport == "direct" else events.close())
        try:
            response = assembler.finish()
        except ProviderError as exc:
            error = exc
        if error is not None:
            raise error
        yield ResponseComplete(response)

    async def aclose(self) -> None:
        if self._direct is not None:
            await self._direct.aclose()
        clients, self._clients = self._clients, {}
        for loop_ref, client in clients.values():
            loop = loop_ref()
            if loop is not None and loop is _running_loop():
                await client.close()
            # a client of another (or a finished) loop cannot be closed from here; its
            # sockets are released when it is collected

    # -- helpers

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is not None and entry[0]() is loop:
            return entry[1]
        self._clients = {k: v for k, v in self._clients.items() if _alive(v[0])}
        # Default timeouts no run hangs on for long: 5 s to connect, 120 s for the reply to
        # start, 60 s of silence once it has (``timeout`` replaces the last two). The client
        # keeps the SDK's default timeout, which its refusal of a non-streaming call too long
        # to finish compares against; the hooks cap each request's read timeout instead.
        timeout = self._options.get("timeout")
        idle = float(timeout) if isinstance(timeout, int | float) else DEFAULT_IDLE_TIMEOUT
        first_byte = None if timeout else DEFAULT_FIRST_BYTE_TIMEOUT
        client = anthropic.AsyncAnthropic(
            api_key=self._api_key(),
            base_url=self._base_url,
            max_retries=0,
            timeout=timeout or anthropic.DEFAULT_TIMEOUT,
            default_headers=dict(self._options.get("headers") or {}),
            # The SDK's own httpx or aiohttp client (its default connection limits, and the
            # per-request timeout the SDK passes on), with redirects never followed and every
            # reply read through the toolkit's bounds: the SDK reads the body itself.
            http_client=(
                anthropic.DefaultAioHttpClient
                if self._transport == "aiohttp"
                else anthropic.DefaultAsyncHttpxClient
            )(
                follow_redirects=False,
                event_hooks=guard_hooks(DISPLAY_NAME, self._limits, idle, first_byte),
            ),
        )
        self._clients[id(loop)] = (weakref.ref(loop), client)
        return client

    def _direct_client(self) -> DirectClient:
        if self._direct is None:
            timeout = self._options.get("timeout")
            self._direct = DirectClient(
                self._base_url,
                self._api_key(),
                dict(self._options.get("headers") or {}),
                float(timeout) if isinstance(timeout, int | float) else None,
                self._limits,
                self._pool,
            )
        return self._direct

    def _secrets(self, request: ProviderRequest) -> Callable[[], tuple[str, ...]]:
        """What an error must not quote, worked out only when an error is built."""
        key = self._settings.api_key or os.environ.get("ANTHROPIC_API_KEY")
        return lambda: request_secrets(request, key)

    def _api_key(self) -> str:
        key = self._settings.api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise ProviderError(
                f"{DISPLAY_NAME} needs an API key: set AgentConfig.api_key or ANTHROPIC_API_KEY",
                provider=DISPLAY_NAME,
                retryable=False,
            )
        return key

    def _error(self, exc: BaseException, request: ProviderRequest, *, sent: bool) -> ProviderError:
        """The ``ProviderError`` for ``exc``, scrubbed of the key and the request's content.

        ``sent``: the reply had arrived, so what the SDK did not wrap is a reply that could not
        be decoded; before that, it is the SDK refusing its input.
        """
        key = self._settings.api_key or os.environ.get("ANTHROPIC_API_KEY")
        secrets = request_secrets(request, key)
        mapped = map_error(exc, secrets)
        if mapped is not None:
            return mapped
        if sent:
            what = f"the reply could not be decoded ({type(exc).__name__})"
            return malformed_response(DISPLAY_NAME, what)
        return refused_before_sending(exc, secrets)


def _transport(value: Any) -> str:
    if value is None:
        return "httpx"
    if value not in TRANSPORTS:
        raise PluginError(
            'provider_options["transport"] for anthropic must be "httpx", "aiohttp" or '
            f'"direct", got {value!r}',
            name="anthropic",
        )
    if value != "httpx" and importlib.util.find_spec("aiohttp") is None:
        raise PluginError(
            f'provider_options["transport"] = "{value}" needs aiohttp: '
            "pip install 'oma-anthropic[aiohttp]'",
            name="anthropic",
        )
    return str(value)


def _split(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as keyword arguments of ``messages.create``: what it does not know goes in
    ``extra_body``, which the SDK merges in after its own keys (the order ``build_body`` uses)."""
    kwargs = {k: v for k, v in body.items() if k in _SDK_KEYS}
    extra = {k: v for k, v in body.items() if k not in _SDK_KEYS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def _sdk_base_url(base_url: str | None) -> str | None:
    """The SDK appends ``/v1/messages`` itself, so a configured ``.../v1`` loses its ``/v1``."""
    if base_url is None:
        return None
    trimmed = base_url.rstrip("/")
    if trimmed.endswith("/v1"):
        trimmed = trimmed[: -len("/v1")]
    return trimmed


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _alive(ref: weakref.ref[asyncio.AbstractEventLoop]) -> bool:
    loop = ref()
    return loop is not None and not loop.is_closed()
