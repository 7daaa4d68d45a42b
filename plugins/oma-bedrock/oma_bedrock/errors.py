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

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from oma_core import ProviderError
from oma_core.http import (
    error_fields,
    error_from_exception,
    malformed_response,
    parse_retry_after,
    scrub,
)

from .capabilities import DISPLAY_NAME

__all__ = [
    "ERROR_BODY_LIMIT",
    "EXCEPTIONS",
    "http_error",
    "malformed",
    "scrub_aws",
    "stream_exception",
    "transport_error",
]

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

#: How much of a streamed error body is read (bytes): an error body is small.
ERROR_BODY_LIMIT = 64 * 1024
_SIGNATURE = re.compile(r"(?i)(signature=)[0-9a-f]+")


def scrub_aws(text: str, secrets: Iterable[str | None]) -> str:
    """The toolkit's ``scrub`` (the given secrets, credentials by shape — AWS key ids among
    them — base64-like runs; cut short), and SigV4 signatures too."""
    return scrub(_SIGNATURE.sub(r"\1[REDACTED]", text), [s for s in secrets if s])


def http_error(
    status: int, headers: Mapping[str, str], body: bytes, secrets: Iterable[str | None]
) -> ProviderError:
    """A non-200 reply as a ``ProviderError``: the status kept, the exception named from
    ``x-amzn-errortype`` (or a body's ``__type``), the retry hint read."""
    secrets = tuple(secrets)
    name = str(headers.get("x-amzn-errortype", "")).split(":", 1)[0].strip()
    kind, message = error_fields(body)
    if not name:
        name = (kind or "").rsplit("#", 1)[-1]
        with contextlib.suppress(ValueError):
            parsed: Any = json.loads(body)
            if isinstance(parsed, Mapping) and isinstance(parsed.get("__type"), str):
                name = parsed["__type"].rsplit("#", 1)[-1]
    known = EXCEPTIONS.get(_BY_LOWER.get(name.lower(), ""))
    text = f"{DISPLAY_NAME} returned HTTP {status}"
    if name:
        text += f" ({scrub_aws(name, secrets)})"
    if message:
        text += f": {scrub_aws(message, secrets)}"
    return ProviderError(
        text,
        status_code=status,
        provider=DISPLAY_NAME,
        retryable=known[1] if known else None,
        retry_after=parse_retry_after(dict(headers.items())),
    )


def stream_exception(name: str, payload: bytes, secrets: Iterable[str | None]) -> ProviderError:
    """An exception frame inside ``converse-stream`` (the stream itself began with 200)."""
    canonical = _BY_LOWER.get(name.lower())
    status, retryable = EXCEPTIONS.get(canonical or "", (None, True))
    _, message = error_fields(payload)
    text = f"{DISPLAY_NAME} stream failed ({scrub_aws(canonical or name, secrets)})"
    if message:
        text += f": {scrub_aws(message, secrets)}"
    return ProviderError(text, status_code=status, provider=DISPLAY_NAME, retryable=retryable)


def transport_error(exc: BaseException) -> ProviderError:
    """A connection fault or time-out (retryable, no status), as the toolkit maps it."""
    return error_from_exception(exc, provider=DISPLAY_NAME)


def malformed(detail: str) -> ProviderError:
    """A reply without the documented shape: retryable, since a second try may be whole."""
    return malformed_response(DISPLAY_NAME, detail)
