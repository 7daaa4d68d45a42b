"""An MCP server over HTTP, held to bounds: the SDK's streamable HTTP (or SSE) transport on
an ``httpx2`` client whose replies are read through the core's ``BodyReader``.

A reply is decoded here step by step and counted as decoded, so a compression bomb fails its
request at ``max_message`` bytes instead of inflating (a JSON reply counts whole, an event
stream each event). A reply with an error status keeps the server's words (the first
``_EXCERPT`` characters), which the SDK would replace by "Server returned an error response";
a 404, or a 400 that speaks of the session, to a request that carried a session id means the
server no longer knows the session (it restarted): the link says so, and the toolset starts a
new session once.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import httpx2

from oma_core.errors import ProviderError
from oma_core.http import BodyReader, ReadLimits

__all__ = ["HttpLink", "http_server"]

#: How much of an error reply's body is kept for the error message.
_EXCERPT = 300
_SESSION_HEADER = "mcp-session-id"


class ReplyTooLarge(httpx2.SSEError, httpx2.StreamError):
    """A reply past ``max_message`` bytes, decoded. Both an ``SSEError`` and a
    ``StreamError``, the two the SDK turns into an error answer to the request (with this
    message) rather than a crash of its transport."""


class HttpLink:
    """What the connection knows of the HTTP session: whether the server still knows it."""

    def __init__(self, on_end: Callable[[], None]) -> None:
        self._on_end = on_end
        self.ended: str | None = None
        self.failure: str | None = None  # the last error reply, in the server's words

    def running(self) -> bool:
        return self.ended is None

    def session_expired(self) -> bool:
        return self.ended is not None

    def forgot(self, failure: str) -> None:
        if self.ended is None:
            self.ended = f"no longer knows the session ({failure})"
            self._on_end()


@contextlib.asynccontextmanager
async def http_server(
    url: str,
    headers: Mapping[str, str],
    kind: str,
    *,
    name: str,
    max_message: int,
    on_end: Callable[[], None],
) -> AsyncIterator[tuple[Any, Any, HttpLink]]:
    """The SDK's transport ``kind`` ("streamable-http" or "sse") at ``url``, with the SDK's
    own timeouts (30 s to connect, write and wait for a connection; 300 s to read, as a
    server may hold a stream open); same-origin redirects are the SDK's to follow."""
    link = HttpLink(on_end)
    hooks = _hooks(link, name, max_message)
    timeout = httpx2.Timeout(30.0, read=300.0)

    def client(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = timeout,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks)

    if kind == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(
            url,
            headers=dict(headers),
            timeout=30.0,
            sse_read_timeout=300.0,
            httpx_client_factory=client,
        ) as (read, write):
            yield read, write, link
        return

    from mcp.client.streamable_http import streamable_http_client

    async with (
        client(headers=dict(headers)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
    ):
        yield read, write, link


def _hooks(link: HttpLink, name: str, max_message: int) -> dict[str, list[Any]]:
    async def on_response(response: httpx2.Response) -> None:
        content_type = response.headers.get("content-type", "")
        streamed = content_type.split(";", 1)[0].strip().lower() == "text/event-stream"
        limits = ReadLimits(
            max_response_bytes=sys.maxsize if streamed else max_message,
            max_event_bytes=max_message,
        )
        reader = BodyReader(
            provider=f"MCP server {name!r}",
            limits=limits,
            content_encoding=response.headers.get("content-encoding", ""),
            content_type=content_type,
        )
        if "content-encoding" in response.headers:
            del response.headers["content-encoding"]
        response.stream = _Bounded(response.stream, reader, name, max_message)
        if response.status_code < 400 or response.request.method != "POST":
            # Only a message's reply says how a request failed: the GET of the server's
            # event stream answered 405 means "no such stream" (the specification's word).
            return
        try:
            body = (await response.aread()).decode(errors="replace").strip()
        except httpx2.HTTPError as error:
            body = str(error)
        failure = f"HTTP {response.status_code}" + (f": {body[:_EXCERPT]}" if body else "")
        link.failure = failure
        asked = response.request.headers.get(_SESSION_HEADER)
        if asked and (
            response.status_code == 404
            or (response.status_code == 400 and "session" in body.lower())
        ):
            link.forgot(failure)

    return {"response": [on_response]}


class _Bounded(httpx2.AsyncByteStream):
    """A reply's body read through a ``BodyReader``: decoded pieces, counted. An iterator
    object, not an async generator: httpx2 may leave it unfinished, and a generator left open
    would be finalised late by the garbage collector."""

    def __init__(self, stream: Any, reader: BodyReader, name: str, limit: int) -> None:
        self._stream = stream
        self._reader = reader
        self._name = name
        self._limit = limit
        self._chunks: Any = None
        self._pieces: Iterator[bytes] = iter(())
        self._ended = False

    def __aiter__(self) -> _Bounded:
        self._chunks = self._stream.__aiter__()
        return self

    async def __anext__(self) -> bytes:
        while True:
            try:
                piece = next(self._pieces, None)
            except ProviderError as error:
                raise self._refused(error) from None
            if piece is not None:
                return piece
            if self._ended:
                raise StopAsyncIteration
            try:
                raw = await self._chunks.__anext__()
            except StopAsyncIteration:
                self._ended = True
                self._pieces = self._reader.end()
                continue
            self._pieces = self._reader.feed(raw)

    def _refused(self, error: ProviderError) -> ReplyTooLarge:
        if error.retryable:  # the core's malformed body: corrupt, or not UTF-8
            return ReplyTooLarge(f"MCP server {self._name!r} sent a malformed reply: {error}")
        return ReplyTooLarge(
            f"MCP server {self._name!r} sent a reply larger than {self._limit} bytes decoded "
            "(max_message_bytes)"
        )

    async def aclose(self) -> None:
        await self._stream.aclose()
