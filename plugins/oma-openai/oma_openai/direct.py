"""``provider_options={"transport": "direct"}``: Chat Completions and Responses without the SDK.

The body is the one ``render`` returns, sent as compact JSON over one ``aiohttp`` session per
event loop (the toolkit's ``AioHttpClient``); the reply is decoded here and read through the
toolkit's ``JsonView`` by the same code that reads the SDK's models, and a stream is parsed by
the toolkit's ``SSEParser``. What the SDK adds per request (its request options, models,
retries and headers) is left out, which is most of a call's CPU at many calls in flight.
Errors are the plugin's own (``status_error``, ``stream_error``), the same as on the SDK's
transports; transport faults are the toolkit's ``error_from_exception``.
"""

from __future__ import annotations

import asyncio
import contextlib
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

from .errors import status_error, stream_error

__all__ = ["DirectClient"]

#: SDK client options that become headers here.
_HEADER_OPTIONS = {"organization": "OpenAI-Organization", "project": "OpenAI-Project"}

#: The Responses API's events that end a stream (it sends no ``[DONE]``).
_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
#: Seconds to wait for the body's end after ``[DONE]`` before closing the connection.
_DRAIN_GRACE = 2.0

Secrets = Callable[[], tuple[str, ...]]


class DirectClient:
    """POSTs rendered bodies to ``{base_url}/chat/completions`` or ``{base_url}/responses``;
    one per provider."""

    def __init__(
        self,
        display_name: str,
        base_url: str,
        api_key: str,
        client_options: Mapping[str, Any],
        limits: ReadLimits | None = None,
        max_connections: int = 100,
    ) -> None:
        self.display_name = display_name
        self._base = base_url.rstrip("/")
        headers = {"authorization": f"Bearer {api_key}"}
        for option, header in _HEADER_OPTIONS.items():
            if client_options.get(option):
                headers[header] = str(client_options[option])
        headers.update(dict(client_options.get("default_headers") or {}))
        query = client_options.get("default_query")
        self._params = {str(k): str(v) for k, v in query.items()} if query else None
        timeout = client_options.get("timeout")
        self._http = AioHttpClient(
            headers=headers,
            total=float(timeout) if timeout is not None else None,
            limits=limits,
            max_connections=max_connections,
        )

    async def complete(
        self, body: Mapping[str, Any], secrets: Secrets, path: str = "/chat/completions"
    ) -> JsonView:
        reply = await aio_post_json(
            self._http.get(),
            self._base + path,
            encode_json(body),
            provider=self.display_name,
            params=self._params,
            status_error=self._status_error(secrets),
            limits=self._http.limits,
            idle=self._http.idle,
        )
        if not isinstance(reply, dict):
            raise malformed_response(self.display_name, "the reply is not a JSON object")
        return JsonView(reply)

    async def stream(
        self, body: Mapping[str, Any], secrets: Secrets, path: str = "/chat/completions"
    ) -> AsyncIterator[JsonView]:
        """The stream's chunks (Chat Completions) or events (Responses), up to ``[DONE]`` or
        the Responses API's final event; an ``error`` object is raised as the plugin's
        ``stream_error``."""
        events = aio_stream_sse(
            self._http.get(),
            self._base + path,
            encode_json(body),
            provider=self.display_name,
            params=self._params,
            status_error=self._status_error(secrets),
            limits=self._http.limits,
            idle=self._http.idle,
        )
        error: ProviderError | None = None
        try:
            async for event in events:
                data = event.data
                if data == "[DONE]":
                    await _drain(events)
                    break
                chunk = _decode(data)
                if not isinstance(chunk, dict):
                    error = malformed_response(self.display_name, "a stream chunk is not JSON")
                    break
                problem = chunk.get("error")
                if isinstance(problem, Mapping):
                    error = stream_error(problem, self.display_name, secrets())
                    break
                yield JsonView(chunk)
                if chunk.get("type") in _FINAL_EVENTS:
                    await _drain(events)
                    break
        finally:
            await events.aclose()
        if error is not None:
            raise error

    async def aclose(self) -> None:
        await self._http.aclose()

    def _status_error(
        self, secrets: Secrets
    ) -> Callable[[int, Mapping[str, str], bytes], ProviderError]:
        def build(status: int, headers: Mapping[str, str], body: bytes) -> ProviderError:
            return status_error(status, headers, body, self.display_name, secrets())

        return build


async def _drain(events: AsyncIterator[Any]) -> None:
    """The reply is whole. Read on to the body's end, as the SDK does, so the connection
    goes back to the pool; a server that keeps it open gets a short grace, then the caller
    closes the connection."""
    with contextlib.suppress(TimeoutError, ProviderError):
        async with asyncio.timeout(_DRAIN_GRACE):
            async for _ in events:
                pass


def _decode(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None
