"""Server-sent events for provider plugins: httpx-sse with a bounded event size.

``sse_events`` reads a streamed ``httpx.Response`` as events through httpx-sse's
``EventSource``; the bytes it is fed are counted from the last event boundary, so a service
(or anything between it and us) that sends an endless event fails with a malformed-response
``ProviderError`` instead of filling memory. ``stream_sse`` opens the POST as well and turns
every failure — an error status, a transport fault mid-stream, a body that is not an event
stream — into a ``ProviderError``. httpx and httpx-sse are imported on first use.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ._http import (
    _json_headers,
    encode_json,
    error_from_event,
    error_from_exception,
    error_from_streamed_response,
    malformed_response,
)
from .errors import ProviderError

if TYPE_CHECKING:
    import httpx
    from httpx_sse import ServerSentEvent

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "event_json", "sse_events", "stream_sse"]

#: The largest event ``sse_events`` accepts by default (bytes on the wire, field names and
#: line ends included): 16 MiB, more than any model's single streamed chunk.
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

# An event ends at a blank line: two line ends in a row, in any of SSE's three spellings.
_BOUNDARY = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")


class _BoundedBody:
    """What ``EventSource`` reads: the response's headers and its text, counted in bytes since
    the last blank line; past ``limit`` the read fails with a malformed-response error.

    ``aiter_text`` returns this object, an iterator rather than an async generator: httpx-sse
    does not close the iterator it reads, and a generator left open would be finalised late by
    the garbage collector. ``aclose`` closes the response's byte iterator under it.
    """

    def __init__(self, response: httpx.Response, limit: int, provider: str) -> None:
        self._response = response
        self._limit = limit
        self._provider = provider
        self.headers = response.headers
        self._chunks: AsyncGenerator[bytes, None] | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = 0  # bytes since the last event boundary
        self._tail = b""  # the last bytes of the previous chunk (a boundary may straddle two)
        self._ended = False

    def aiter_text(self) -> _BoundedBody:
        self._chunks = self._response.aiter_bytes()  # type: ignore[assignment]
        return self

    def __aiter__(self) -> _BoundedBody:
        return self

    async def __anext__(self) -> str:
        assert self._chunks is not None, "aiter_text() first"
        while not self._ended:
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:
                self._ended = True
                rest = self._decoder.decode(b"", final=True)
                if rest:
                    return rest
                break
            self._count(chunk)
            text = self._decoder.decode(chunk)
            if text:
                return text
        raise StopAsyncIteration

    def _count(self, chunk: bytes) -> None:
        window = self._tail + chunk
        last = None
        for match in _BOUNDARY.finditer(window):
            last = match
        if last is not None and last.end() > len(self._tail):
            self._pending = len(window) - last.end()
        else:
            self._pending += len(chunk)
        if self._pending > self._limit:
            raise malformed_response(
                self._provider, f"a server-sent event exceeds {self._limit} bytes"
            )
        self._tail = window[-3:]

    async def aclose(self) -> None:
        if self._chunks is not None:
            await self._chunks.aclose()


async def sse_events(
    response: httpx.Response,
    *,
    provider: str,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncGenerator[ServerSentEvent, None]:
    """The events of a streamed ``response`` (opened with ``client.stream``), as httpx-sse's
    ``ServerSentEvent`` (``event``, ``data``, ``id``, ``retry``; ``json()`` decodes ``data``).

    A body that is not ``text/event-stream``, or an event larger than ``max_event_bytes``, is a
    malformed-response ``ProviderError``. Transport faults propagate as httpx raised them;
    ``stream_sse`` maps them.
    """
    from httpx_sse import EventSource, SSEError

    body = _BoundedBody(response, max_event_bytes, provider)
    source = EventSource(body)  # type: ignore[arg-type]
    error: ProviderError | None = None
    events = source.aiter_sse()
    try:
        async for event in events:
            yield event
    except SSEError:
        error = malformed_response(provider, "the reply is not an event stream")
    finally:
        await events.aclose()
        await body.aclose()
    if error is not None:
        raise error


async def stream_sse(
    client: httpx.AsyncClient,
    url: str,
    body: Mapping[str, Any],
    *,
    provider: str,
    secrets: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncGenerator[ServerSentEvent, None]:
    """POST ``body`` as JSON and yield the reply's server-sent events.

    An async generator: closing it (``aclose``, or leaving ``async for`` early and closing)
    closes the response and returns its connection. Every failure is a ``ProviderError``
    built from strings: an error status (its body read, bounded), a transport fault before or
    during the stream (retryable), a reply that is not an event stream or an oversized event
    (malformed, retryable). Whether the stream ended where it should is the caller's to judge:
    a stream that ends without the provider's final event must raise a retryable
    ``malformed_response`` (see ``docs/writing-a-provider.md``).
    """
    secrets = tuple(secrets)
    request_headers = {
        **_json_headers(headers),
        "accept": "text/event-stream",
        "cache-control": "no-store",
    }
    error: ProviderError | None = None
    async with contextlib.AsyncExitStack() as stack:
        try:
            response = await stack.enter_async_context(
                client.stream(
                    "POST", url, content=encode_json(body), headers=request_headers, params=params
                )
            )
        except Exception as exc:
            error = error_from_exception(exc, provider=provider, secrets=secrets)
        if error is None and response.status_code >= 400:
            error = await error_from_streamed_response(response, provider=provider, secrets=secrets)
        if error is None:
            events = sse_events(response, provider=provider, max_event_bytes=max_event_bytes)
            try:
                async for event in events:
                    yield event
            except Exception as exc:
                error = error_from_exception(exc, provider=provider, secrets=secrets)
            finally:
                await events.aclose()
    if error is not None:
        raise error


def event_json(
    event: ServerSentEvent, *, provider: str, secrets: Iterable[str] = ()
) -> dict[str, Any]:
    """An event's ``data`` as a JSON object. Data that is not one is a malformed-response
    ``ProviderError``; an error object (an ``"error"`` member, or ``"object"`` / ``"type"``
    equal to ``"error"``) is raised as ``error_from_event``, so a provider's loop only ever
    sees the service's real events."""
    try:
        data = json.loads(event.data)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise malformed_response(provider, "a stream event is not a JSON object")
    if (
        isinstance(data.get("error"), dict | str)
        or data.get("object") == "error"
        or data.get("type") == "error"
    ):
        raise error_from_event(data, provider=provider, secrets=secrets)
    return data
