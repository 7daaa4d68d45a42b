"""``oma_core.toolkit.final_event_error``: a failure a stream's final event reports (Cohere's
``message-end`` with ``finish_reason: "ERROR"``) is a retryable ``ProviderError`` that keeps
the service's text and none of the secrets. The kit's check of it is
``test_an_error_in_the_final_event_fails_the_stream`` (on the reference provider, and failing
a provider that reads such an event as an answer: ``tests/test_kit_catches_sabotage.py``)."""

from __future__ import annotations

from oma_core import ProviderError
from oma_core.toolkit import final_event_error


def test_the_error_is_retryable_without_a_status_and_keeps_the_services_text() -> None:
    error = final_event_error("Cohere", "internal error, try again", reason="ERROR")
    assert isinstance(error, ProviderError)
    assert (error.retryable, error.status_code, error.provider) == (True, None, "Cohere")
    assert error.message == (
        "Cohere stream failed in its final event (finish reason 'ERROR'): internal error, try again"
    )


def test_secrets_are_scrubbed_and_a_missing_text_is_no_colon() -> None:
    key = "co-secret-key-0123456789"
    error = final_event_error("Cohere", f"bad request with key {key}", secrets=[key])
    assert key not in error.message and key not in str(error)
    assert final_event_error("Cohere", None).message == "Cohere stream failed in its final event"
