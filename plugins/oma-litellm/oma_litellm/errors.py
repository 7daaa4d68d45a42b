"""LiteLLM's exceptions as oma's ``ProviderError``, scrubbed of keys, prompts and media.

LiteLLM maps every provider's failures onto OpenAI-style classes with a ``status_code``; the
status is kept, so the core decides retries by it (408, 409, 429, 5xx). Its connection error
(which LiteLLM reports as status 500) and its time-out are retryable without a status, like
every other plugin's. A reply LiteLLM could not read is retryable too. The message names the
exception and LiteLLM's message, cut short, without the key or anything long and base64-like;
the error is never chained to LiteLLM's, which holds the request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from oma_core import ProviderError
from oma_core.http import invalid_utf8, malformed_response, parse_retry_after, scrub, timeout_error

from .capabilities import DISPLAY_NAME

__all__ = ["malformed", "map_error", "scrub_all", "token_error"]

#: Error types and codes (OpenAI's and compatible servers') of a stream's error event that
#: mean "try again" (as oma-openai reads them)
_TRANSIENT = frozenset(
    {
        *("server_error", "internal_error", "internal_server_error", "overloaded_error"),
        *("overloaded", "rate_limit_error", "rate_limit_exceeded", "service_unavailable"),
        "timeout",
    }
)
#: LiteLLM's prefix to a provider's message (``litellm.APIConnectionError:
#: APIConnectionError: OpenAIException - ``)
_LITELLM_PREFIX = re.compile(r"^.*?\w*Exception - ")
#: Microsoft Entra ID's error codes (``AADSTS700016``): no secret, and what to look up
_AADSTS = re.compile(r"\bAADSTS\d{2,8}\b")


def scrub_all(text: str, secrets: Iterable[str | None]) -> str:
    """The toolkit's ``scrub`` over the secrets that are set."""
    return scrub(text, [s for s in secrets if s])


def map_error(
    exc: BaseException, secrets: Sequence[str | None], *, mid_stream: bool = False
) -> ProviderError:
    """``exc`` (raised by LiteLLM, its SDKs or its HTTP client) as a ``ProviderError``;
    ``mid_stream``: raised after a stream's first chunk, when the service had answered 200."""
    if isinstance(exc, ProviderError):
        return exc
    from litellm.exceptions import APIConnectionError, Timeout

    name = type(exc).__name__
    chain = list(_chain(exc))
    for link in chain:  # the toolkit's bounds (a redirect, a reply too large), raised inside
        if isinstance(link, ProviderError):
            return link
        if isinstance(link, UnicodeDecodeError):  # the same error as on every other transport
            return invalid_utf8(DISPLAY_NAME)
    timed_out = next((e for e in chain if _is_transport_timeout(e)), None)
    if timed_out is not None:  # which timeout fired, as on every other plugin
        return timeout_error(timed_out, provider=DISPLAY_NAME)
    if isinstance(exc, Timeout) and not isinstance(getattr(exc, "status_code", None), int):
        return ProviderError(f"{DISPLAY_NAME} timed out ({name}: its timeout, "
                             'provider_options["timeout"])', provider=DISPLAY_NAME,
                             retryable=True)  # fmt: skip
    # LiteLLM reports a dropped connection as its InternalServerError (status 500); what it
    # wraps tells the two apart
    if any(_is_transport_error(e) for e in chain):
        return ProviderError(
            f"{DISPLAY_NAME} connection failed ({name})", provider=DISPLAY_NAME, retryable=True
        )
    if mid_stream:
        return _stream_error(chain, secrets)
    if isinstance(exc, APIConnectionError):
        return ProviderError(
            f"{DISPLAY_NAME} connection failed ({name})", provider=DISPLAY_NAME, retryable=True
        )
    status = _wire_status(chain)
    if status is not None:
        message = getattr(exc, "message", None)
        text = f"{DISPLAY_NAME} returned HTTP {status} ({name})"
        if isinstance(message, str) and message:
            text += f": {scrub_all(message, secrets)}"
        return ProviderError(
            text,
            status_code=status,
            provider=DISPLAY_NAME,
            retry_after=parse_retry_after(_headers(exc)),
        )
    if isinstance(exc, ValueError):
        return malformed(f"{name} while reading the reply")
    return ProviderError(f"{DISPLAY_NAME} failed ({name})", provider=DISPLAY_NAME, retryable=False)


def _stream_error(chain: list[BaseException], secrets: Sequence[str | None]) -> ProviderError:
    """An error inside a stream the service had answered 200: no status (the one LiteLLM
    gives it, 500, is its own), retryable unless the service's error event says otherwise.
    An event the OpenAI SDK read (the SDK routes) keeps its ``type``, which decides; LiteLLM's
    own handlers keep only the event's message (its Anthropic route makes every error event
    a 500), and a stream that stopped before its end says so: both are retryable."""
    event = next((e for e in chain if _is_sdk_error_event(e)), None)
    if event is not None:
        body: Mapping[str, Any] = getattr(event, "body", None) or {}
        kind = str(body.get("type") or body.get("code") or "")
        retryable = bool({str(body.get("type")), str(body.get("code"))} & _TRANSIENT)
        message = str(body.get("message") or "")
    else:
        kind, retryable = "", True
        # the provider's own error (its message only), else LiteLLM's, without its prefix
        own = next(
            (e for e in chain if type(e).__module__ != "litellm.exceptions" and str(e)), None
        )
        wrapped = own or (chain[1] if len(chain) > 1 else chain[0])
        message = _LITELLM_PREFIX.sub("", str(getattr(wrapped, "message", None) or wrapped))
    text = f"{DISPLAY_NAME} stream failed"
    if kind:
        text += f" ({scrub_all(kind, secrets)})"
    if message:
        text += f": {scrub_all(message, secrets)}"
    return ProviderError(text, provider=DISPLAY_NAME, retryable=retryable)


def _is_sdk_error_event(exc: BaseException) -> bool:
    """An error event the OpenAI SDK read inside a stream (its bare ``APIError``, with the
    event's ``error`` object as ``body``)."""
    import openai

    return type(exc) is openai.APIError and isinstance(exc.body, Mapping)


def token_error(exc: BaseException | None, secrets: Iterable[str | None]) -> ProviderError:
    """A Microsoft Entra ID token that could not be had (``exc``, or None when the
    credential gave no token), before anything was sent to Azure: retryable when the token
    service could not be reached or answered 408, 429 or 5xx, not when it refused the
    credential or none is usable (azure-identity missing, a bad value)."""
    text = f"{DISPLAY_NAME} could not get a Microsoft Entra ID token for Azure OpenAI"
    if exc is None:
        return ProviderError(f"{text}: the credential gave none", provider=DISPLAY_NAME,
                             retryable=False)  # fmt: skip
    chain = list(_chain(exc))
    if any(isinstance(e, ImportError) for e in chain):
        return ProviderError(
            f"{text}: Entra ID credentials need the azure-identity package "
            "(pip install azure-identity)",
            provider=DISPLAY_NAME,
            retryable=False,
        )
    status = next((s for e in chain if (s := _status(e)) is not None), None)
    transport = any(
        _is_transport_error(e)
        or _is_transport_timeout(e)
        or _named(e, ("ServiceRequestError", "ServiceResponseError"), ("azure.core",))
        for e in chain
    )
    retryable = transport or status in (408, 429) or (status is not None and status >= 500)
    message = scrub_all(str(exc), secrets)  # cut short by the toolkit's scrub
    detail = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    # Entra ID's error code says what to fix; the scrub may have taken it as a token value
    codes = dict.fromkeys(_AADSTS.findall(str(exc)))
    code = f"Entra ID error {', '.join(codes)}: " if codes else ""
    return ProviderError(
        f"{text} ({code}{detail})", status_code=status, provider=DISPLAY_NAME, retryable=retryable
    )


def malformed(detail: str) -> ProviderError:
    """A reply without the expected shape: retryable, since a second try may be whole."""
    return malformed_response(DISPLAY_NAME, detail)


def _headers(exc: BaseException) -> Mapping[str, str]:
    headers: dict[str, str] = {}
    response = getattr(exc, "response", None)
    found: Any = getattr(response, "headers", None)
    if found is not None:
        headers.update({str(k): str(v) for k, v in found.items()})
    extra: Any = getattr(exc, "litellm_response_headers", None)
    if extra is not None:
        headers.update({str(k): str(v) for k, v in extra.items()})
    return headers


def _status(exc: BaseException) -> int | None:
    """The HTTP status ``exc`` carries, itself or on its ``response`` (httpx's errors)."""
    for status in (
        getattr(exc, "status_code", None),
        getattr(getattr(exc, "response", None), "status_code", None),
    ):
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def _wire_status(chain: list[BaseException]) -> int | None:
    """The status the service answered with: LiteLLM's class keeps only the statuses it
    knows (a 529 becomes its InternalServerError, 500), the provider error it wraps keeps
    the one on the wire."""
    outer: int | None = None
    for exc in chain:
        status = getattr(exc, "status_code", None)
        if not isinstance(status, int) or isinstance(status, bool):
            continue
        if type(exc).__module__ != "litellm.exceptions":
            return status
        if outer is None:
            outer = status
    return outer


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: causes, contexts and LiteLLM's ``original_exception``."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 20:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        original = getattr(current, "original_exception", None)
        for nxt in (current.__cause__, current.__context__, original):
            if isinstance(nxt, BaseException):
                todo.append(nxt)


def _is_transport_error(exc: BaseException) -> bool:
    if type(exc).__name__ == "APIConnectionError" and type(exc).__module__.startswith("openai"):
        return True
    return _named(exc, ("TransportError", "StreamError", "ClientError", "ServerDisconnectedError"))


def _is_transport_timeout(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError):
        return True
    if type(exc).__name__ == "APITimeoutError" and type(exc).__module__.startswith("openai"):
        return True
    return _named(exc, ("TimeoutException", "ServerTimeoutError"))


def _named(
    exc: BaseException,
    names: tuple[str, ...],
    modules: tuple[str, ...] = ("httpx", "httpcore", "aiohttp"),
) -> bool:
    # httpx / httpcore / aiohttp failures LiteLLM lets through while a body is read; told
    # apart by name so that this plugin imports none of them
    return any(
        cls.__name__ in names and cls.__module__.startswith(modules) for cls in type(exc).__mro__
    )
