"""Replies a provider plugin reads, held to bounds: no redirect, no unbounded body or event.

One rule for every transport: a 3xx is never followed (a model API that redirects a POST is
misconfigured or hostile, and following it would resend the body and the ``provider_options``
headers to another host); a reply body is decoded here, in steps of at most ``STEP`` bytes,
and counted as decoded, so a compression bomb stops at ``max_response_bytes`` instead of
inflating; in an event stream (SSE) or a line stream (NDJSON), the bytes since the last event
boundary are counted against ``max_event_bytes``, and invalid UTF-8 is refused.

``BodyReader`` is the rule, fed raw bytes by any HTTP library. ``guard_hooks`` applies it to an
httpx (or httpx2, the fork the OpenAI and Anthropic SDKs use) client through its public
``event_hooks``, so an SDK reading the body itself is bounded too; the toolkit's aiohttp helpers
feed it directly.
"""

from __future__ import annotations

import asyncio
import codecs
import re
import sys
import zlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from ..errors import PluginError, ProviderError

__all__ = [
    "DEFAULT_FIRST_BYTE_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_RESPONSE_BYTES",
    "READ_OPTIONS",
    "BodyReader",
    "ReadLimits",
    "guard_hooks",
    "idle_timeout",
    "invalid_utf8",
    "redirect_refused",
    "too_large",
]

#: The largest reply body read, decoded (a streamed reply counts whole): 32 MiB.
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
#: The largest server-sent event or NDJSON line, decoded: 8 MiB.
DEFAULT_MAX_EVENT_BYTES = 8 * 1024 * 1024
#: How long a reply may take to start (its headers; a non-streamed reply's whole body may
#: come with them): 120 s. ``provider_options["timeout"]`` replaces it.
DEFAULT_FIRST_BYTE_TIMEOUT = 120.0
#: How long a reply that has started may send nothing (between two stream events): 60 s.
#: ``provider_options["timeout"]`` replaces it.
DEFAULT_IDLE_TIMEOUT = 60.0
#: The ``provider_options`` that set the limits.
READ_OPTIONS = ("max_response_bytes", "max_event_bytes")
#: The most bytes one decompression step may produce.
STEP = 64 * 1024
#: The encodings a client asks for (the ones decoded here, step by step).
ACCEPT_ENCODING = "gzip, deflate"

# An event ends at a blank line: two line ends in a row, in any of SSE's three spellings.
_BOUNDARY = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")


def _positive_int(_inst: object, attribute: Any, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{attribute.name} must be a whole number of bytes > 0, not {value!r}")


@attrs.frozen
class ReadLimits:
    """How much of a reply is read: the whole body and one event (or line), decoded bytes."""

    max_response_bytes: int = attrs.field(
        default=DEFAULT_MAX_RESPONSE_BYTES, validator=_positive_int
    )
    max_event_bytes: int = attrs.field(default=DEFAULT_MAX_EVENT_BYTES, validator=_positive_int)

    @classmethod
    def from_options(cls, options: Mapping[str, Any], *, name: str) -> ReadLimits:
        """The limits ``provider_options`` set (``READ_OPTIONS``); a bad value is a
        ``PluginError`` naming the plugin and the option."""
        given = {k: options[k] for k in READ_OPTIONS if options.get(k) is not None}
        for key, value in given.items():
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise PluginError(
                    f'provider_options["{key}"] must be a whole number of bytes > 0, not {value!r}',
                    name=name,
                )
        return cls(**given)


def redirect_refused(provider: str, status: int, location: str | None) -> ProviderError:
    """A 3xx: not followed, not retried. The message names the status and the Location's host
    (never its path, query or user info, which may hold a token)."""
    where = ""
    if location:
        try:
            parts = urlsplit(location)
            host = parts.hostname
            port = parts.port
        except ValueError:
            host, port = None, None
        where = f" to {host}{f':{port}' if port else ''}" if host else " to a relative location"
    return ProviderError(
        f"{provider} answered with a redirect (HTTP {status}){where}; redirects are not "
        "followed (check base_url)",
        status_code=status,
        provider=provider,
        retryable=False,
    )


def too_large(provider: str, what: str, limit: int, option: str) -> ProviderError:
    """A reply past a read limit: not retried (the same request would get the same reply)."""
    return ProviderError(
        f"{provider}'s {what} exceeds the limit of {limit} bytes "
        f'(provider_options["{option}"] raises it)',
        provider=provider,
        retryable=False,
    )


def idle_timeout(provider: str, seconds: float) -> ProviderError:
    """A reply that started and then sent nothing for ``seconds``: retryable, and the message
    says which timeout fired and what raises it."""
    return ProviderError(
        f"{provider} timed out: nothing came for {seconds:g} s in the middle of the reply "
        '(the idle timeout between stream events; provider_options["timeout"] raises it)',
        provider=provider,
        retryable=True,
    )


def invalid_utf8(provider: str) -> ProviderError:
    """A stream that is not UTF-8: the same error on every transport (a malformed response,
    retryable, as every reply that cannot be decoded)."""
    return ProviderError(
        f"{provider} sent a malformed response: the stream is not valid UTF-8",
        provider=provider,
        retryable=True,
    )


class BodyReader:
    """One reply's body, fed as raw bytes arrive: ``feed`` yields the decoded bytes in pieces
    of at most ``STEP``, counting them against the limits; ``end`` flushes the decoder.

    ``content_encoding`` may be empty, ``identity``, ``gzip`` or ``deflate`` (what clients ask
    for); another is refused as malformed. ``content_type`` picks the framing counted against
    ``max_event_bytes``: ``text/event-stream`` (events end at a blank line) or an NDJSON type
    (lines), and with either the body must be UTF-8.
    """

    def __init__(
        self,
        *,
        provider: str,
        limits: ReadLimits,
        content_encoding: str = "",
        content_type: str = "",
    ) -> None:
        self._provider = provider
        self._limits = limits
        encodings = [e.strip().lower() for e in content_encoding.split(",")]
        encodings = [e for e in encodings if e and e != "identity"]
        self._inflate: Any = None
        if encodings:
            if len(encodings) > 1 or encodings[0] not in ("gzip", "x-gzip", "deflate"):
                raise ProviderError(
                    f"{provider} sent a malformed response: unsupported content-encoding "
                    f"{content_encoding[:40]!r}",
                    provider=provider,
                    retryable=True,
                )
            # 32 + MAX_WBITS reads a gzip or a zlib header, whichever comes
            self._inflate = zlib.decompressobj(32 + zlib.MAX_WBITS)
        kind = content_type.split(";", 1)[0].strip().lower()
        self._framing = (
            "sse"
            if kind == "text/event-stream"
            else "lines"
            if kind in ("application/x-ndjson", "application/ndjson", "application/jsonl")
            else None
        )
        self._utf8 = codecs.getincrementaldecoder("utf-8")("strict") if self._framing else None
        self._utf8_whole = True  # the decoder holds no partial character
        self.size = 0  # decoded bytes so far
        self._pending = 0  # decoded bytes since the last event boundary
        self._events = EventBytes()

    def feed(self, raw: bytes) -> Iterator[bytes]:
        """The decoded pieces of ``raw`` (lazily: a bomb is stopped before it inflates)."""
        piece = self.one_piece(raw)  # the common chunk: no generator to make
        return self._pieces(raw) if piece is None else iter((piece,))

    def one_piece(self, raw: bytes) -> bytes | None:
        """``raw`` counted, when it is one piece as it stands (not compressed, at most
        ``STEP`` bytes, not empty): what ``feed`` would yield, with fewer steps per chunk;
        otherwise None, nothing counted (``feed`` it)."""
        if self._inflate is None and 0 < len(raw) <= STEP:
            return self._count(raw)
        return None

    def _pieces(self, raw: bytes) -> Iterator[bytes]:
        if self._inflate is None:
            for start in range(0, len(raw), STEP):
                yield self._count(raw[start : start + STEP])
            return
        data = raw
        while data and not self._inflate.eof:
            try:
                piece = self._inflate.decompress(data, STEP)
            except zlib.error:
                piece = None
            if piece is None:
                raise ProviderError(
                    f"{self._provider} sent a malformed response: the compressed body is corrupt",
                    provider=self._provider,
                    retryable=True,
                )
            data = self._inflate.unconsumed_tail
            if piece:
                yield self._count(piece)

    def end(self) -> Iterator[bytes]:
        """What the decoder still holds at the end of the body."""
        if self._inflate is not None and not self._inflate.eof:
            try:
                rest = self._inflate.flush()
            except zlib.error:
                rest = b""
            for start in range(0, len(rest), STEP):
                yield self._count(rest[start : start + STEP])
        if self._utf8 is not None and not _decodes(self._utf8, b"", final=True):
            raise invalid_utf8(self._provider)  # outside the handler: nothing chained

    def _count(self, piece: bytes) -> bytes:
        self.size += len(piece)
        limits = self._limits
        if self.size > limits.max_response_bytes:
            raise too_large(
                self._provider, "reply body", limits.max_response_bytes, "max_response_bytes"
            )
        framing = self._framing
        if framing is None:
            return piece
        # ASCII is whole UTF-8 by itself: decoded only when the decoder holds no partial
        # character (what a model streams is mostly ASCII JSON)
        if not (self._utf8_whole and piece.isascii()) and not self._decode_utf8(piece):
            raise invalid_utf8(self._provider)  # outside the handler: nothing chained
        if framing == "sse":
            self._pending = self._events.add(piece)
        else:
            cut = piece.rfind(b"\n")
            self._pending = len(piece) - cut - 1 if cut >= 0 else self._pending + len(piece)
        if self._pending > limits.max_event_bytes:
            what = "server-sent event" if framing == "sse" else "stream line"
            raise too_large(self._provider, what, limits.max_event_bytes, "max_event_bytes")
        return piece

    def _decode_utf8(self, piece: bytes) -> bool:
        assert self._utf8 is not None
        if not _decodes(self._utf8, piece):
            return False
        self._utf8_whole = not self._utf8.getstate()[0]
        return True


class EventBytes:
    """How many bytes of an event stream have come since its last event boundary (a blank
    line, which may straddle two pieces): what ``max_event_bytes`` holds, counted without
    parsing the events (``BodyReader``, and ``sse_events`` over httpx-sse)."""

    def __init__(self) -> None:
        self.pending = 0
        self._tail = b""  # the last bytes before this piece (a boundary may straddle two)

    def add(self, piece: bytes) -> int:
        """Count ``piece``; the bytes since the last boundary."""
        tail = self._tail
        window = tail + piece
        if b"\r" in window:
            end = _boundary_end(window)
        else:  # a boundary is two LFs: the last pair is found with rfind, not the regex
            at = window.rfind(b"\n\n")
            end = at + 2 if at >= 0 else -1
            if at > 0 and window[at - 1] == 10:  # 10: LF; a longer run, paired from its start
                end -= (end - len(window[:end].rstrip(b"\n"))) % 2
        if end > len(tail):
            self.pending = len(window) - end
        else:
            self.pending += len(piece)
        self._tail = window[-3:]
        return self.pending


def _boundary_end(window: bytes) -> int:
    """Where the last event boundary in ``window`` ends, as ``_BOUNDARY`` scanned from the
    left finds it; -1 if none. (The regex scan costs more than the rest of the guard: a
    window without a CR, the common one, is read with ``rfind`` by ``EventBytes.add``,
    which pairs a run of LFs from its start as the scan does.)"""
    end = -1
    for match in _BOUNDARY.finditer(window):
        end = match.end()
    return end


def _decodes(decoder: codecs.IncrementalDecoder, piece: bytes, final: bool = False) -> bool:
    """Whether ``piece`` continues valid UTF-8 in ``decoder``."""
    try:
        decoder.decode(piece, final)
    except UnicodeDecodeError:
        return False
    return True


async def next_chunk(chunks: Any, idle: float | None, provider: str) -> bytes:
    """A coroutine: the next chunk of an async iterator of bytes, waiting at most ``idle``
    seconds (None: no limit) before ``idle_timeout``; ``StopAsyncIteration`` at its end.
    (A stream read chunk after chunk keeps one ``IdleTimer`` instead.)"""
    timer = IdleTimer(idle, provider)
    try:
        return await timer.next(chunks)
    finally:
        timer.close()


class IdleTimer:
    """One stream's idle timeout: ``next`` waits for the next chunk at most ``idle`` seconds
    (None: no limit of its own; a whole-request timeout bounds it) before ``idle_timeout``;
    the library's own read timeout, once the reply has started, is a silence too.

    One timer serves the whole stream (a new ``asyncio.timeout`` per chunk cost more than the
    rest of the guard): each wait only notes its deadline, and the timer, when it comes
    early, re-arms itself for the latest one. It expires as ``asyncio.timeout`` does, by
    cancelling the waiting task, and takes that cancellation back by the task's count of
    them, so a cancellation from outside still propagates as ``CancelledError``. ``close``
    once the stream is done (else the timer lingers until it comes, ``idle`` at most)."""

    __slots__ = ("_armed", "_cancelling", "_deadline", "_fired", "_handle", "_idle", "_loop",
                 "_provider", "_task")  # fmt: skip

    def __init__(self, idle: float | None, provider: str) -> None:
        self._idle = idle
        self._provider = provider
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._armed = 0.0  # when the handle comes
        self._deadline = 0.0  # when the wait under way times out
        self._task: asyncio.Task[Any] | None = None  # the waiting task, None between waits
        self._cancelling = 0  # its count of cancellations when its wait began
        self._fired = False

    async def next(self, chunks: Any) -> bytes:
        """A coroutine: the next chunk of the async iterator ``chunks``;
        ``StopAsyncIteration`` at its end."""
        idle = self._idle
        if idle is None:
            return await chunks.__anext__()  # type: ignore[no-any-return]
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "IdleTimer.next runs in a task"
        self._deadline = loop.time() + idle
        if self._handle is None:
            self._arm()
        self._cancelling = task.cancelling()
        self._task = task
        try:
            return await chunks.__anext__()  # type: ignore[no-any-return]
        except asyncio.CancelledError:
            if not (self._fired and self._take_back()):
                raise
        except Exception as exc:
            if self._fired:  # expired, whatever the library made of its cancellation
                self._take_back()
            elif not _read_timeout(exc):
                raise
        finally:
            if self._fired:  # it came as the chunk did
                self._take_back()
            self._task = None
        raise idle_timeout(self._provider, idle)  # outside the handler: nothing chained

    def close(self) -> None:
        """The stream is done: the timer goes."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        assert self._loop is not None
        self._armed = self._deadline
        self._handle = self._loop.call_at(self._deadline, self._come)

    def _come(self) -> None:
        self._handle = None
        task = self._task
        if task is None:
            return  # between waits: the next wait arms it again
        if self._deadline > self._armed:
            self._arm()  # a chunk came since it was armed
            return
        self._fired = True
        task.cancel()

    def _take_back(self) -> bool:
        """Take the timer's cancellation of the waiting task back: whether it was the only
        one since the wait began (else one from outside must propagate)."""
        assert self._task is not None
        self._fired = False
        return self._task.uncancel() <= self._cancelling


def _read_timeout(exc: Exception) -> bool:
    """Whether ``exc`` is the HTTP library's own read timeout (httpx's and httpx2's
    ``ReadTimeout``, aiohttp's ``SocketTimeoutError``): once the reply has started, a silence."""
    name = type(exc).__name__
    return name.endswith("ReadTimeout") or name == "SocketTimeoutError"


# --------------------------------------------------------------------------- httpx / httpx2

Hook = Callable[[Any], Awaitable[None]]


def guard_hooks(
    provider: str,
    limits: ReadLimits | None = None,
    idle: float | None = DEFAULT_IDLE_TIMEOUT,
    first_byte: float | None = None,
) -> dict[str, list[Hook]]:
    """``event_hooks`` for an ``httpx.AsyncClient`` (or httpx2's): the request asks only for
    the encodings ``BodyReader`` decodes; a 3xx reply raises ``redirect_refused`` before the
    client could follow it; every other reply's body is read through a ``BodyReader`` (its
    ``content-encoding`` removed, so the client does not decode it again), and a body that
    sends nothing for ``idle`` seconds fails with ``idle_timeout`` (the client's own read
    timeout, longer, bounds the wait for the reply to start). ``first_byte``, if given, caps
    that read timeout on each request (for an SDK whose client must keep its own default
    timeout, which its local checks compare against)."""
    chosen = limits or ReadLimits()

    async def on_request(request: Any) -> None:
        request.headers["accept-encoding"] = ACCEPT_ENCODING
        if first_byte is not None:
            timeouts = dict(request.extensions.get("timeout") or {})
            read = timeouts.get("read")
            if read is None or read > first_byte:
                timeouts["read"] = first_byte
                request.extensions["timeout"] = timeouts

    async def on_response(response: Any) -> None:
        status = response.status_code
        if 300 <= status < 400:
            location = response.headers.get("location")
            await response.aclose()
            raise redirect_refused(provider, status, location)
        headers = response.headers
        reader = BodyReader(
            provider=provider,
            limits=chosen,
            content_encoding=headers.get("content-encoding", ""),
            content_type=headers.get("content-type", ""),
        )
        if "content-encoding" in headers:
            del headers["content-encoding"]
        timed = idle
        if idle is not None and "network_stream" in response.extensions:
            _read_timeout_is_idle(response.request, idle)
            timed = None  # httpcore holds the body to ``idle``: no timer of ours per chunk
        stream = _bounded_stream_class(response)(response.stream, reader, provider, idle, timed)
        response.stream = stream

    return {"request": [on_request], "response": [on_response]}


def _read_timeout_is_idle(request: Any, idle: float) -> None:
    """The read timeout of ``request``'s body becomes ``idle``, set as its reply arrives.

    A reply with httpcore's ``network_stream`` extension is read by httpcore (httpx's and
    httpx2's own transports), which waits for each piece of the body at most the request's
    ``timeout`` extension's ``read`` seconds, taken when the body is first read (after the
    response hooks): that limit is then the idle timeout between chunks, kept by the socket
    read itself, and its ``ReadTimeout`` becomes ``idle_timeout`` in ``_BoundedStream``. The
    headers kept the longer first-byte limit. (Another transport, aiohttp's under an SDK,
    fixes its read timeout when the request is sent: there an ``IdleTimer`` keeps ``idle``.)
    """
    timeouts = dict(request.extensions.get("timeout") or {})
    timeouts["read"] = idle
    request.extensions["timeout"] = timeouts


_STREAM_CLASSES: dict[str, type] = {}


def _bounded_stream_class(response: Any) -> type:
    """The bounded body stream for the HTTP library ``response`` comes from (httpx and
    httpx2 each check that a body is their own ``AsyncByteStream``)."""
    root = type(response).__module__.split(".", 1)[0]
    cls = _STREAM_CLASSES.get(root)
    if cls is None:
        base = sys.modules[root].AsyncByteStream
        cls = type("BoundedStream", (_BoundedStream, base), {})
        _STREAM_CLASSES[root] = cls
    return cls


class _BoundedStream:
    """A reply's body read through a ``BodyReader``. An iterator object, not an async
    generator: the HTTP library may leave it unfinished, and a generator left open would be
    finalised late by the garbage collector.

    ``timed``: the idle timeout an ``IdleTimer`` keeps between chunks; None when the HTTP
    library keeps ``idle`` itself (its read timeout, then reported as ``idle_timeout``)."""

    def __init__(
        self,
        stream: Any,
        reader: BodyReader,
        provider: str,
        idle: float | None,
        timed: float | None = None,
    ) -> None:
        self._stream = stream
        self._reader = reader
        self._provider = provider
        self._idle = idle
        self._timer = None if timed is None else IdleTimer(timed, provider)
        self._chunks: Any = None
        self._pieces: Iterator[bytes] | None = None  # what a chunk made, not yet read
        self._ended = False

    def __aiter__(self) -> _BoundedStream:
        self._chunks = self._stream.__aiter__()
        return self

    async def __anext__(self) -> bytes:
        while True:
            if self._pieces is not None:
                piece = next(self._pieces, None)
                if piece is not None:
                    return piece
                self._pieces = None
            if self._ended:
                raise StopAsyncIteration
            timer = self._timer
            try:
                if timer is None:
                    raw = await self._chunks.__anext__()
                else:
                    raw = await timer.next(self._chunks)
            except StopAsyncIteration:
                self._ended = True
                self._close_timer()
                self._pieces = self._reader.end()
                continue
            except Exception as exc:
                if timer is not None or self._idle is None or not _read_timeout(exc):
                    raise
                raw = None  # the library's read timeout, which ``idle`` set: raised below
            if raw is None:
                raise idle_timeout(self._provider, self._idle or 0.0)  # nothing chained
            reader = self._reader
            if reader._inflate is None and 0 < len(raw) <= STEP:  # ``one_piece``, per chunk
                return reader._count(raw)
            self._pieces = reader.feed(raw)

    def _close_timer(self) -> None:
        if self._timer is not None:
            self._timer.close()

    async def aclose(self) -> None:
        self._close_timer()
        await self._stream.aclose()
