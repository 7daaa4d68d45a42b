"""The openai SDK's exceptions -> oma's ``ProviderError``, with nothing secret in the message.

An HTTP status keeps its code (so 408, 409, 429 and 5xx are retryable) and the server's
``retry-after-ms`` / ``retry-after``; connection faults and timeouts are retryable without a
status; an error the service reports inside a stream is retryable when its type says it is
transient; a reply that cannot be read is not retryable. Messages are cut short, and API keys
and long base64-looking runs are blanked out, since services sometimes echo what they got.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import openai

from oma_core import ProviderError, parse_retry_after

__all__ = ["from_sdk_error", "malformed"]

_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{64,}={0,2}")
_MAX_MESSAGE = 500
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


def clean(text: str, api_key: str | None) -> str:
    """``text`` without the API key or base64 payloads, at most a few hundred characters."""
    if api_key:
        text = text.replace(api_key, "[api key]")
    text = _BASE64_RUN.sub("[...]", text)
    if len(text) > _MAX_MESSAGE:
        text = text[:_MAX_MESSAGE] + "..."
    return text


def malformed(display_name: str, what: str) -> ProviderError:
    """A reply that does not have the shape the API documents: not worth retrying."""
    return ProviderError(
        f"{display_name}: malformed response: {what}", provider=display_name, retryable=False
    )


def from_sdk_error(exc: BaseException, display_name: str, api_key: str | None) -> ProviderError:
    """The ``ProviderError`` for an exception the SDK raised during one call."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _error_message(exc.body) or exc.response.reason_phrase or "request failed"
        return ProviderError(
            f"{display_name}: HTTP {status}: {clean(detail, api_key)}",
            status_code=status,
            provider=display_name,
            retry_after=parse_retry_after(exc.response.headers),
        )
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(
            f"{display_name}: the request timed out", provider=display_name, retryable=True
        )
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        why = f": {type(cause).__name__}" if cause is not None else ""
        return ProviderError(
            f"{display_name}: connection error{why}", provider=display_name, retryable=True
        )
    if isinstance(exc, openai.APIResponseValidationError):
        return malformed(display_name, "the reply does not match the documented schema")
    if isinstance(exc, openai.APIError):  # an error event inside a stream
        error = exc.body if isinstance(exc.body, Mapping) else {}
        kind = {str(error.get("type") or ""), str(error.get("code") or "")}
        detail = clean(_error_message({"error": error}) or exc.message, api_key)
        return ProviderError(
            f"{display_name}: error in stream: {detail}",
            provider=display_name,
            retryable=bool(kind & _TRANSIENT),
        )
    return ProviderError(
        f"{display_name}: {type(exc).__name__}: {clean(str(exc), api_key)}",
        provider=display_name,
        retryable=False,
    )


def _error_message(body: object) -> str | None:
    """``error.message`` of an OpenAI-style error body, or None."""
    if isinstance(body, Mapping):
        error: Any = body.get("error", body)
        if isinstance(error, Mapping):
            message = error.get("message")
            if isinstance(message, str) and message:
                return message
        elif isinstance(error, str) and error:
            return error
    return None
