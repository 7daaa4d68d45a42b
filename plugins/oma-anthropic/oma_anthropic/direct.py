"""``provider_options={"transport": "direct"}``: the Messages API without the SDK.

The body is the one ``render`` returns, sent as compact JSON over one ``aiohttp`` session per
event loop (the toolkit's ``AioHttpClient``); the reply is decoded here and read through the
toolkit's ``JsonView`` by the same mapping and stream assembler that read the SDK's models,
and a stream is parsed by the toolkit's ``SSEParser``. What the SDK adds per request (its
request options, models and headers) is left out, which is most of a call's CPU at many calls
in flight. Errors are the plugin's own ``status_error``, the same as on the SDK's transports;
transport faults are the toolkit's ``error_from_exception``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from oma_core import ProviderError
from oma_core.http import (
    AioHttpClient,
    JsonView,
    ReadLimits,
    aio_post_json,
    aio_stream_sse,
    encode_json,
    malformed_response,
)

from .capabilities import DISPLAY_NAME
from .errors import status_error

__all__ = ["API_VERSION", "DirectClient"]


def _api_version() -> str:
    """The ``anthropic-version`` header the installed SDK sends, so the wire is the same on
    every transport (the SDK keeps it in a private module; the documented first version if
    that moves)."""
    try:
        from anthropic._constants import ANTHROPIC_API_VERSION
    except ImportError:  # pragma: no cover - a future SDK layout
        return "2023-06-01"
    return str(ANTHROPIC_API_VERSION)


#: The ``anthropic-version`` header sent.
API_VERSION = _api_version()
DEFAULT_BASE_URL = "https://api.anthropic.com"

Secrets = Callable[[], tuple[str, ...]]


class DirectClient:
    """POSTs rendered bodies to ``{base_url}/v1/messages``; one per provider."""

    def __init__(
        self,
        base_url: str | None,
        api_key: str,
        headers: Mapping[str, str],
        timeout: float | None,
        limits: ReadLimits | None = None,
        max_connections: int = 100,
    ) -> None:
        self._url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/messages"
        self._http = AioHttpClient(
            headers={"x-api-key": api_key, "anthropic-version": API_VERSION, **headers},
            total=timeout,
            limits=limits,
            max_connections=max_connections,
        )

    async def complete(self, body: Mapping[str, Any], secrets: Secrets) -> JsonView:
        reply = await aio_post_json(
            self._http.get(),
            self._url,
            encode_json(body),
            provider=DISPLAY_NAME,
            status_error=_status_error(secrets),
            limits=self._http.limits,
            idle=self._http.idle,
        )
        if not isinstance(reply, dict):
            raise malformed_response(DISPLAY_NAME, "the reply is not a JSON object")
        return JsonView(reply)

    async def stream(self, body: Mapping[str, Any], secrets: Secrets) -> AsyncIterator[JsonView]:
        """The stream's events; an ``error`` event is raised as the plugin's ``status_error``."""
        events = aio_stream_sse(
            self._http.get(),
            self._url,
            encode_json({**body, "stream": True}),
            provider=DISPLAY_NAME,
            status_error=_status_error(secrets),
            limits=self._http.limits,
            idle=self._http.idle,
        )
        error: ProviderError | None = None
        try:
            async for event in events:
                if not event.data:
                    continue  # as the SDK does: an event without data carries nothing
                data = _decode(event.data)
                if not isinstance(data, dict) or not isinstance(data.get("type"), str):
                    error = malformed_response(DISPLAY_NAME, "a stream event is not a JSON object")
                    break
                if data["type"] == "error":
                    error = status_error(200, {}, data, secrets())
                    break
                yield JsonView(data)
        finally:
            await events.aclose()
        if error is not None:
            raise error

    async def aclose(self) -> None:
        await self._http.aclose()


def _status_error(secrets: Secrets) -> Callable[[int, Mapping[str, str], bytes], ProviderError]:
    def build(status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
        return status_error(status, headers, body, secrets())

    return build


def _decode(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None
