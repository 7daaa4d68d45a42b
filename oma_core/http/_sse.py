"""Server-sent events for provider plugins: httpx-sse with a bounded event size.

``sse_events`` reads a streamed ``httpx.Response`` as events through httpx-sse's
``EventSource``; the bytes it is fed are counted from the last event boundary, so a service
(or anything between it and us) that sends an endless event fails with a non-retryable
``ProviderError`` naming the limit (``too_large``) instead of filling memory. ``stream_sse``
opens the POST as well and turns every failure — an error status, a transport fault
mid-stream, a body that is not an event stream — into a ``ProviderError``. httpx and
httpx-sse are imported on first use.

``aio_stream_sse`` is ``stream_sse`` over an ``aiohttp`` session, with its own bounded parser
(``SSEParser``, yielding ``SSEMessage``s, which ``event_json`` reads like httpx-sse's events).
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import json
from collections.abc import AsyncGenerator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ._bounded import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_EVENT_BYTES,
    EventBytes,
    ReadLimits,
    invalid_utf8,
    too_large,
)
from ._client import StatusError, error_from_event, malformed_response
from ._framed import aio_framed, httpx_framed

if TYPE_CHECKING:
    import aiohttp
    import httpx
    from httpx_sse import ServerSentEvent

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "SSEMessage",
    "SSEParser",
    "aio_stream_sse",
    "event_json",
    "sse_events",
    "stream_sse",
]

#: What a request for an event stream sends besides its JSON headers.
_ACCEPT = {"accept": "text/event-stream", "cache-control": "no-store"}


class _BoundedBody:
    """What ``EventSource`` reads: the response's headers and its text, counted in bytes since
    the last blank line; past ``limit`` the read fails (``too_large``, not retryable), and a
    body that is not UTF-8 is a malformed response.

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
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._events = EventBytes()
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
                chunk: bytes | None = await anext(self._chunks)
            except StopAsyncIteration:
                chunk = None
            if chunk is None:  # the end, handled outside the handler: nothing chained
                self._ended = True
                try:
                    rest = self._decoder.decode(b"", final=True)
                except UnicodeDecodeError:
                    rest = None
                if rest is None:
                    raise invalid_utf8(self._provider)
                if rest:
                    return rest
                break
            if self._events.add(chunk) > self._limit:
                raise too_large(self._provider, "server-sent event", self._limit, "max_event_bytes")
            try:
                text = self._decoder.decode(chunk)
            except UnicodeDecodeError:
                text = None
            if text is None:
                raise invalid_utf8(self._provider)
            if text:
                return text
        raise StopAsyncIteration

    async def aclose(self) -> None:
        if self._chunks is not None:
            await self._chunks.aclose()


async def sse_events(
    response: httpx.Response,
    *,
    provider: str,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncGenerator[ServerSentEvent, None]:
    """An async generator: the events of a streamed ``response`` (opened with
    ``client.stream``), as httpx-sse's
    ``ServerSentEvent`` (``event``, ``data``, ``id``, ``retry``; ``json()`` decodes ``data``).

    A body that is not ``text/event-stream`` is a malformed-response ``ProviderError``; an
    event larger than ``max_event_bytes`` a non-retryable one (``too_large``). Transport
    faults propagate as httpx raised them; ``stream_sse`` maps them.
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
    """An async generator: POST ``body`` as JSON and yield the reply's server-sent events.

    An async generator: closing it (``aclose``, or leaving ``async for`` early and closing)
    closes the response and returns its connection. Every failure is a ``ProviderError``
    built from strings: an error status (its body read, bounded), a transport fault before or
    during the stream (retryable), a reply that is not an event stream (malformed, retryable),
    an oversized event or body (``too_large``, not retryable), a redirect (refused). Whether
    the stream ended where it should is the caller's to judge: a stream that ends without the
    provider's final event must raise a retryable ``malformed_response`` (see
    ``docs/writing-a-provider.md``).
    """
    stream = httpx_framed(
        client, url, body,
        lambda response: sse_events(response, provider=provider, max_event_bytes=max_event_bytes),
        accept=_ACCEPT, provider=provider, secrets=secrets, headers=headers, params=params,
    )  # fmt: skip
    async with contextlib.aclosing(stream) as events:
        async for event in events:
            yield event


def event_json(
    event: ServerSentEvent | SSEMessage, *, provider: str, secrets: Iterable[str] = ()
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
    if is_error_object(data):
        raise error_from_event(data, provider=provider, secrets=secrets)
    return data


def is_error_object(data: Mapping[str, Any]) -> bool:
    """Whether a streamed JSON object is the service's error rather than a reply: an
    ``"error"`` member holding an object or a text (``{"error": "model not found"}``, as
    Ollama sends), or ``"object"`` / ``"type"`` equal to ``"error"``."""
    return (
        isinstance(data.get("error"), dict | str)
        or data.get("object") == "error"
        or data.get("type") == "error"
    )


class SSEMessage:
    """One server-sent event: its ``event`` name (``"message"`` when none was given), its
    ``data`` (the data lines joined by newlines), ``id`` and ``retry``."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(
        self, event: str, data: str, id: str | None = None, retry: int | None = None
    ) -> None:
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry

    def json(self) -> Any:
        return json.loads(self.data)

    def __repr__(self) -> str:
        return f"SSEMessage(event={self.event!r}, data=<{len(self.data)} chars>)"


class SSEParser:
    """The event-stream format (WHATWG HTML, "server-sent events") parsed from bytes as they
    arrive: ``feed`` returns the events each chunk completes. A line may end in CR, LF or
    CRLF and may straddle chunks; more than ``limit`` bytes without an event boundary is a
    non-retryable ``ProviderError`` naming the limit (``too_large``)."""

    def __init__(self, provider: str, limit: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._provider = provider
        self._limit = limit
        self._rest = b""  # an incomplete last line
        self._pending = 0  # bytes since the last event boundary
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, chunk: bytes) -> list[SSEMessage]:
        buffer = self._rest + chunk if self._rest else chunk
        lines = buffer.splitlines(keepends=True)
        last = lines[-1] if lines else b""
        # A last line without its end is kept; so is one ending in CR (an LF may follow).
        if last and last[-1:] != b"\n":
            self._rest = lines.pop()
        else:
            self._rest = b""
        events: list[SSEMessage] = []
        for raw in lines:
            line = raw.rstrip(b"\r\n")
            if line:
                self._pending += len(raw)
                self._field(line)
            else:
                self._pending = 0
                self._dispatch(events)
        if self._pending + len(self._rest) > self._limit:
            raise too_large(self._provider, "server-sent event", self._limit, "max_event_bytes")
        return events

    def close(self) -> list[SSEMessage]:
        """The end of the body: a last event without its blank line is dropped, as the format
        says (an incomplete event is not dispatched)."""
        return []

    def _field(self, line: bytes) -> None:
        if line[:1] == b":":
            return  # a comment
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            self._retry = int(value)

    def _dispatch(self, events: list[SSEMessage]) -> None:
        if self._data:
            data = "\n".join(self._data)
            events.append(SSEMessage(self._event or "message", data, self._id, self._retry))
            self._data = []
        self._event = ""


async def aio_stream_sse(
    session: aiohttp.ClientSession,
    url: str,
    body: Mapping[str, Any] | bytes,
    *,
    provider: str,
    secrets: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    max_event_bytes: int | None = None,
    status_error: StatusError | None = None,
    limits: ReadLimits | None = None,
    idle: float | None = DEFAULT_IDLE_TIMEOUT,
) -> AsyncGenerator[SSEMessage, None]:
    """An async generator: ``stream_sse`` over an aiohttp session (POST ``body`` and yield
    the reply's events).

    Closing the generator closes the response (its connection is not reused unless the body
    was read to its end). Every failure is a ``ProviderError`` built from strings, as with
    ``stream_sse``; an error status is read (bounded) and given to ``status_error`` if given;
    a redirect is refused. The body is decoded through a ``BodyReader`` held to ``limits``
    (``max_event_bytes``, if given, replaces theirs); a stream silent for ``idle`` seconds
    fails with ``idle_timeout``.
    """
    stream = aio_framed(
        session, url, body, functools.partial(SSEParser, provider),
        content_type="text/event-stream", accept=_ACCEPT,
        unlabelled="the reply is not an event stream", provider=provider, secrets=secrets,
        headers=headers, params=params, max_event_bytes=max_event_bytes,
        status_error=status_error, limits=limits, idle=idle,
    )  # fmt: skip
    async with contextlib.aclosing(stream) as events:
        async for event in events:
            yield event
