"""Bedrock's failures as oma's ``ProviderError``, scrubbed of credentials, prompts and media.

An HTTP error names its exception in the ``x-amzn-errortype`` header
(``ThrottlingException:http://internal.amazon.com/...``) and its message in a JSON body; an
exception inside ``converse-stream`` arrives as an event-stream frame whose
``:exception-type`` names it in lower camel case. Each documented exception decides
``retryable`` (throttling, model-not-ready, timeouts and server faults: yes; validation,
access denied, not found, quotas: no), an unknown one its status. Messages hold the status,
the exception's name and the service's message, cut short and scrubbed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from oma_core.toolkit import ProviderError, parse_retry_after, redact_text

from .capabilities import DISPLAY_NAME

__all__ = ["EXCEPTIONS", "http_error", "malformed", "scrub", "stream_exception", "transport_error"]

#: Documented exceptions: name -> (HTTP status, retryable).
EXCEPTIONS: Mapping[str, tuple[int, bool]] = {
    "AccessDeniedException": (403, False),
    "ConflictException": (400, False),
    "InternalServerException": (500, True),
    "ModelErrorException": (424, False),
    "ModelNotReadyException": (429, True),
    "ModelStreamErrorException": (424, True),
    "ModelTimeoutException": (408, True),
    "ResourceNotFoundException": (404, False),
    "ServiceQuotaExceededException": (400, False),
    "ServiceUnavailableException": (503, True),
    "ThrottlingException": (429, True),
    "ValidationException": (400, False),
    "UnrecognizedClientException": (403, False),
    "ExpiredTokenException": (403, False),
}
_BY_LOWER = {name.lower(): name for name in EXCEPTIONS}

_MESSAGE_LIMIT = 300
_LONG_TOKEN = re.compile(r"[A-Za-z0-9+/=_-]{40,}")
_ACCESS_KEY = re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{12,}\b")
_SIGNATURE = re.compile(r"(?i)(signature=)[0-9a-f]+")


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` without the given secrets, access-key ids, signatures or base64-like runs,
    cut to a few hundred characters."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[REDACTED]")
    text = _SIGNATURE.sub(r"\1[REDACTED]", text)
    text = _ACCESS_KEY.sub("[REDACTED]", text)
    text = _LONG_TOKEN.sub("[...]", redact_text(text))
    if len(text) > _MESSAGE_LIMIT:
        text = text[:_MESSAGE_LIMIT] + "..."
    return text


def http_error(
    status: int, headers: Mapping[str, str], body: bytes, secrets: Iterable[str | None]
) -> ProviderError:
    """A non-200 reply as a ``ProviderError`` (status kept, retry hint read)."""
    name = str(headers.get("x-amzn-errortype", "")).split(":", 1)[0].strip()
    message: str | None = None
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, Mapping):
        found = parsed.get("message", parsed.get("Message"))
        message = found if isinstance(found, str) else None
        if not name and isinstance(parsed.get("__type"), str):
            name = parsed["__type"].rsplit("#", 1)[-1]
    known = EXCEPTIONS.get(_BY_LOWER.get(name.lower(), ""))
    text = f"{DISPLAY_NAME} returned HTTP {status}"
    if name:
        text += f" ({scrub(name, secrets)})"
    if message:
        text += f": {scrub(message, secrets)}"
    return ProviderError(
        text,
        status_code=status,
        provider=DISPLAY_NAME,
        retryable=known[1] if known else None,
        retry_after=parse_retry_after(headers),
    )


def stream_exception(name: str, payload: bytes, secrets: Iterable[str | None]) -> ProviderError:
    """An exception frame inside ``converse-stream`` (the stream itself began with 200)."""
    canonical = _BY_LOWER.get(name.lower())
    status, retryable = EXCEPTIONS.get(canonical or "", (None, True))
    message = None
    try:
        parsed: Any = json.loads(payload)
    except ValueError:
        parsed = None
    if isinstance(parsed, Mapping) and isinstance(parsed.get("message"), str):
        message = parsed["message"]
    text = f"{DISPLAY_NAME} stream failed ({scrub(canonical or name, secrets)})"
    if message:
        text += f": {scrub(message, secrets)}"
    return ProviderError(text, status_code=status, provider=DISPLAY_NAME, retryable=retryable)


def transport_error(exc: BaseException) -> ProviderError:
    """A connection fault or time-out (retryable, no status); only the exception's type is
    named, since its text may hold the URL and so the model."""
    what = "timed out" if "Timeout" in type(exc).__name__ else "connection failed"
    return ProviderError(
        f"{DISPLAY_NAME} {what} ({type(exc).__name__})", provider=DISPLAY_NAME, retryable=True
    )


def malformed(detail: str) -> ProviderError:
    """A reply without the documented shape: retryable, since a second try may be whole."""
    return ProviderError(
        f"{DISPLAY_NAME} sent a malformed response: {detail}",
        provider=DISPLAY_NAME,
        retryable=True,
    )
