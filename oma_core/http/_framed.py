"""A streamed POST read frame by frame: the loop ``_sse`` and ``_ndjson`` share.

A streamed reply is read the same way whatever its framing: the POST is opened (a redirect
refused; an error status read, bounded, and raised), the body is read chunk by chunk (over
aiohttp by ``aio_body``: decoded through a ``BodyReader`` and held to the idle timeout) and cut
into frames, and any fault on the way becomes a ``ProviderError`` raised once the reply is
closed. Only the framing differs: a ``Framer`` over aiohttp (``SSEParser`` for events,
``LineSplitter``'s JSON lines for NDJSON), a reader of the ``httpx.Response`` over httpx
(``sse_events``, ``ndjson_lines``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..errors import ProviderError
from ._bounded import DEFAULT_IDLE_TIMEOUT, BodyReader, ReadLimits
from ._client import (
    StatusError,
    aio_body,
    aio_post,
    encode_json,
    error_from_exception,
    error_from_streamed_response,
    json_headers,
    malformed_response,
)

if TYPE_CHECKING:
    import aiohttp
    import httpx

__all__ = ["Framer", "aio_framed", "httpx_framed"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Framer(Protocol[T_co]):
    """Bytes in, frames out: ``feed`` returns what a chunk of the body completes, ``close``
    what the end of the body completes (``SSEParser``, ``LineSplitter``)."""

    def feed(self, chunk: bytes, /) -> Iterable[T_co]: ...

    def close(self) -> Iterable[T_co]: ...


async def aio_framed(
    session: aiohttp.ClientSession,
    url: str,
    body: Mapping[str, Any] | bytes,
    framer: Callable[[int], Framer[T]],
    *,
    content_type: str,
    accept: Mapping[str, str],
    unlabelled: str | None,
    provider: str,
    secrets: Iterable[str],
    headers: Mapping[str, str] | None,
    params: Mapping[str, str] | None,
    max_event_bytes: int | None,
    status_error: StatusError | None,
    limits: ReadLimits | None,
    idle: float | None = DEFAULT_IDLE_TIMEOUT,
) -> AsyncGenerator[T, None]:
    """An async generator: POST ``body`` over aiohttp (``aio_post``, sending ``accept``'s
    headers too) and yield the frames of the reply, cut by ``framer(max_event_bytes)``.

    The body is decoded through a ``BodyReader`` held to ``limits`` (``max_event_bytes``, if
    given, replaces theirs) and framed as ``content_type``; a reply labelled otherwise is a
    malformed response saying ``unlabelled`` (None: any label is read as ``content_type``).
    Every fault while reading is raised as a ``ProviderError`` once the reply is closed.
    """
    secrets = tuple(secrets)
    limits = limits or ReadLimits()
    if max_event_bytes is not None:
        limits = ReadLimits(limits.max_response_bytes, max_event_bytes)
    opened = aio_post(
        session, url, body, provider=provider, secrets=secrets,
        headers={**(headers or {}), **accept}, params=params, status_error=status_error,
        idle=idle,
    )  # fmt: skip
    error: ProviderError | None = None
    async with opened as response:
        if unlabelled and not response.headers.get("content-type", "").startswith(content_type):
            error = malformed_response(provider, unlabelled)
        else:
            reader = BodyReader(
                provider=provider,
                limits=limits,
                content_encoding=response.headers.get("content-encoding", ""),
                content_type=content_type,
            )
            frames = framer(limits.max_event_bytes)
            pieces = aio_body(response, reader, provider=provider, idle=idle)
            try:
                async with contextlib.aclosing(pieces):
                    async for piece in pieces:
                        for frame in frames.feed(piece):
                            yield frame
                for frame in frames.close():
                    yield frame
            except Exception as exc:
                error = error_from_exception(exc, provider=provider, secrets=secrets)
    if error is not None:
        raise error


async def httpx_framed(
    client: httpx.AsyncClient,
    url: str,
    body: Mapping[str, Any],
    read: Callable[[httpx.Response], AsyncGenerator[T, None]],
    *,
    accept: Mapping[str, str],
    provider: str,
    secrets: Iterable[str],
    headers: Mapping[str, str] | None,
    params: Mapping[str, str] | None,
) -> AsyncGenerator[T, None]:
    """An async generator: ``aio_framed`` over httpx: POST ``body`` (``client.stream``, with
    ``accept``'s headers) and yield what ``read`` makes of the reply (``sse_events``,
    ``ndjson_lines``; closed with the reply). A transport fault, an error status (its body
    read, bounded) and every fault while reading are raised as a ``ProviderError`` once the
    reply is closed; the client's ``guard_hooks`` refuse a redirect."""
    secrets = tuple(secrets)
    request_headers = json_headers({**(headers or {}), **accept})
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
            frames = read(response)
            try:
                async for frame in frames:
                    yield frame
            except Exception as exc:
                error = error_from_exception(exc, provider=provider, secrets=secrets)
            finally:
                await frames.aclose()
    if error is not None:
        raise error
