"""The openai SDK's exceptions -> oma's ``ProviderError``, holding nothing secret.

An HTTP status keeps its code (so 408, 409, 429 and 5xx are retryable) and the server's
``retry-after-ms`` / ``retry-after``; connection faults and timeouts are retryable without a
status; an error the service reports inside a stream is retryable when its type says it is
transient; a reply that cannot be read is retryable too (a garbled reply is a transient fault).
A failure before anything was sent (the SDK refusing its input) is not retryable, and is not
called a malformed response.

Every error is built from strings only and raised after the ``except`` block that caught the
SDK's exception, so it holds no reference to that exception, its request or its response
(``raise ... from None`` would still keep one in ``__context__``). Messages go through the
toolkit's ``scrub`` (cut short; credentials by shape and base64-like runs blanked out) with
the API key and the request's own text as the secrets, since services sometimes echo what
they got; a reply that cannot be decoded is the toolkit's ``malformed_response``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import openai

from oma_core import ProviderError
from oma_core.http import (
    error_fields,
    innermost_cause,
    is_transport_error,
    malformed_response,
    parse_retry_after,
    scrub,
    timeout_error,
)

__all__ = [
    "from_sdk_error",
    "refused_before_sending",
    "status_error",
    "stream_error",
]

#: Error types and codes (OpenAI's and common compatible servers') that mean "try again".
_TRANSIENT = frozenset(
    {
        "server_error",
        "internal_error",
        "internal_server_error",
        "overloaded_error",
        "overloaded",
        "rate_limit_error",
        "rate_limit_exceeded",
        "service_unavailable",
        "timeout",
    }
)


def refused_before_sending(
    display_name: str, exc: BaseException, secrets: Iterable[str] = ()
) -> ProviderError:
    """The SDK refused the request before sending it (bad input, such as a NaN in
    ``provider_options``): not retryable, and not a malformed response."""
    return ProviderError(
        f"{display_name}: the request was not sent: {type(exc).__name__}: "
        f"{scrub(str(exc), secrets)}",
        provider=display_name,
        retryable=False,
    )


def status_error(
    status: int,
    headers: Mapping[str, str],
    body: object,
    display_name: str,
    secrets: Iterable[str] = (),
    *,
    reason: str | None = None,
) -> ProviderError:
    """The error for an error status (the same on every transport): the code (which decides
    ``retryable``), the service's message, scrubbed, and ``retry-after-ms`` / ``retry-after``."""
    detail = error_fields(body)[1] or reason or "request failed"
    return ProviderError(
        f"{display_name}: HTTP {status}: {scrub(detail, secrets)}",
        status_code=status,
        provider=display_name,
        retry_after=parse_retry_after(headers),
    )


def stream_error(
    error: Mapping[str, object],
    display_name: str,
    secrets: Iterable[str] = (),
    *,
    fallback: str = "error event",
) -> ProviderError:
    """The error for an ``error`` object a service sends inside a stream: retryable when its
    type or code says the fault is transient."""
    kind = {str(error.get("type") or ""), str(error.get("code") or "")}
    detail = scrub(error_fields({"error": error})[1] or fallback, secrets)
    return ProviderError(
        f"{display_name}: error in stream: {detail}",
        provider=display_name,
        retryable=bool(kind & _TRANSIENT),
    )


def from_sdk_error(
    exc: BaseException, display_name: str, secrets: Iterable[str] = ()
) -> ProviderError | None:
    """The ``ProviderError`` for an exception the SDK raised, or None when it is not the SDK's
    (the caller knows whether it came before or after the reply arrived)."""
    if isinstance(exc, ProviderError):
        return exc
    root = innermost_cause(exc)
    if isinstance(root, ProviderError):  # the toolkit's bounds, raised inside the SDK's client
        return root
    if isinstance(exc, openai.APIStatusError):
        return status_error(
            exc.status_code,
            exc.response.headers,
            exc.body,
            display_name,
            secrets,
            reason=exc.response.reason_phrase,
        )
    if isinstance(exc, openai.APITimeoutError):
        root = innermost_cause(exc)
        if "Timeout" not in type(root).__name__:
            # the aiohttp transport reports a dropped connection as a connect timeout
            return ProviderError(
                f"{display_name}: connection error: {type(root).__name__}",
                provider=display_name,
                retryable=True,
            )
        return timeout_error(root, provider=display_name)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        why = f": {type(cause).__name__}" if cause is not None else ""
        return ProviderError(
            f"{display_name}: connection error{why}", provider=display_name, retryable=True
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return malformed_response(display_name, "the reply does not match the documented schema")
    if isinstance(exc, openai.APIError):  # an error event inside a stream
        error = exc.body if isinstance(exc.body, Mapping) else {}
        return stream_error(error, display_name, secrets, fallback=exc.message)
    if is_transport_error(exc):  # raised while a stream's body is read, not wrapped
        return ProviderError(
            f"{display_name}: connection error mid-response: {type(exc).__name__}",
            provider=display_name,
            retryable=True,
        )
    return None
