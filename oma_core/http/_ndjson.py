"""Newline-delimited JSON streams for provider plugins (Ollama's ``/api/chat``, and others).

The NDJSON counterpart of ``_sse``: ``ndjson_lines`` reads a streamed ``httpx.Response`` as
one JSON object per line, holding each line to ``max_event_bytes`` (``too_large``, not
retryable, instead of filling memory) and refusing a line that is not UTF-8 (``invalid_utf8``)
or not a JSON object (``malformed_response``, retryable); an error object (``{"error":
"text"}``, ``{"error": {...}}``) is raised as ``error_from_event``, so a provider's loop sees
only the service's real lines. ``stream_ndjson`` opens the POST as well and turns every
failure into a ``ProviderError`` exactly as ``stream_sse`` does; ``aio_stream_ndjson`` is the
same over an aiohttp session, as ``aio_stream_sse`` is for events. httpx and aiohttp are
imported on first use.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ._bounded import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_EVENT_BYTES,
    ReadLimits,
    invalid_utf8,
    too_large,
)
from ._client import StatusError, error_from_event, malformed_response
from ._framed import aio_framed, httpx_framed
from ._sse import is_error_object

if TYPE_CHECKING:
    import aiohttp
    import httpx

__all__ = ["LineSplitter", "aio_stream_ndjson", "line_json", "ndjson_lines", "stream_ndjson"]

#: What a request for NDJSON sends besides its JSON headers.
_ACCEPT = {"accept": "application/x-ndjson"}


class LineSplitter:
    """Bytes in, complete lines out: ``feed`` returns the lines a chunk completes (without
    their ``\\n`` or ``\\r\\n``); more than ``limit`` bytes without a line end is a
    non-retryable ``ProviderError`` naming ``max_event_bytes`` (``too_large``)."""

    def __init__(self, provider: str, limit: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self._provider = provider
        self._limit = limit
        self._rest: list[bytes] = []  # the pieces of a line not ended yet
        self._size = 0  # their length

    def feed(self, chunk: bytes) -> list[bytes]:
        if b"\n" not in chunk:  # kept as a piece: a long line is joined once, at its end
            self._rest.append(chunk)
            self._size += len(chunk)
            lines: list[bytes] = []
        else:
            lines = (b"".join(self._rest) + chunk).split(b"\n")
            last = lines.pop()
            self._rest, self._size = [last], len(last)
        if self._size > self._limit or any(len(line) > self._limit for line in lines):
            raise too_large(self._provider, "stream line", self._limit, "max_event_bytes")
        return [line.removesuffix(b"\r") for line in lines]

    def close(self) -> list[bytes]:
        """The end of the body: a last line without its line end is still a line."""
        rest = b"".join(self._rest)
        self._rest, self._size = [], 0
        return [rest.removesuffix(b"\r")] if rest.strip() else []


class _JsonLines:
    """``LineSplitter``'s lines as JSON objects (``line_json``; blank lines skipped): the
    framing of both NDJSON readers. Lazy, so the lines before a bad one are yielded first."""

    def __init__(self, provider: str, limit: int, secrets: Iterable[str]) -> None:
        self._splitter = LineSplitter(provider, limit)
        self._provider = provider
        self._secrets = secrets

    def feed(self, chunk: bytes) -> Iterator[dict[str, Any]]:
        return self._json(self._splitter.feed(chunk))

    def close(self) -> Iterator[dict[str, Any]]:
        return self._json(self._splitter.close())

    def _json(self, lines: list[bytes]) -> Iterator[dict[str, Any]]:
        for line in lines:
            if line.strip():
                yield line_json(line, provider=self._provider, secrets=self._secrets)


def line_json(line: bytes | str, *, provider: str, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """One line as a JSON object: a line that is not UTF-8 is ``invalid_utf8``, one that is
    not a JSON object a malformed response (both retryable); an error object is raised as
    ``error_from_event`` (see ``event_json``, its SSE counterpart)."""
    text: str | None = line if isinstance(line, str) else None
    if isinstance(line, bytes):
        with contextlib.suppress(UnicodeDecodeError):
            text = line.decode("utf-8")
    if text is None:  # raised here, not in a handler: nothing chained
        raise invalid_utf8(provider)
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise malformed_response(provider, "a stream line is not a JSON object")
    if is_error_object(data):
        raise error_from_event(data, provider=provider, secrets=secrets)
    return data


async def ndjson_lines(
    response: httpx.Response,
    *,
    provider: str,
    secrets: Iterable[str] = (),
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncGenerator[dict[str, Any], None]:
    """An async generator: the lines of a streamed ``response`` (opened with
    ``client.stream``) as JSON objects;
    blank lines are skipped. Any content type is read (services label NDJSON in several
    ways); the framing decides. Transport faults propagate as httpx raised them;
    ``stream_ndjson`` maps them."""
    lines = _JsonLines(provider, max_event_bytes, secrets)
    chunks = response.aiter_bytes()
    try:
        async for chunk in chunks:
            for line in lines.feed(chunk):
                yield line
        for line in lines.close():
            yield line
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]


async def stream_ndjson(
    client: httpx.AsyncClient,
    url: str,
    body: Mapping[str, Any],
    *,
    provider: str,
    secrets: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
) -> AsyncGenerator[dict[str, Any], None]:
    """An async generator: POST ``body`` as JSON and yield the reply's lines as JSON objects
    (``ndjson_lines``).

    An async generator: closing it (``async with aclosing(...)``) closes the response and
    returns its connection. Every failure is a ``ProviderError`` built from strings, as with
    ``stream_sse``: an error status (its body read, bounded), a transport fault or a timeout
    before or during the stream (retryable), a line that is not UTF-8 or not a JSON object
    (malformed, retryable), the service's error line (``error_from_event``: retryable unless
    it carries an HTTP-like ``code``), an oversized line or body (``too_large``, not
    retryable), a redirect (refused). Whether the stream ended where it should is the
    caller's to judge (``stream_end``).
    """
    stream = httpx_framed(
        client, url, body,
        lambda response: ndjson_lines(
            response, provider=provider, secrets=secrets, max_event_bytes=max_event_bytes
        ),
        accept=_ACCEPT, provider=provider, secrets=secrets, headers=headers, params=params,
    )  # fmt: skip
    async with contextlib.aclosing(stream) as lines:
        async for line in lines:
            yield line


async def aio_stream_ndjson(
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
) -> AsyncGenerator[dict[str, Any], None]:
    """An async generator: ``stream_ndjson`` over an aiohttp session (POST ``body`` and
    yield the reply's lines as JSON objects).

    Closing the generator closes the response. Every failure is a ``ProviderError`` built
    from strings, as with ``aio_stream_sse``: an error status is read (bounded) and given to
    ``status_error`` if given; a redirect is refused; the body is decoded through a
    ``BodyReader`` held to ``limits`` (``max_event_bytes``, if given, replaces theirs); a
    stream silent for ``idle`` seconds fails with ``idle_timeout``.
    """
    secrets = tuple(secrets)
    stream = aio_framed(
        session, url, body, lambda limit: _JsonLines(provider, limit, secrets),
        content_type="application/x-ndjson",  # whatever the label: lines, UTF-8
        accept=_ACCEPT, unlabelled=None, provider=provider, secrets=secrets, headers=headers,
        params=params, max_event_bytes=max_event_bytes, status_error=status_error,
        limits=limits, idle=idle,
    )  # fmt: skip
    async with contextlib.aclosing(stream) as lines:
        async for line in lines:
            yield line
