"""The SDK's exceptions (and its HTTP library's) as oma's ``ProviderError``.

An HTTP status keeps its code, so the core decides retries by it (429, 5xx, 529 retryable);
``retry-after-ms`` / ``retry-after`` are read into ``retry_after``. An ``error`` event inside a
stream that began with HTTP 200 gets the status its error type stands for (``overloaded_error``
is 529). Connection faults and timeouts are retryable without a status; a reply the plugin
cannot read is not. Messages name the status and the service's error type and message, cut
short, with anything that looks like a credential or a base64 payload removed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import anthropic

from oma_core import ProviderError, parse_retry_after

from .capabilities import DISPLAY_NAME

__all__ = ["ERROR_TYPE_STATUS", "map_error"]

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

_MESSAGE_LIMIT = 300
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{64,}")
_KEY_LIKE = re.compile(r"sk-ant-[A-Za-z0-9_-]+")


def map_error(exc: BaseException, api_key: str | None = None) -> ProviderError | None:
    """``exc`` as a ``ProviderError``, or None when it is not a provider failure."""
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, anthropic.APIStatusError):
        return _status_error(exc, api_key)
    if isinstance(exc, anthropic.APITimeoutError):
        return ProviderError(
            f"{DISPLAY_NAME} request timed out", provider=DISPLAY_NAME, retryable=True
        )
    if isinstance(exc, anthropic.APIConnectionError):
        return ProviderError(
            f"{DISPLAY_NAME} connection failed: {_clean(str(exc), api_key)}",
            provider=DISPLAY_NAME,
            retryable=True,
        )
    if _is_transport_error(exc):
        # Raised while a stream's body is read, which the SDK does not wrap.
        return ProviderError(
            f"{DISPLAY_NAME} connection failed mid-response: {type(exc).__name__}",
            provider=DISPLAY_NAME,
            retryable=True,
        )
    if isinstance(exc, anthropic.APIResponseValidationError | ValueError):
        return ProviderError(
            f"{DISPLAY_NAME} sent a malformed response: {type(exc).__name__}",
            provider=DISPLAY_NAME,
            retryable=False,
        )
    return None


def _status_error(exc: anthropic.APIStatusError, api_key: str | None) -> ProviderError:
    status: int | None = exc.status_code
    error_type, message = _error_fields(exc.body)
    if status == 200:  # an ``error`` event inside a stream that began fine
        status = ERROR_TYPE_STATUS.get(error_type or "")
    headers: Mapping[str, str] = exc.response.headers
    text = f"{DISPLAY_NAME} returned HTTP {status}" if status else f"{DISPLAY_NAME} failed"
    if error_type:
        text += f" ({error_type})"
    if message:
        text += f": {_clean(message, api_key)}"
    return ProviderError(
        text,
        status_code=status,
        provider=DISPLAY_NAME,
        # an error type outside the documented list mid-stream: a server fault, try again
        retryable=True if status is None else None,
        retry_after=parse_retry_after(headers),
    )


def _error_fields(body: Any) -> tuple[str | None, str | None]:
    """``error.type`` and ``error.message`` of the documented error shape."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            kind, message = error.get("type"), error.get("message")
            return (
                kind if isinstance(kind, str) else None,
                message if isinstance(message, str) else None,
            )
    if isinstance(body, str):
        return None, body
    return None, None


def _clean(text: str, api_key: str | None) -> str:
    if api_key:
        text = text.replace(api_key, "[api key]")
    text = _KEY_LIKE.sub("[api key]", text)
    text = _LONG_TOKEN.sub("[...]", text)
    if len(text) > _MESSAGE_LIMIT:
        text = text[:_MESSAGE_LIMIT] + "..."
    return text


def _is_transport_error(exc: BaseException) -> bool:
    # The SDK's HTTP library (httpx, or httpx2 in the 2.x SDK) raises TransportError
    # subclasses; telling them apart by name avoids importing a library the SDK may not use.
    for cls in type(exc).__mro__:
        if cls.__name__ in ("TransportError", "StreamError") and cls.__module__.startswith(
            ("httpx", "httpcore")
        ):
            return True
    return False
