"""The Bedrock Converse provider: oma's provider interface over httpx, signed by botocore.

``complete`` POSTs ``/model/{modelId}/converse``; ``stream`` POSTs ``.../converse-stream``
and decodes its AWS event-stream frames (with their CRC32 checksums) with botocore's
decoder. Nothing blocks the event loop: credentials resolve off it, the transport is async,
and cancelling a call closes its connection at once. botocore's own retries never run (it
sends nothing here); the core owns the one retry ladder.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import Any, cast

import httpx
from botocore.eventstream import EventStreamBuffer, ParserError

from oma_core import ProviderError
from oma_core.capabilities import cache_ttl
from oma_core.errors import PluginError
from oma_core.http import (
    DEFAULT_FIRST_BYTE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    READ_OPTIONS,
    HttpTimeouts,
    LoopLocalClient,
    ReadLimits,
    encode_json,
    request_secrets,
    too_large,
)
from oma_core.toolkit import (
    ProviderEvent,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
)

from .capabilities import CAPABILITIES, DEFAULT_MAX_INLINE_BYTES, DISPLAY_NAME
from .errors import ERROR_BODY_LIMIT, http_error, malformed, stream_exception, transport_error
from .mapping import build_body, check_documents, check_inline_size
from .replies import MalformedReply, StreamAssembler, response_from_json
from .signing import AwsIdentity

__all__ = ["DEFAULT_MODEL", "OPTIONS", "BedrockProvider"]

DEFAULT_MODEL = "amazon.nova-pro-v1:0"
#: ``provider_options`` this provider reads.
OPTIONS = frozenset(
    {"region", "profile", "max_inline_bytes", "max_document_bytes", "timeout"}
    | {"additional_model_request_fields", "cache_ttl"}
    | set(READ_OPTIONS)
)
_CONNECT_TIMEOUT = 10.0
# the toolkit's defaults (120 s for the reply to start, 60 s of silence once it has), which
# ``timeout`` replaces
_READ_TIMEOUT = DEFAULT_FIRST_BYTE_TIMEOUT
_MAX_CONNECTIONS = 100


class BedrockProvider:
    """Sends ``ProviderRequest``s to Bedrock's Converse API; see ``docs/providers/bedrock.md``."""

    name = "bedrock"
    display_name = DISPLAY_NAME
    capabilities = CAPABILITIES

    def __init__(self, settings: ProviderSettings) -> None:
        options = settings.options
        unknown = sorted(set(options) - OPTIONS)
        if unknown:
            raise PluginError(
                f"unknown provider_options for bedrock: {', '.join(unknown)} "
                f"(known: {', '.join(sorted(OPTIONS))})",
                name=self.name,
            )
        limit = options.get("max_inline_bytes", DEFAULT_MAX_INLINE_BYTES)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            raise PluginError(
                'provider_options["max_inline_bytes"] must be a non-negative int', name=self.name
            )
        self._max_inline = limit
        self._extra_fields: Mapping[str, Any] | None = options.get(
            "additional_model_request_fields"
        )
        self._cache_ttl = cache_ttl(options, "bedrock")
        self._limits = ReadLimits.from_options(options, name=self.name)
        self._http = LoopLocalClient(
            timeouts=HttpTimeouts(
                connect=_CONNECT_TIMEOUT,
                read=float(options.get("timeout", _READ_TIMEOUT)),
                idle=float(options.get("timeout", DEFAULT_IDLE_TIMEOUT)),
            ),
            max_connections=_MAX_CONNECTIONS,
            provider=DISPLAY_NAME,
            limits=self._limits,
        )
        self._base_url = settings.base_url.rstrip("/") if settings.base_url else None
        self._identity = AwsIdentity(
            region=options.get("region"), profile=options.get("profile"), api_key=settings.api_key
        )

    # -- the provider interface

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        check_inline_size(request.messages, self._max_inline)
        check_documents(request.messages)
        model = request.model or DEFAULT_MODEL
        return build_body(request, self._extra_fields, model, self._cache_ttl)

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        model = request.model or DEFAULT_MODEL
        http_request = await self._build(request, model, "converse")
        error: ProviderError | None = None
        try:
            response = await self._client().send(http_request)
        except httpx.HTTPError as exc:
            error = transport_error(exc)
        if error is not None:
            raise error
        if response.status_code != 200:
            raise http_error(
                response.status_code, response.headers, response.content, self._secrets(request)
            )
        try:
            return response_from_json(json.loads(response.content), model)
        except (ValueError, MalformedReply) as exc:
            error = malformed(_detail(exc))
        raise error

    async def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        model = request.model or DEFAULT_MODEL
        http_request = await self._build(request, model, "converse-stream")
        error: ProviderError | None = None
        try:
            response = await self._client().send(http_request, stream=True)
        except httpx.HTTPError as exc:
            error = transport_error(exc)
        if error is not None:
            raise error
        frames: AsyncGenerator[tuple[str, str, bytes], None] | None = None
        try:
            if response.status_code != 200:
                body = await _error_body(response)
                raise http_error(
                    response.status_code, response.headers, body, self._secrets(request)
                )
            assembler = StreamAssembler(model)
            frames = _frames(response, self._limits.max_event_bytes)
            while True:
                event: ProviderEvent | None = None
                try:
                    frame = await anext(frames, None)
                    if frame is None:
                        break
                    kind, name, payload = frame
                    if kind != "event":
                        error = stream_exception(name, payload, self._secrets(request))
                    else:
                        event = assembler.feed(name, json.loads(payload))
                except httpx.HTTPError as exc:
                    error = transport_error(exc)
                except (ValueError, ParserError, MalformedReply) as exc:
                    error = malformed(_detail(exc))
                if error is not None:
                    raise error
                if event is not None:
                    yield event
            try:
                final = assembler.finish()
            except MalformedReply as exc:
                error = malformed(exc.detail)
            if error is not None:
                raise error
            yield ResponseComplete(final)
        finally:
            if frames is not None:
                await frames.aclose()
            await response.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- helpers

    async def _build(self, request: ProviderRequest, model: str, action: str) -> httpx.Request:
        """The signed POST for ``request`` (refusals and size checks come first: nothing is
        signed for a request that will not be sent)."""
        data = encode_json(self.render(request))
        await self._identity.resolve()
        base = self._base_url or f"https://bedrock-runtime.{self._identity.region}.amazonaws.com"
        url = f"{base}/model/{urllib.parse.quote(model, safe='')}/{action}"
        accept = "application/vnd.amazon.eventstream" if action.endswith("stream") else None
        headers = {"content-type": "application/json"}
        if accept:
            headers["accept"] = accept
        signed = await self._identity.headers(url, data, headers)
        return self._client().build_request("POST", url, content=data, headers=signed)

    def _client(self) -> httpx.AsyncClient:
        return self._http.get()

    def _secrets(self, request: ProviderRequest) -> tuple[str | None, ...]:
        """What no error may quote: the credentials, and the request's text and media (a
        service's message sometimes quotes what it was sent)."""
        return (*self._identity.secrets(), *request_secrets(request, None))


async def _error_body(response: httpx.Response) -> bytes:
    """At most ``ERROR_BODY_LIMIT`` bytes of a streamed error reply (what arrived, if cut)."""
    chunks: list[bytes] = []
    size = 0
    with contextlib.suppress(httpx.HTTPError):
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= ERROR_BODY_LIMIT:
                break
    return b"".join(chunks)[:ERROR_BODY_LIMIT]


async def _frames(
    response: httpx.Response, max_event_bytes: int
) -> AsyncGenerator[tuple[str, str, bytes], None]:
    """``(message type, event or exception type, payload)`` for each event-stream frame;
    botocore's decoder checks each frame's prelude and message CRC32. More than
    ``max_event_bytes`` without a whole frame is refused (the body is bounded already)."""
    buffer = EventStreamBuffer()
    pending = 0  # bytes received and not yet part of a whole frame
    async for chunk in response.aiter_raw():
        buffer.add_data(chunk)
        pending += len(chunk)
        if pending > max_event_bytes:
            raise too_large(DISPLAY_NAME, "event-stream frame", max_event_bytes, "max_event_bytes")
        for message in cast("Iterable[Any]", buffer):  # the stubs type its fields as int
            pending -= message.prelude.total_length
            headers = message.headers
            kind = str(headers.get(":message-type", "event"))
            if kind == "event":
                name = headers.get(":event-type", "")
            elif kind == "exception":
                name = headers.get(":exception-type", "")
            else:  # "error": a protocol-level failure
                name = headers.get(":error-code", "error")
            yield kind, str(name), bytes(message.payload)
    if pending:
        raise ParserError("the stream ended inside an event-stream frame")


def _detail(exc: BaseException) -> str:
    if isinstance(exc, MalformedReply):
        return exc.detail
    return f"{type(exc).__name__} while decoding the reply"
