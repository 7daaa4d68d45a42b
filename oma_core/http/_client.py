"""HTTP for provider plugins: a client with real timeouts, and failures as ``ProviderError``.

A provider plugin that speaks a REST wire over httpx needs the same few things every time: a
client whose read timeout suits a model call (httpx's default of 5 s does not), and a way to
turn an error response, a transport fault or an unreadable reply into a ``ProviderError`` the
core's retry ladder understands, without the key, the prompt or a base64 payload in its
message and without a reference to the request (the error is built from strings, never
chained). httpx is imported on first use, so ``import oma_core.toolkit`` stays cheap.

For throughput, the same over aiohttp (imported on first use too; a plugin using these
declares it): ``AioHttpClient`` (one ``aiohttp.ClientSession`` per event loop) and
``aio_post_json``; ``error_from_exception`` maps aiohttp's faults as it maps httpx's. A plugin
may pass ``status_error`` to build its own error for an error status (its messages the same on
every transport).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from ..capabilities import CLIENT_OPTION_TYPES
from ..errors import ProviderError
from ..redaction import REDACTED, redact_text
from ..retry import parse_retry_after
from ._bounded import (
    ACCEPT_ENCODING,
    DEFAULT_FIRST_BYTE_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    BodyReader,
    IdleTimer,
    ReadLimits,
    guard_hooks,
    redirect_refused,
)

if TYPE_CHECKING:
    import aiohttp
    import httpx

    from ..providers import ProviderRequest

_T = TypeVar("_T")

#: Builds the error for an error status from (status, headers, body): a plugin's own shape.
StatusError = Callable[[int, Mapping[str, str], bytes], ProviderError]

__all__ = [
    "CLIENT_OPTIONS",
    "AioHttpClient",
    "HttpTimeouts",
    "LoopLocalClient",
    "StatusError",
    "aio_post_json",
    "error_from_event",
    "error_from_exception",
    "error_from_response",
    "http_client",
    "malformed_response",
    "innermost_cause",
    "is_transport_error",
    "post_json",
    "request_secrets",
    "retry_delay",
    "scrub",
]

#: The provider options ``LoopLocalClient.from_options`` reads (the rest usually go in the body).
CLIENT_OPTIONS = tuple(CLIENT_OPTION_TYPES)
#: Request texts shorter than this are not blanked out of messages (they would hit words).
MIN_SECRET = 8
#: How much of a service's error text a message keeps (characters).
MESSAGE_LIMIT = 300
#: How much of an error body is read from a streamed response (bytes).
ERROR_BODY_LIMIT = 64 * 1024


def _positive(_inst: object, attribute: Any, value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"HttpTimeouts.{attribute.name} must be > 0 or None, not {value!r}")


@attrs.frozen
class HttpTimeouts:
    """httpx's four timeouts and oma's ``idle``, in seconds (None: no limit), with values that
    suit model calls and that no default run hangs on for long.

    ``connect`` is short, so an unreachable host fails fast; ``read`` (httpx's longest wait
    between two received bytes, so also the wait for the reply to start: a non-streamed reply
    comes whole) is 120 s; ``idle``, the longest silence once the reply has started (between
    two stream events), is 60 s. ``provider_options["timeout"]`` sets both.
    """

    connect: float | None = attrs.field(default=5.0, validator=_positive)
    read: float | None = attrs.field(default=DEFAULT_FIRST_BYTE_TIMEOUT, validator=_positive)
    write: float | None = attrs.field(default=60.0, validator=_positive)
    pool: float | None = attrs.field(default=60.0, validator=_positive)
    idle: float | None = attrs.field(default=DEFAULT_IDLE_TIMEOUT, validator=_positive)


def http_client(
    *,
    base_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeouts: HttpTimeouts | None = None,
    max_connections: int = 100,
    max_keepalive_connections: int = 20,
    provider: str = "the service",
    limits: ReadLimits | None = None,
) -> httpx.AsyncClient:
    """An ``httpx.AsyncClient`` with real timeouts and connection limits; the provider owns it
    and closes it in its ``aclose`` (``await client.aclose()``). A redirect is refused (a
    non-retryable ``ProviderError`` naming the status and the Location's host): a model API
    that redirects a POST is misconfigured, and following would resend the body and headers.
    Reply bodies are decoded step by step and held to ``limits`` (``guard_hooks``), so a
    compression bomb or an endless event stops at the limit; ``provider`` names the service
    in those errors."""
    import httpx

    t = timeouts or HttpTimeouts()
    return httpx.AsyncClient(
        event_hooks=guard_hooks(provider, limits, t.idle),
        base_url=base_url or "",
        headers=dict(headers or {}),
        timeout=httpx.Timeout(connect=t.connect, read=t.read, write=t.write, pool=t.pool),
        limits=httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_keepalive_connections
        ),
        follow_redirects=False,
    )


class LoopLocalClient:
    """An ``http_client`` per event loop, made on first use: a connection pool belongs to the
    loop that opened it, so a provider used from a second loop (a second ``asyncio.run``)
    gets a fresh client instead of a pool bound to a closed loop. ``aclose`` closes the
    client of the running loop; one left on a finished loop is released when collected."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeouts: HttpTimeouts | None = None,
        max_connections: int = 100,
        max_keepalive_connections: int = 20,
        provider: str = "the service",
        limits: ReadLimits | None = None,
    ) -> None:
        self._options: dict[str, Any] = {
            "base_url": base_url,
            "headers": dict(headers or {}),
            "timeouts": timeouts,
            "max_connections": max_connections,
            "max_keepalive_connections": max_keepalive_connections,
            "provider": provider,
            "limits": limits,
        }
        self._clients: _PerLoop[httpx.AsyncClient] = _PerLoop()

    @classmethod
    def from_options(
        cls,
        options: Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        provider: str = "the service",
    ) -> LoopLocalClient:
        """A client configured by the provider options every HTTP plugin takes (the keys of
        ``CLIENT_OPTIONS``): ``timeout`` (the read and idle timeouts, seconds), ``headers`` (extra
        headers; ``headers`` given here, such as the key's, win), ``max_response_bytes`` and
        ``max_event_bytes`` (``ReadLimits``; a bad value is a ``PluginError``)."""
        timeout = options.get("timeout")
        return cls(
            headers={**dict(options.get("headers") or {}), **dict(headers or {})},
            timeouts=HttpTimeouts(read=float(timeout), idle=float(timeout)) if timeout else None,
            provider=provider,
            limits=ReadLimits.from_options(options, name=provider),
        )

    def get(self) -> httpx.AsyncClient:
        """The client of the running loop (call from a coroutine)."""
        return self._clients.get(lambda: http_client(**self._options))

    async def aclose(self) -> None:
        """A coroutine: close the running loop's client (one on a finished loop is dropped)."""
        client = self._clients.take()
        if client is not None:
            await client.aclose()


class _PerLoop(Generic[_T]):
    """One value (a client, a session) for the running event loop, made on first use: a
    connection pool belongs to the loop that opened it. A value left on a finished loop is
    released when collected, since it can be closed only on its own loop."""

    def __init__(self) -> None:
        self._value: _T | None = None
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def get(self, make: Callable[[], _T]) -> _T:
        """The running loop's value, made by ``make`` if it has none yet."""
        loop = asyncio.get_running_loop()
        if self._value is None or self._loop is None or self._loop() is not loop:
            self._value = make()
            self._loop = weakref.ref(loop)
        return self._value

    def take(self) -> _T | None:
        """Forget the value, and return it if it belongs to the running loop (to be closed)."""
        value, loop_ref = self._value, self._loop
        self._value = self._loop = None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            return None
        return value if loop_ref is not None and loop_ref() is running else None


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without the given secrets (each replaced by ``[REDACTED]``), without anything
    the core's redaction recognises (credentials by shape, URL queries, base64-like runs), and
    cut to ``MESSAGE_LIMIT`` characters."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = redact_text(text)
    if len(text) > MESSAGE_LIMIT:
        text = text[:MESSAGE_LIMIT] + "..."
    return text


def request_secrets(request: ProviderRequest | None, api_key: str | None) -> tuple[str, ...]:
    """What an error message must never quote, as ``scrub``'s secrets: the key and the
    request's own text and base64 media (at least ``MIN_SECRET`` characters), each also as it
    appears inside a JSON echo of the body (services sometimes quote what they got)."""
    found: set[str] = {api_key} if api_key else set()
    if request is not None:
        for value in _request_strings(request):
            if len(value) >= MIN_SECRET:
                found.add(value)
                found.add(json.dumps(value, ensure_ascii=False)[1:-1])
                found.add(json.dumps(value)[1:-1])
    return tuple(found)


def _request_strings(request: ProviderRequest) -> Iterator[str]:
    from ..messages import Base64Source, ReasoningBlock, TextBlock, ToolResultBlock

    if request.system_prompt:
        yield request.system_prompt
    for message in request.messages:
        for block in message.content:
            if isinstance(block, TextBlock | ReasoningBlock):
                yield block.text
            elif isinstance(block, ToolResultBlock):
                if isinstance(block.content, str):
                    yield block.content
                    continue
                for part in block.content:
                    if isinstance(part, TextBlock):
                        yield part.text
                    elif isinstance(part.source, Base64Source):
                        yield part.source.data
            source = getattr(block, "source", None)
            if isinstance(source, Base64Source):
                yield source.data


def innermost_cause(exc: BaseException) -> BaseException:
    """The exception at the bottom of ``exc``'s ``__cause__`` chain (a few links at most): what
    an SDK's wrapped error really was (a timeout, or a dropped connection)."""
    for _ in range(8):
        if exc.__cause__ is None:
            break
        exc = exc.__cause__
    return exc


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an httpx / httpx2 / httpcore ``TransportError`` or ``StreamError``
    (what an SDK leaves unwrapped while a stream's body is read), told by class name and
    module, so that no HTTP library need be imported to ask."""
    for cls in type(exc).__mro__:
        if cls.__name__ in ("TransportError", "StreamError") and cls.__module__.startswith(
            ("httpx", "httpcore")
        ):
            return True
    return False


def malformed_response(provider: str, detail: str) -> ProviderError:
    """A reply that cannot be decoded (not JSON, empty, the wrong shape, a bad SSE event).

    Retryable: a garbled reply is a transient fault of the service or the path to it, and the
    same request usually succeeds when sent again (``docs/writing-a-provider.md``).
    ``detail`` should name what was wrong, not quote the reply.
    """
    return ProviderError(
        f"{provider} sent a malformed response: {scrub(detail)}",
        provider=provider,
        retryable=True,
    )


def error_from_response(
    response: httpx.Response, *, provider: str, secrets: Iterable[str] = ()
) -> ProviderError:
    """The ``ProviderError`` for an error response whose body has been read.

    ``status_code`` decides ``retryable`` (the core's policy: 408, 409, 429 and 5xx);
    ``retry_after`` comes from ``retry-after-ms`` / ``retry-after``, or else from a
    Google-style body's ``RetryInfo`` (``retry_delay``); the message names the
    status and the service's error type and text, scrubbed. The error keeps no reference to
    the response or its request.
    """
    try:
        body = response.content
    except Exception:  # a streamed body not read yet: the status alone
        body = b""
    return _status_error(
        response.status_code, response.headers, body, provider=provider, secrets=secrets
    )


async def error_from_streamed_response(
    response: httpx.Response,
    *,
    provider: str,
    secrets: Iterable[str] = (),
    limit: int = ERROR_BODY_LIMIT,
) -> ProviderError:
    """A coroutine: ``error_from_response`` for a response opened with ``client.stream``
    (``await`` it). Reads at most ``limit`` bytes of the body first (an error body is small; a
    hostile one is not read whole)."""
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size >= limit:
                break
    except Exception:  # a body cut short: what arrived is enough for a message
        pass
    return _status_error(
        response.status_code,
        response.headers,
        b"".join(chunks)[:limit],
        provider=provider,
        secrets=secrets,
    )


def _status_error(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    provider: str,
    secrets: Iterable[str],
) -> ProviderError:
    kind, text = error_fields(body)
    message = f"{provider} returned HTTP {status}"
    if kind:
        message += f" ({scrub(kind, secrets)})"
    if text:
        message += f": {scrub(text, secrets)}"
    retry_after = parse_retry_after(dict(headers.items()))
    if retry_after is None:
        retry_after = _body_retry_delay(body)
    return ProviderError(message, status_code=status, provider=provider, retry_after=retry_after)


_RETRY_DELAY = re.compile(r"(\d+(?:\.\d+)?)s")


def retry_delay(error: Mapping[str, Any]) -> float | None:
    """The wait a Google-style error asks for: ``google.rpc.RetryInfo``'s ``retryDelay``
    (``"17s"``) among its ``details``; None if absent."""
    for detail in error.get("details") or ():
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith("RetryInfo"):
            match = _RETRY_DELAY.fullmatch(str(detail.get("retryDelay", "")).strip())
            if match:
                return float(match.group(1))
    return None


def _body_retry_delay(body: bytes) -> float | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, Mapping) else None
    return retry_delay(error) if isinstance(error, Mapping) else None


def error_fields(body: bytes | str | Any) -> tuple[str | None, str | None]:
    """A service's error type and text from an error body in the common shapes:
    ``{"error": {"message", "type" | "status" | "code"}}``, ``{"message", "type"}``,
    ``{"detail": ...}``, ``{"error": "text"}`` (a text and no type, as Ollama's), or plain
    text."""
    if isinstance(body, bytes | str):
        raw = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            data: Any = json.loads(raw)
        except ValueError:
            return None, raw.strip() or None
    else:
        data = body
    if isinstance(data, list) and data:  # some services wrap the error in a list
        data = data[0]
    if not isinstance(data, Mapping):
        return None, None if data is None else str(data)
    error = data.get("error", data)
    if isinstance(error, str):
        return None, error
    if not isinstance(error, Mapping):
        return None, None
    kind = next(
        (error[k] for k in ("type", "status", "code") if isinstance(error.get(k), str)), None
    )
    message = error.get("message")
    text = message if isinstance(message, str) else None
    if text is None:
        detail = error.get("detail")
        if detail is not None:
            text = detail if isinstance(detail, str) else json.dumps(detail)
    return kind, text


def error_from_event(
    data: Mapping[str, Any], *, provider: str, secrets: Iterable[str] = ()
) -> ProviderError:
    """The ``ProviderError`` for an error object a service sends inside a 200 stream, e.g.
    ``{"error": {"code": 503, "message", "status"}}``, ``{"object": "error", "message",
    "type", "code"}`` or ``{"error": "text"}``. A numeric HTTP-like ``code`` becomes
    ``status_code`` (and decides ``retryable``); without one the fault is transient, so
    retryable. A Google-style
    ``RetryInfo`` gives ``retry_after``."""
    error = data.get("error", data)
    error = error if isinstance(error, Mapping) else data
    kind, text = error_fields(data)
    code = error.get("code")
    status = code if isinstance(code, int) and 400 <= code <= 599 else None
    message = f"{provider} stream failed"
    if kind:
        message += f" ({scrub(kind, secrets)})"
    if text:
        message += f": {scrub(text, secrets)}"
    return ProviderError(
        message,
        status_code=status,
        provider=provider,
        retryable=None if status else True,
        retry_after=retry_delay(error),
    )


def error_from_exception(
    exc: BaseException, *, provider: str, secrets: Iterable[str] = ()
) -> ProviderError:
    """The ``ProviderError`` for an exception raised while sending or reading a request.

    httpx timeouts and transport faults (refused, reset, cut mid-body) are retryable without a
    status (a request that cannot be sent at all, such as a URL without http(s), is not); the
    message names the host, never the URL's path or query. An ``httpx.HTTPStatusError``
    becomes ``error_from_response``; a ``ProviderError`` is returned as it is; anything else is
    a non-retryable failure named by its type. Build the error in the ``except`` block and
    raise it after, so it is not chained to ``exc``.
    """
    if isinstance(exc, ProviderError):
        return exc
    aio = sys.modules.get("aiohttp")
    if aio is not None and isinstance(exc, aio.ClientError | TimeoutError):
        return _aiohttp_error(exc, aio, provider)
    import httpx

    if isinstance(exc, httpx.HTTPStatusError):
        return error_from_response(exc.response, provider=provider, secrets=secrets)
    where = _host(exc)
    name = type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return timeout_error(exc, provider=provider, where=where)
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError):
        # the request itself is wrong (a base_url without http(s), an invalid header):
        # sending it again cannot help
        return ProviderError(
            f"{provider} request{where} could not be sent ({name})",
            provider=provider,
            retryable=False,
        )
    if isinstance(exc, httpx.TransportError):
        return ProviderError(
            f"{provider} connection{where} failed ({name})", provider=provider, retryable=True
        )
    if isinstance(exc, httpx.StreamError):
        return ProviderError(
            f"{provider} response stream failed ({name})", provider=provider, retryable=True
        )
    return ProviderError(f"{provider} request failed ({name})", provider=provider, retryable=False)


#: Which timeout an exception's class name means, and the words for it.
_TIMEOUT_KINDS = (
    ("Connect", "connect", "could not connect{where} within {s}", "the connect timeout"),
    ("Pool", "pool", "waited {s} for a free connection", "the pool timeout"),
    ("Write", "write", "could not send the request{where} within {s}", "the write timeout"),
    (
        "Read",
        "read",
        "sent no reply{where} within {s}",
        'the time-to-first-byte timeout; provider_options["timeout"] raises it',
    ),
)


def timeout_error(exc: BaseException, *, provider: str, where: str = "") -> ProviderError:
    """The retryable ``ProviderError`` for a timeout of httpx, httpx2, httpcore or aiohttp,
    saying which one fired (connect, pool, write, or the wait for the reply) and, when the
    request records it, after how long; ``idle_timeout`` is the one between stream events."""
    name = type(exc).__name__
    seconds = _timeout_seconds(exc)
    for marker, key, text, which in _TIMEOUT_KINDS:
        if name.startswith(marker) or (marker == "Read" and name == "SocketTimeoutError"):
            value = seconds.get(key)
            s = f"{value:g} s" if isinstance(value, int | float) else "its timeout"
            return ProviderError(
                f"{provider} timed out: {text.format(where=where, s=s)} ({which})",
                provider=provider,
                retryable=True,
            )
    return ProviderError(
        f"{provider} request{where} timed out ({name}: the whole request's timeout, "
        'provider_options["timeout"])',
        provider=provider,
        retryable=True,
    )


def _timeout_seconds(exc: BaseException) -> dict[str, Any]:
    try:
        found = exc.request.extensions.get("timeout")  # type: ignore[attr-defined]
    except Exception:  # no request attached (aiohttp, or a bare exception)
        return {}
    return dict(found) if isinstance(found, Mapping) else {}


def _host(exc: BaseException) -> str:
    try:
        url = exc.request.url  # type: ignore[attr-defined]
    except Exception:  # no request attached
        return ""
    host = url.host or ""
    port = f":{url.port}" if url.port else ""
    return f" to {host}{port}" if host else ""


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    body: Mapping[str, Any],
    *,
    provider: str,
    secrets: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
) -> Any:
    """A coroutine: POST ``body`` as compact UTF-8 JSON and return the decoded JSON reply.

    Every failure is a ``ProviderError``: an error status (``error_from_response``), a
    transport fault (``error_from_exception``) or a reply that is not JSON
    (``malformed_response``).
    """
    secrets = tuple(secrets)
    error: ProviderError | None = None
    try:
        response = await client.post(
            url, content=encode_json(body), headers=json_headers(headers), params=params
        )
    except Exception as exc:
        error = error_from_exception(exc, provider=provider, secrets=secrets)
    if error is not None:
        raise error
    if response.status_code >= 400:
        raise error_from_response(response, provider=provider, secrets=secrets)
    try:
        return json.loads(response.content)
    except ValueError:
        error = malformed_response(provider, f"HTTP {response.status_code} body is not JSON")
    raise error


def encode_json(body: Mapping[str, Any]) -> bytes:
    """The bytes a provider sends for a JSON body: compact, UTF-8, key order kept (what the
    conformance kit's ``encode_body`` expects by default)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def json_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """The headers of a JSON POST: ``content-type``, then ``headers`` (which may replace it)."""
    return {"content-type": "application/json", **(headers or {})}


def _aiohttp_error(exc: BaseException, aio: Any, provider: str) -> ProviderError:
    """``error_from_exception`` for aiohttp's faults (timeouts, connection faults, bad URLs)."""
    host = getattr(exc, "host", None)
    port = getattr(exc, "port", None)
    where = f" to {host}:{port}" if host and port else f" to {host}" if host else ""
    name = type(exc).__name__
    if isinstance(exc, TimeoutError):
        return timeout_error(exc, provider=provider, where=where)
    if isinstance(exc, aio.InvalidURL):
        return ProviderError(
            f"{provider} request could not be sent ({name})", provider=provider, retryable=False
        )
    return ProviderError(
        f"{provider} connection{where} failed ({name})", provider=provider, retryable=True
    )


#: The ``provider_options`` name of the connection-pool size of a plugin's own client.
POOL_OPTION = "max_connections"
DEFAULT_MAX_CONNECTIONS = 100


def pool_size(options: Mapping[str, Any], *, name: str) -> int:
    """``provider_options["max_connections"]``: how many connections a plugin's own client
    opens at most (calls past it queue); ``DEFAULT_MAX_CONNECTIONS`` when not given. A value
    that is not a whole number > 0 is a ``PluginError`` naming the plugin."""
    from ..errors import PluginError

    value = options.get(POOL_OPTION)
    if value is None:
        return DEFAULT_MAX_CONNECTIONS
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise PluginError(
            f'provider_options["{POOL_OPTION}"] must be a whole number > 0, not {value!r}',
            name=name,
        )
    return value


class AioHttpClient:
    """An ``aiohttp.ClientSession`` per event loop, made on first use (a session and its
    connection pool belong to the loop that opened them), with real timeouts and a connection
    limit. ``total`` (seconds, if given) bounds each whole request, as an SDK's ``timeout``
    does; otherwise ``timeouts`` bound the socket connect and each read. Past
    ``max_connections`` in flight a call queues for a pooled connection: that wait is bounded
    by ``total`` or by the call's own deadline (the core cancels it), never by the connect
    timeout, so a burst larger than the pool is served, not failed. Redirects are not followed.
    ``aclose`` closes the running loop's session; one left on a finished loop is dropped.

    Bodies are not decompressed by aiohttp: ``aio_post_json`` and ``aio_stream_sse`` decode
    them through a ``BodyReader`` held to ``limits``."""

    def __init__(
        self,
        *,
        headers: Mapping[str, str] | None = None,
        timeouts: HttpTimeouts | None = None,
        total: float | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        limits: ReadLimits | None = None,
    ) -> None:
        self.limits = limits or ReadLimits()
        #: The longest silence once a reply has started (None with ``total``, which bounds
        #: everything): what ``aio_post_json`` and ``aio_stream_sse`` are given as ``idle``.
        self.idle = None if total else (timeouts or HttpTimeouts()).idle
        self._headers = {**dict(headers or {}), "accept-encoding": ACCEPT_ENCODING}
        self._timeouts = timeouts or HttpTimeouts()
        self._total = total
        self._max_connections = max_connections
        self._sessions: _PerLoop[aiohttp.ClientSession] = _PerLoop()

    def get(self) -> aiohttp.ClientSession:
        """The session of the running loop (call from a coroutine)."""
        return self._sessions.get(self._new_session)

    def _new_session(self) -> aiohttp.ClientSession:
        import aiohttp

        t = self._timeouts
        # ``connect`` would also count the wait for a free pooled connection; ``sock_connect``
        # is the TCP (and TLS) connect alone
        timeout = aiohttp.ClientTimeout(
            total=self._total,
            connect=None,
            sock_connect=t.connect,
            sock_read=None if self._total else t.read,
        )
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._max_connections),
            headers=self._headers,
            timeout=timeout,
            auto_decompress=False,  # decoded by a BodyReader, step by step
        )

    async def aclose(self) -> None:
        """A coroutine: close the running loop's session (one on a finished loop is dropped)."""
        session = self._sessions.take()
        if session is not None:
            await session.close()


async def aio_post_json(
    session: aiohttp.ClientSession,
    url: str,
    body: Mapping[str, Any] | bytes,
    *,
    provider: str,
    secrets: Iterable[str] = (),
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    status_error: StatusError | None = None,
    limits: ReadLimits | None = None,
    idle: float | None = DEFAULT_IDLE_TIMEOUT,
) -> Any:
    """A coroutine: ``post_json`` over aiohttp: POST ``body`` (a mapping, or JSON bytes
    already encoded) and return the decoded JSON reply; every failure is a
    ``ProviderError``. A redirect is refused; the body is decoded through a ``BodyReader``
    held to ``limits``."""
    secrets = tuple(secrets)
    opened = aio_post(
        session, url, body, provider=provider, secrets=secrets, headers=headers, params=params,
        status_error=status_error, idle=idle,
    )  # fmt: skip
    error: ProviderError | None = None
    async with opened as response:
        status = response.status
        try:
            payload = await aio_read_body(
                response, provider=provider, limits=limits or ReadLimits(), idle=idle
            )
        except Exception as exc:
            error = error_from_exception(exc, provider=provider, secrets=secrets)
    if error is not None:
        raise error
    try:
        return json.loads(payload)
    except ValueError:
        error = malformed_response(provider, f"HTTP {status} body is not JSON")
    raise error


@contextlib.asynccontextmanager
async def aio_post(
    session: aiohttp.ClientSession,
    url: str,
    body: Mapping[str, Any] | bytes,
    *,
    provider: str,
    secrets: tuple[str, ...],
    headers: Mapping[str, str] | None,
    params: Mapping[str, str] | None,
    status_error: StatusError | None,
    idle: float | None,
) -> AsyncIterator[aiohttp.ClientResponse]:
    """An async context: POST ``body`` as JSON over aiohttp and hold a successful reply open
    (its body unread); closed on leaving. Anything else is raised as a ``ProviderError``
    once the reply is closed: a transport fault, a redirect (refused, not followed), an
    error status (its body read, bounded, and given to ``status_error`` if given). Shared by
    ``aio_post_json`` and the streamed readers (``oma_core.http._framed``)."""
    data = body if isinstance(body, bytes) else encode_json(body)
    error: ProviderError | None = None
    async with contextlib.AsyncExitStack() as stack:
        try:
            response = await stack.enter_async_context(
                session.post(
                    url,
                    data=data,
                    headers=json_headers(headers),
                    params=params,
                    allow_redirects=False,
                )
            )
        except Exception as exc:
            error = error_from_exception(exc, provider=provider, secrets=secrets)
        if error is None and 300 <= response.status < 400:
            error = redirect_refused(provider, response.status, response.headers.get("location"))
        if error is None and response.status >= 400:
            payload = await aio_read_body(
                response, provider=provider, limits=ReadLimits(), truncate=True, idle=idle
            )
            error = (
                status_error(response.status, response.headers, payload)
                if status_error is not None
                else _status_error(
                    response.status, response.headers, payload, provider=provider, secrets=secrets
                )
            )
        if error is None:
            yield response
    if error is not None:  # raised here, once the reply is closed and outside any handler
        raise error


async def aio_read_body(
    response: aiohttp.ClientResponse,
    *,
    provider: str,
    limits: ReadLimits,
    truncate: bool = False,
    idle: float | None = DEFAULT_IDLE_TIMEOUT,
) -> bytes:
    """A coroutine: an aiohttp reply's body (not decompressed by aiohttp) decoded through a
    ``BodyReader``: past ``limits`` a ``ProviderError``, or with ``truncate`` (an error body:
    what came is enough for a message) the first ``ERROR_BODY_LIMIT`` bytes and no error."""
    if truncate:
        limits = ReadLimits(max_response_bytes=ERROR_BODY_LIMIT)
    reader = BodyReader(
        provider=provider,
        limits=limits,
        content_encoding=response.headers.get("content-encoding", ""),
        content_type="" if truncate else response.headers.get("content-type", ""),
    )
    pieces: list[bytes] = []
    body = aio_body(response, reader, provider=provider, idle=idle)
    try:
        async with contextlib.aclosing(body):
            async for piece in body:
                pieces.append(piece)
    except Exception:
        if not truncate:
            raise
    return b"".join(pieces)


async def aio_body(
    response: aiohttp.ClientResponse,
    reader: BodyReader,
    *,
    provider: str,
    idle: float | None,
) -> AsyncGenerator[bytes, None]:
    """An async generator: an aiohttp reply's body, decoded and counted by ``reader``, piece by
    piece; a reply silent for ``idle`` seconds fails with ``idle_timeout`` (one ``IdleTimer``
    for the whole body). The one chunk loop of ``aio_read_body`` and the streamed readers
    (``oma_core.http._framed``)."""
    chunks = response.content.iter_any().__aiter__()
    timer = IdleTimer(idle, provider)
    try:
        while True:
            try:
                raw = await timer.next(chunks)
            except StopAsyncIteration:
                break
            for piece in reader.feed(raw):
                yield piece
    finally:
        timer.close()
    for piece in reader.end():
        yield piece
