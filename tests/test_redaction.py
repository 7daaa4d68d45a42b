"""Redaction: secrets, URL secrets, media and base64 runs never survive in text or JSON."""

from __future__ import annotations

import base64
import hashlib
import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from oma_core.errors import ProviderError
from oma_core.redaction import cut, redact_error, redact_json, redact_text, redact_url

ANTHROPIC_KEY = "sk-ant-api03-Zx9Kq2LmN4pR7sT1uV3wX5yZ"
OPENAI_KEY = "sk-proj-Abc123Def456Ghi789Jkl0"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PNG = base64.b64encode(bytes(range(256)) * 3).decode()


def test_anthropic_and_openai_keys_are_removed_from_text() -> None:
    text = redact_text(f"keys {ANTHROPIC_KEY} and {OPENAI_KEY}")
    assert ANTHROPIC_KEY not in text
    assert OPENAI_KEY not in text
    assert "sk-" not in text


def test_bearer_token_is_removed_with_its_value() -> None:
    text = redact_text("Authorization: Bearer abc.def-ghi_jkl123")
    assert "abc.def-ghi_jkl123" not in text


def test_jwt_and_aws_access_key_are_removed() -> None:
    text = redact_text(f"jwt {JWT} aws AKIAIOSFODNN7EXAMPLE")
    assert "eyJ" not in text
    assert "AKIAIOSFODNN7EXAMPLE" not in text


def test_key_value_assignments_lose_their_value() -> None:
    text = redact_text("api_key=hunter2hunter2 password: swordfish")
    assert "hunter2hunter2" not in text
    assert "swordfish" not in text
    assert "api_key=" in text


def test_signed_url_loses_query_and_user_info() -> None:
    url = "https://alice:pw@bucket.example.com/a/b.png?X-Amz-Signature=deadbeef&X-Amz-Credential=x"
    assert redact_url(url) == "https://bucket.example.com/a/b.png"


def test_url_in_free_text_is_stripped_too() -> None:
    text = redact_text("see https://h.example/x?token=s3cr3tvalue for details")
    assert "s3cr3tvalue" not in text
    assert "https://h.example/x" in text


def test_long_base64_runs_are_replaced_but_plain_words_and_hex_survive() -> None:
    digest = hashlib.sha256(b"x").hexdigest()
    text = redact_text(f"image {PNG} internationalization {digest}")
    assert PNG[:16] not in text
    assert "internationalization" in text
    assert digest in text


def test_redaction_is_idempotent() -> None:
    once = redact_text(f"{ANTHROPIC_KEY} https://u:p@h.example/x?sig=1 {PNG}")
    assert redact_text(once) == once


def test_media_payload_becomes_type_size_and_digest() -> None:
    raw = bytes(range(256)) * 3
    message = {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
        ],
    }
    out = redact_json(message)
    assert out["content"][0]["source"] == {
        "media_type": "image/png",
        "bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }


def test_values_under_secret_keys_are_replaced() -> None:
    out = redact_json({"input": {"api_key": "plain", "Authorization": "x", "query": "cats"}})
    assert out == {
        "input": {"api_key": "[REDACTED]", "Authorization": "[REDACTED]", "query": "cats"}
    }


def test_url_sources_are_stripped() -> None:
    source = {
        "type": "url",
        "media_type": "video/mp4",
        "url": "https://cdn.example:8443/v.mp4?Signature=abc#t=1",
    }
    assert redact_json(source) == {**source, "url": "https://cdn.example:8443/v.mp4"}


def test_cut_appends_a_marker_only_when_cutting() -> None:
    assert cut("abc", 3) == "abc"
    long = cut("abcdef", 3)
    assert long.startswith("abc") and long != "abc" and "truncated" in long


def test_redacted_error_keeps_class_and_fields_but_not_the_secret() -> None:
    error = ProviderError(f"echo: {ANTHROPIC_KEY} {PNG}", status_code=429, provider="X")
    scrubbed = redact_error(error)
    assert isinstance(scrubbed, ProviderError)
    assert scrubbed.status_code == 429 and scrubbed.retryable is True
    assert ANTHROPIC_KEY not in str(scrubbed)
    assert PNG[:16] not in str(scrubbed)
    assert ANTHROPIC_KEY not in scrubbed.message


def test_redacted_error_scrubs_its_cause() -> None:
    try:
        try:
            raise ValueError(ANTHROPIC_KEY)
        except ValueError as inner:
            raise RuntimeError("outer") from inner
    except RuntimeError as error:
        scrubbed = redact_error(error)
    assert scrubbed.__cause__ is not None
    assert ANTHROPIC_KEY not in str(scrubbed.__cause__)


def test_clean_error_is_returned_unchanged() -> None:
    error = ProviderError("rate limited", status_code=429)
    assert redact_error(error) is error


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=12, max_size=400), st.text(max_size=40))
def test_no_16_character_piece_of_binary_base64_survives(raw: bytes, prefix: str) -> None:
    encoded = base64.b64encode(raw).decode()
    # A run that reads as a word (lowercase or CamelCase), a path or a hex digest is kept on
    # purpose: error text names classes such as UnsupportedContentBlockError.
    assume(not re.fullmatch(r"[a-z0-9/]*[a-z][a-z0-9/]*", encoded.rstrip("=")))
    assume(not re.fullmatch(r"(?:[A-Z][a-z]+)+", encoded.rstrip("=")))
    text = redact_text(f"{prefix} {encoded} tail")
    for start in range(len(encoded) - 15):
        assert encoded[start : start + 16] not in text


def test_token_counts_and_authors_are_not_mistaken_for_secrets() -> None:
    data = {"max_tokens": 100, "input_tokens": 3, "author": "ada", "access_token": "abc"}
    assert redact_json(data) == {
        "max_tokens": 100,
        "input_tokens": 3,
        "author": "ada",
        "access_token": "[REDACTED]",
    }


def test_an_error_that_copy_cannot_rebuild_keeps_its_class() -> None:
    class Picky(Exception):
        def __init__(self, code: int, text: str) -> None:
            self.code = code
            super().__init__(f"{code}: {text}")

    scrubbed = redact_error(Picky(7, f"echo {ANTHROPIC_KEY}"))
    assert isinstance(scrubbed, Picky)
    assert scrubbed.code == 7
    assert ANTHROPIC_KEY not in str(scrubbed)


def test_long_identifiers_survive_while_base64_runs_do_not() -> None:
    text = "UnsupportedContentBlockError from ScriptedProvider: iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB"
    redacted = redact_text(text)
    assert redacted.startswith("UnsupportedContentBlockError from ScriptedProvider: ")
    assert "iVBORw0KGgo" not in redacted
    assert "[base64-like data omitted; 32 characters]" in redacted
