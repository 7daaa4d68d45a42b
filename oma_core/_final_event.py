"""The error a stream's final event carries in place of a stop reason.

Some services end every stream with the same final event and say there that the generation
failed: Cohere's ``message-end`` with ``finish_reason: "ERROR"`` (its text in
``delta.error``), a ``done`` line with an error reason. That is the service's failure, not
the caller's, so it is transient: retryable. The core retries a retryable error only while
no output has reached the caller, so a failure after some text is reported, not repeated.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ProviderError
from .http import scrub

__all__ = ["final_event_error"]


def final_event_error(
    provider: str,
    detail: str | None,
    *,
    reason: str | None = None,
    secrets: Iterable[str] = (),
) -> ProviderError:
    """The ``ProviderError`` for a stream whose final event reports a failure: ``detail``
    is the service's text (None when it gives none), ``reason`` the value that said so
    (``"ERROR"``). Retryable, without a status; the key and the request's payloads in
    ``secrets`` are scrubbed from the message. Raise it instead of building a response::

        if event["finish_reason"] == "ERROR":
            raise final_event_error(NAME, event["delta"].get("error"), reason="ERROR",
                                    secrets=self.secrets)
    """
    message = f"{provider} stream failed in its final event"
    if reason:
        message += f" (finish reason {scrub(reason, secrets)!r})"
    if detail:
        message += f": {scrub(detail, secrets)}"
    return ProviderError(message, provider=provider, retryable=True)
