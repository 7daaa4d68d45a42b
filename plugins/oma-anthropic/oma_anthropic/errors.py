"""The SDK's exceptions (and its HTTP library's) as oma's ``ProviderError``, holding no secret.

An HTTP status keeps its code, so the core decides retries by it (429, 5xx, 529 retryable);
``retry-after-ms`` / ``retry-after`` are read into ``retry_after``. An ``error`` event inside a
stream that began with HTTP 200 gets the status its error type stands for (``overloaded_error``
is 529). Connection faults and timeouts are retryable without a status; so is a reply the
plugin cannot decode (a garbled reply is a transient fault). A failure before anything was
sent (the SDK refusing its input) is not retryable, and is not called a malformed response.

Every error is built from strings only and raised after the ``except`` block that caught the
SDK's exception, so it holds no reference to that exception, its request or its response
(``raise ... from None`` would still keep one in ``__context__``). Messages name the status
and the service's error type and message, cut short, without the API key, the request's own
text, or anything that looks like a credential or a base64 payload: the toolkit's ``scrub``,
with the key and the request's own text as the secrets, and its ``error_fields`` and
``malformed_response``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import anthropic

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

from .capabilities import DISPLAY_NAME

__all__ = [
    "ERROR_TYPE_STATUS",
    "map_error",
    "refused_before_sending",
    "status_error",
]

#: The status each documented error type stands for (used for errors inside a 200 stream).
ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def refused_before_sending(exc: BaseException, secrets: Iterable[str] = ()) -> ProviderError:
    """The SDK refused the request before sending it (bad input, such as a ``max_tokens`` it
    will only stream): not retryable, and not a malformed response."""
    return ProviderError(
        f"{DISPLAY_NAME}: the request was not sent: {type(exc).__name__}: "
        f"{scrub(str(exc), secrets)}",
        provider=DISPLAY_NAME,
        retryable=False,
    )


def map_error(exc: BaseException, secrets: Iterable[str] = ()) -> ProviderError | None:
    """``exc`` as a ``ProviderError``, or None when it is not the SDK's (the caller knows
    whether it came before or after the reply arrived)."""
    if isinstance(exc, ProviderError):
        return exc
    root = innermost_cause(exc)
    if isinstance(root, ProviderError):  # the toolkit's bounds, raised inside the SDK's client
        return root
    if isinstance(exc, anthropic.APIStatusError):
        return _status_error(exc, secrets)
    if isinstance(exc, anthropic.APITimeoutError):
        root = innermost_cause(exc)
        if "Timeout" not in type(root).__name__:
            # the aiohttp transport reports a dropped connection as a connect timeout
            return ProviderError(
                f"{DISPLAY_NAME} connection failed ({type(root).__name__})",
                provider=DISPLAY_NAME,
                retryable=True,
            )
        return timeout_error(root, provider=DISPLAY_NAME)
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        why = f" ({type(cause).__name__})" if cause is not None else ""
        return ProviderError(
            f"{DISPLAY_NAME} connection failed{why}", provider=DISPLAY_NAME, retryable=True
        )
    if is_transport_error(exc):
        # Raised while a stream's body is read, which the SDK does not wrap.
        return ProviderError(
            f"{DISPLAY_NAME} connection failed mid-response: {type(exc).__name__}",
            provider=DISPLAY_NAME,
            retryable=True,
        )
    if isinstance(exc, anthropic.APIResponseValidationError):
        return malformed_response(DISPLAY_NAME, "the reply does not match the documented schema")
    return None


def _status_error(exc: anthropic.APIStatusError, secrets: Iterable[str]) -> ProviderError:
    return status_error(exc.status_code, exc.response.headers, exc.body, secrets)


def status_error(
    status: int, headers: Mapping[str, str], body: object, secrets: Iterable[str] = ()
) -> ProviderError:
    """The error for an error status, or (``status`` 200) for an ``error`` event inside a
    stream that began fine, which gets the status its error type stands for; the same on
    every transport."""
    code: int | None = status
    error_type, message = error_fields(body)
    if status == 200:
        code = ERROR_TYPE_STATUS.get(error_type or "")
    text = f"{DISPLAY_NAME} returned HTTP {code}" if code else f"{DISPLAY_NAME} failed"
    if error_type:
        text += f" ({scrub(error_type, secrets)})"
    if message:
        text += f": {scrub(message, secrets)}"
    return ProviderError(
        text,
        status_code=code,
        provider=DISPLAY_NAME,
        # an error type outside the documented list mid-stream: a server fault, try again
        retryable=True if code is None else None,
        retry_after=parse_retry_after(headers),
    )
