"""A base for fake provider servers: real HTTP/1.1 on 127.0.0.1, scripted replies and faults.

Provider plugins are tested against servers that speak their provider's wire protocol. This
module holds the protocol-neutral part: an asyncio HTTP/1.1 server (keep-alive, JSON and
server-sent-event responses) running in its own thread, so that sync SDKs, async SDKs and tests
on any event loop can all reach it; a record of every request; live counts of open connections
and requests in flight; and faults queued per request. A subclass writes the wire protocol in
one method, ``handle``::

    from oma_core.testing.fake_server import (
        DropConnection, FakeServer, HTTPError, RecordedRequest, Response, SSEEvent,
    )

    class FakeEcho(FakeServer):
        def handle(self, request: RecordedRequest) -> Response:
            if request.path != "/v1/echo":
                return self.error_response(404, "not found")
            if request.json.get("stream"):
                return Response.sse([SSEEvent({"text": "hi"}, event="delta")])
            return Response.json({"echo": request.json})

A service that streams newline-delimited JSON (Ollama's ``/api/chat``) answers
``Response.ndjson([JSONLine({...}), ...])`` instead: one compact JSON object per line, which
every fault that works on events (``ErrorMidStream``, ``TruncatedStream``, ``SlowStream``,
``DropConnection("mid_body")``) cuts or spaces line by line.

    with FakeEcho() as server:                      # started; server.url == "http://127.0.0.1:PORT"
        server.enqueue(HTTPError(429, retry_after=1))   # the next request gets a 429
        server.enqueue(DropConnection("mid_body"))      # the one after is cut mid-body
        ...                                             # point the SDK at server.url
        assert server.requests[0].headers["x-api-key"] == "test-key"
        assert server.wait_idle(timeout=2)          # no connection left open
        assert server.max_in_flight >= 1

Faults (``HTTPError``, ``DropConnection``, ``ErrorMidStream``, ``SlowStream``,
``TruncatedStream``, ``Delay``, ``EchoRequestError``, and the hostile ones: ``Redirect``,
``RawBody`` with ``gzip_bomb`` / ``endless`` / ``keep_alive_after``) are applied one per
request, in the order queued; each may call the handler first (so the real reply is cut or
slowed) or replace it. ``error_response`` and ``error_event`` give a provider's error
shapes; subclasses override them.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from http import HTTPStatus
from types import TracebackType
from typing import Any, Literal

import attrs

__all__ = [
    "Delay",
    "DropConnection",
    "EchoRequestError",
    "ErrorInFinalEvent",
    "ErrorMidStream",
    "Fault",
    "FakeServer",
    "HTTPError",
    "JSONLine",
    "RawBody",
    "RecordedRequest",
    "Redirect",
    "Response",
    "SSEEvent",
    "SlowStream",
    "StreamItem",
    "TruncatedStream",
    "endless",
    "gzip_bomb",
    "keep_alive_after",
]

_MAX_HEADER_LINE = 64 * 1024


class _Headers(dict[str, str]):
    """Request headers with lower-case names (HTTP names are case-insensitive)."""

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())


@attrs.frozen
class RecordedRequest:
    """One request as the server received it.

    ``headers`` look names up case-insensitively; ``json`` is the parsed body, or None when the
    body is empty or not JSON. ``connection`` numbers the TCP connection it came on (1, 2, ...),
    so tests can tell keep-alive reuse from new connections.
    """

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    body: bytes = attrs.field(repr=lambda b: f"<{len(b)} bytes>")
    json: Any = attrs.field(repr=False)
    connection: int
    received_at: float


@attrs.frozen
class SSEEvent:
    """One server-sent event. ``data`` that is not a ``str`` is sent as compact JSON."""

    data: Any
    event: str | None = None

    def encode(self) -> bytes:
        data = self.data if isinstance(self.data, str) else json.dumps(self.data)
        lines = [f"event: {self.event}"] if self.event is not None else []
        lines.extend(f"data: {line}" for line in data.split("\n"))
        return ("\n".join(lines) + "\n\n").encode()


@attrs.frozen
class JSONLine:
    """One line of a newline-delimited JSON stream: ``data`` as compact JSON, then a line end
    (a ``str`` is sent as it is, for a line that is not JSON)."""

    data: Any

    def encode(self) -> bytes:
        text = (
            self.data
            if isinstance(self.data, str)
            else json.dumps(self.data, separators=(",", ":"))
        )
        return (text + "\n").encode()


#: One unit of a streamed reply: a server-sent event or a JSON line.
StreamItem = SSEEvent | JSONLine

DropStage = Literal["before_response", "after_headers", "mid_body"]


@attrs.frozen
class Response:
    """What the server sends for one request: a body, or a list of SSE events or JSON lines.

    ``delay`` waits before the status line; ``event_delay`` between SSE events. ``drop`` closes
    the connection at that stage instead of finishing; ``abort_after_events`` sends only the
    first n events, then closes the connection without ending the chunked body (the client sees
    a cut stream); ``end_after_events`` sends only the first n events and ends the body cleanly.
    Build with ``Response.json``, ``Response.sse``, ``Response.ndjson`` or ``Response.raw``;
    change with ``attrs.evolve``.
    """

    status: int = 200
    headers: Mapping[str, str] = attrs.field(factory=dict)
    body: bytes = b""
    events: tuple[StreamItem, ...] | None = None
    delay: float = 0.0
    event_delay: float = 0.0
    drop: DropStage | None = None
    abort_after_events: int | None = None
    end_after_events: int | None = None
    #: A raw body sent chunked as it is produced (the events and ``body`` are ignored): for
    #: hostile replies that must not be built in memory (a compression bomb, an endless line).
    chunks: Iterable[bytes] | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def json(
        cls, obj: Any, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Response:
        return cls(
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
            body=json.dumps(obj).encode(),
        )

    @classmethod
    def sse(
        cls,
        events: Iterable[SSEEvent],
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        event_delay: float = 0.0,
    ) -> Response:
        return cls(
            status=status,
            headers={
                "content-type": "text/event-stream",
                "cache-control": "no-cache",
                **(headers or {}),
            },
            events=tuple(events),
            event_delay=event_delay,
        )

    @classmethod
    def ndjson(
        cls,
        lines: Iterable[JSONLine],
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        event_delay: float = 0.0,
    ) -> Response:
        """A newline-delimited JSON stream (``application/x-ndjson``, as Ollama labels it),
        sent chunked, one line per chunk (``event_delay`` between lines)."""
        return cls(
            status=status,
            headers={"content-type": "application/x-ndjson", **(headers or {})},
            events=tuple(lines),
            event_delay=event_delay,
        )

    @classmethod
    def raw(cls, body: bytes, status: int = 200, content_type: str = "text/plain") -> Response:
        return cls(status=status, headers={"content-type": content_type}, body=body)


# --------------------------------------------------------------------------- faults

_MakeResponse = Callable[[], Awaitable[Response]]


class Fault:
    """A scripted fault for one request: turns the handler's reply into something worse.

    ``apply`` receives the server, the request and a coroutine function producing the
    handler's response (call it to start from the real reply, or don't to replace it).
    """

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        raise NotImplementedError


@attrs.frozen
class HTTPError(Fault):
    """Answer with ``status`` and the provider's JSON error body, without calling the handler.

    ``retry_after`` becomes a ``retry-after`` header (seconds, or a string such as an HTTP
    date); ``retry_after_ms`` a ``retry-after-ms`` header. ``error_type`` overrides the
    provider's error type for the status.
    """

    status: int
    message: str = "scripted error"
    retry_after: float | str | None = None
    retry_after_ms: float | None = None
    error_type: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        headers = dict(self.headers)
        if self.retry_after is not None:
            ra = self.retry_after
            headers["retry-after"] = ra if isinstance(ra, str) else f"{ra:g}"
        if self.retry_after_ms is not None:
            headers["retry-after-ms"] = f"{self.retry_after_ms:g}"
        response = server.error_response(self.status, self.message, self.error_type)
        return attrs.evolve(response, headers={**response.headers, **headers})


@attrs.frozen
class EchoRequestError(Fault):
    """Answer with ``status`` and the provider's error body whose message echoes the request
    (its headers, then its body), as some services do: for proving that error messages hold
    no API key and no base64 payload."""

    status: int = 400

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        headers = "; ".join(f"{k}: {v}" for k, v in request.headers.items())
        body = request.body.decode("utf-8", "replace")
        return server.error_response(self.status, f"could not process {headers} {body}")


@attrs.frozen
class DropConnection(Fault):
    """Close the connection: before any response, after the headers, or halfway through the
    body (half the bytes of a JSON body, half the events of a stream)."""

    stage: DropStage = "before_response"

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        if self.stage == "before_response":
            return Response(drop="before_response")
        return attrs.evolve(await make(), drop=self.stage)


@attrs.frozen
class ErrorMidStream(Fault):
    """Send the first ``after_events`` events of the real stream (a negative number: all but
    the last that many), then the provider's error event (``server.error_event``), then end
    the stream."""

    after_events: int = 2
    error_type: str = "overloaded_error"
    message: str = "scripted error mid-stream"

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        response = await make()
        if response.events is None:
            return response
        events = (
            *response.events[: self.after_events],
            server.error_event(self.error_type, self.message),
        )
        return attrs.evolve(response, events=events)


@attrs.frozen
class ErrorInFinalEvent(Fault):
    """Send the real stream with its final event replaced by the final event that says the
    generation failed (``server.error_final_event``), as Cohere's ``message-end`` with
    ``finish_reason: "ERROR"``."""

    message: str = "scripted failure in the final event"

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        response = await make()
        if not response.events:
            return response
        events = (*response.events[:-1], server.error_final_event(self.message))
        return attrs.evolve(response, events=events)


@attrs.frozen
class SlowStream(Fault):
    """Wait ``event_delay`` seconds between events (and ``delay`` before the headers)."""

    event_delay: float = 0.05
    delay: float = 0.0

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        response = await make()
        return attrs.evolve(response, event_delay=self.event_delay, delay=self.delay)


@attrs.frozen
class TruncatedStream(Fault):
    """Stop the stream before its final event: after ``after_events`` events (default: all but
    the last; a negative number: all but the last that many). ``abort=True`` cuts the
    connection mid-body; ``False`` ends the body cleanly, so only the provider's own
    end-of-stream events are missing."""

    after_events: int | None = None
    abort: bool = False

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        response = await make()
        if response.events is None:
            return response
        n = len(response.events) - 1 if self.after_events is None else self.after_events
        if n < 0:
            n = max(0, len(response.events) + n)
        if self.abort:
            return attrs.evolve(response, abort_after_events=n)
        return attrs.evolve(response, end_after_events=n)


@attrs.frozen
class Delay(Fault):
    """Wait ``seconds`` before answering this request (the reply itself is unchanged)."""

    seconds: float

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        return attrs.evolve(await make(), delay=self.seconds)


@attrs.frozen
class Redirect(Fault):
    """Answer with a redirect (``status``, 307 by default) to ``location``, without calling
    the handler: a client must not follow it (it would resend the body and the headers)."""

    location: str
    status: int = 307

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        return Response(
            status=self.status,
            headers={"location": self.location, "content-type": "text/plain"},
            body=b"moved",
        )


@attrs.frozen
class RawBody(Fault):
    """Answer with ``chunks`` (an iterable of bytes, or a function of the handler's response
    returning one) as a chunked body with ``headers``, produced as it is sent; for hostile
    replies (``gzip_bomb``, ``endless``, ``keep_alive_after``)."""

    chunks: Iterable[bytes] | Callable[[Response], Iterable[bytes]] = attrs.field(eq=False)
    headers: Mapping[str, str] = attrs.field(factory=lambda: {"content-type": "application/json"})
    status: int = 200
    chunk_delay: float = 0.0

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: _MakeResponse
    ) -> Response:
        chunks = self.chunks(await make()) if callable(self.chunks) else self.chunks
        return Response(
            status=self.status,
            headers=dict(self.headers),
            chunks=chunks,
            event_delay=self.chunk_delay,
        )


def gzip_bomb(decoded_bytes: int, *, prefix: bytes = b"", fill: bytes = b"0") -> Iterator[bytes]:
    """A gzip stream inflating to ``prefix`` then ``fill`` repeated up to ``decoded_bytes``,
    produced lazily: each 1 MiB of ``fill`` compresses to about 1 KiB, once, and is repeated
    (a full flush makes each block independent), so 2 GB costs ~2 MB on the wire and nothing
    to build. Serve it with ``content-encoding: gzip``."""
    import zlib

    block = (fill * ((1 << 20) // max(1, len(fill)) + 1))[: 1 << 20]
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = packer.compress(prefix) + packer.flush(zlib.Z_FULL_FLUSH)
    packed = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    yield head
    crc = zlib.crc32(prefix)
    sent = len(prefix)
    batch: list[bytes] = []
    while sent + len(block) <= decoded_bytes:
        batch.append(packed)
        crc = zlib.crc32(block, crc)
        sent += len(block)
        if len(batch) == 64:
            yield b"".join(batch)
            batch = []
    if batch:
        yield b"".join(batch)
    # the gzip trailer: the end of the deflate stream, then CRC-32 and size (mod 2**32)
    yield b"\x03\x00" + crc.to_bytes(4, "little") + (sent & 0xFFFFFFFF).to_bytes(4, "little")


def endless(prefix: bytes, fill: bytes = b"a", size: int = 1 << 16) -> Iterator[bytes]:
    """``prefix``, then ``fill`` forever in ``size``-byte chunks (one endless line or event)."""
    yield prefix
    chunk = (fill * (size // max(1, len(fill)) + 1))[:size]
    while True:
        yield chunk


def keep_alive_after(
    body: Iterable[bytes] = (), *, comment: bytes = b":\n\n"
) -> Callable[[Response], Iterable[bytes]]:
    """For ``RawBody``: the handler's whole streamed reply (or ``body``), then ``comment`` (an
    SSE comment, a keep-alive; for a newline-delimited JSON stream, ``comment=b"\\n"``, a
    blank line) forever, paced by ``RawBody.chunk_delay``: a server that never closes a
    complete reply."""

    def make(response: Response) -> Iterator[bytes]:
        if response.events is not None:
            yield b"".join(event.encode() for event in response.events)
        else:
            yield from body
        while True:
            yield comment

    return make


# --------------------------------------------------------------------------- the server


class FakeServer:
    """A real HTTP/1.1 server on 127.0.0.1 (ephemeral port) in a background thread.

    Subclasses implement ``handle`` (sync or async) and, for their provider's error shapes,
    ``error_response`` and ``error_event``. ``response_delay`` delays every response (for
    concurrency tests). Counters are updated on the server's thread and safe to read anywhere.
    """

    def __init__(self, *, response_delay: float = 0.0) -> None:
        self.response_delay = response_delay
        self.requests: list[RecordedRequest] = []
        #: Exceptions ``handle`` raised (each answered with a 500): a bug in the fake server.
        self.handler_errors: list[BaseException] = []
        self.open_connections = 0
        self.max_open_connections = 0
        self.total_connections = 0
        self.in_flight = 0
        self.max_in_flight = 0
        #: Body bytes sent (on the wire, before any client decoding) of the last ``chunks`` reply.
        self.bytes_sent = 0
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._conn_tasks: set[asyncio.Task[None]] = set()
        self._port: int | None = None
        self._startup_error: BaseException | None = None

    # -- the protocol a subclass writes

    def handle(self, request: RecordedRequest) -> Response | Awaitable[Response]:
        """Answer one request; the wire protocol lives here."""
        raise NotImplementedError

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        """The provider's JSON error body for ``status`` (override for the provider's shape)."""
        error = {"message": message, "type": error_type or "error", "code": status}
        return Response.json({"error": error}, status=status)

    def error_event(self, error_type: str, message: str) -> StreamItem:
        """The provider's error event inside a stream (override for the provider's shape); a
        newline-delimited JSON service returns a ``JSONLine``, e.g. ``JSONLine({"error":
        message})`` for a service whose stream errors carry a text and no type."""
        return SSEEvent({"error": {"type": error_type, "message": message}}, event="error")

    def error_final_event(self, message: str) -> StreamItem:
        """The service's final event saying the generation failed, with ``message`` (for a
        service whose final event can carry an error; see ``ErrorInFinalEvent``)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no error_final_event: write the service's final "
            "event that reports a failure, or leave final_event_errors False on the kit"
        )

    # -- life cycle

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the fake server is not running; use start() or `with`")
        return self._port

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, no trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeServer:
        if self._thread is not None:
            return self
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name=f"{type(self).__name__}", daemon=True
        )
        self._thread.start()
        ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            raise RuntimeError("fake server failed to start") from self._startup_error
        return self

    def close(self) -> None:
        """Stop serving, cut every open connection and join the thread."""
        thread, loop, stop = self._thread, self._loop, self._stop
        if thread is None:
            return
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=10)
        self._thread = None
        self._loop = None
        self._port = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- scripting and inspection

    def enqueue(self, *faults: Fault) -> None:
        """Queue faults, one per coming request, in order."""
        with self._lock:
            self._faults.extend(faults)

    @property
    def pending_faults(self) -> int:
        return len(self._faults)

    def reset(self) -> None:
        """Forget recorded requests, queued faults and maxima (not the open connections)."""
        with self._lock:
            self.requests.clear()
            self.handler_errors.clear()
            self._faults.clear()
            self.max_open_connections = self.open_connections
            self.max_in_flight = self.in_flight

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        """Block until ``predicate()`` holds (polled); False if ``timeout`` ran out first."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True

    async def async_wait_until(
        self,
        predicate: Callable[[], bool],
        timeout: float = 5.0,  # noqa: ASYNC109 - False on time-out, never raises
    ) -> bool:
        """``wait_until`` for async tests: sleeps on the caller's loop instead of blocking it."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.005)
        return True

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Block until no connection is open; closes happen asynchronously, so poll."""
        return self.wait_until(lambda: self.open_connections == 0, timeout)

    async def async_wait_idle(self, timeout: float = 5.0) -> bool:  # noqa: ASYNC109
        return await self.async_wait_until(lambda: self.open_connections == 0, timeout)

    # -- the server thread

    def _run(self, ready: threading.Event) -> None:
        try:
            asyncio.run(self._serve(ready))
        except BaseException as exc:  # pragma: no cover - reported by start()
            self._startup_error = exc
            ready.set()

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            server = await asyncio.start_server(
                self._on_connection, "127.0.0.1", 0, limit=_MAX_HEADER_LINE, backlog=1024
            )
        except BaseException as exc:
            self._startup_error = exc
            ready.set()
            return
        self._port = server.sockets[0].getsockname()[1]
        ready.set()
        try:
            await self._stop.wait()
        finally:
            server.close()
            for task in list(self._conn_tasks):
                task.cancel()
            if self._conn_tasks:
                await asyncio.gather(*self._conn_tasks, return_exceptions=True)
            await server.wait_closed()

    def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self._connection(reader, writer))
        self._conn_tasks.add(task)
        task.add_done_callback(self._conn_tasks.discard)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.total_connections += 1
        number = self.total_connections
        self.open_connections += 1
        self.max_open_connections = max(self.max_open_connections, self.open_connections)
        try:
            keep_alive = True
            while keep_alive:
                request = await self._read_request(reader, number)
                if request is None:
                    break
                keep_alive = _wants_keep_alive(request)
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
                try:
                    with self._lock:
                        self.requests.append(request)
                        fault = self._faults.popleft() if self._faults else None
                    response = await self._respond(request, fault)
                    keep_alive = await self._write(reader, writer, response, keep_alive)
                finally:
                    self.in_flight -= 1
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except ValueError:  # a malformed request line or header: nothing sane to answer
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self.open_connections -= 1

    async def _respond(self, request: RecordedRequest, fault: Fault | None) -> Response:
        async def make() -> Response:
            try:
                result = self.handle(request)
                if inspect.isawaitable(result):
                    result = await result
                return result
            except Exception as exc:
                self.handler_errors.append(exc)
                return self.error_response(500, f"fake server bug: {type(exc).__name__}")

        return await fault.apply(self, request, make) if fault is not None else await make()

    async def _read_request(
        self, reader: asyncio.StreamReader, connection: int
    ) -> RecordedRequest | None:
        line = await reader.readline()
        if not line:
            return None
        method, target, _version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        headers = _Headers()
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n"):
                break
            if not raw:
                raise asyncio.IncompleteReadError(raw, None)
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _read_chunked(reader)
        else:
            body = await reader.readexactly(int(headers.get("content-length", "0")))
        path, _, query = target.partition("?")
        parsed: Any = None
        if body:
            with contextlib.suppress(ValueError):
                parsed = json.loads(body)
        return RecordedRequest(
            method=method,
            path=path,
            query=query,
            headers=headers,
            body=body,
            json=parsed,
            connection=connection,
            received_at=time.monotonic(),
        )

    async def _write(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        response: Response,
        keep_alive: bool,
    ) -> bool:
        """Send ``response``; return whether the connection may serve another request."""
        delay = response.delay + self.response_delay
        if delay > 0:
            await _pause(reader, delay)
        if response.drop == "before_response":
            return False
        if response.chunks is not None:
            await self._write_chunks(reader, writer, response)
            return False
        streaming = response.events is not None
        keep_alive = keep_alive and response.drop is None and response.abort_after_events is None
        head = [f"HTTP/1.1 {response.status} {_reason(response.status)}"]
        for name, value in response.headers.items():
            head.append(f"{name}: {value}")
        if streaming:
            head.append("transfer-encoding: chunked")
        else:
            head.append(f"content-length: {len(response.body)}")
        head.append(f"connection: {'keep-alive' if keep_alive else 'close'}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        if response.drop == "after_headers":
            return False
        if not streaming:
            if response.drop == "mid_body":
                writer.write(response.body[: len(response.body) // 2])
                await writer.drain()
                return False
            writer.write(response.body)
            await writer.drain()
            return keep_alive
        events = response.events or ()
        limit = len(events)
        if response.drop == "mid_body":
            limit = len(events) // 2
        for bound in (response.abort_after_events, response.end_after_events):
            if bound is not None:
                limit = min(limit, bound)
        ends = response.drop is None and response.abort_after_events is None
        for i, event in enumerate(events[:limit]):
            if i and response.event_delay > 0:
                await _pause(reader, response.event_delay)
            data = event.encode()
            # The last event goes in one write with the end of the body, as a server that has
            # the whole reply sends it: an SDK that reads on briefly after ``[DONE]`` to keep
            # the connection (openai's waits 0.1 s) must not find the end late on a busy machine.
            end = b"0\r\n\r\n" if ends and i == limit - 1 else b""
            writer.write(b"%x\r\n%s\r\n%s" % (len(data), data, end))
            await writer.drain()
        if not ends:
            return False
        if not limit:
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        return keep_alive

    async def _write_chunks(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, response: Response
    ) -> None:
        """Send ``response.chunks`` as a chunked body, each chunk as produced (``event_delay``
        between them), and close the connection after: the client stopping early is normal."""
        head = [f"HTTP/1.1 {response.status} {_reason(response.status)}"]
        head.extend(f"{name}: {value}" for name, value in response.headers.items())
        head += ["transfer-encoding: chunked", "connection: close"]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        self.bytes_sent = 0
        for i, chunk in enumerate(response.chunks or ()):
            if i and response.event_delay > 0:
                await _pause(reader, response.event_delay)
            if chunk:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()
                self.bytes_sent += len(chunk)
        writer.write(b"0\r\n\r\n")
        await writer.drain()


def _wants_keep_alive(request: RecordedRequest) -> bool:
    return str(request.headers.get("connection", "")).lower() != "close"


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return {529: "Overloaded"}.get(status, "Unknown")


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int((await reader.readline()).split(b";")[0].strip(), 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readline()


async def _pause(reader: asyncio.StreamReader, seconds: float) -> None:
    """Sleep, but raise ``ConnectionResetError`` at once if the client hangs up meanwhile.

    A client that closes a stream mid-way must leave no open connection on this side, even
    during a long delay; so the pause also watches the socket for end-of-file.
    """
    read = asyncio.ensure_future(reader.read(1 << 20))
    try:
        done, _ = await asyncio.wait({read}, timeout=seconds)
    finally:
        if not read.done():
            read.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await read
    if read in done and not read.cancelled():
        data = read.result()
        if not data:
            raise ConnectionResetError("client closed the connection")
        reader.feed_data(data)  # pipelined bytes of the next request: keep them, in order
