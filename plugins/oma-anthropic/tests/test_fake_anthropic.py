"""The fake Messages API itself refuses what the documented service refuses (raw HTTP, no SDK)."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from fake_anthropic import FakeAnthropic

PNG = base64.b64encode(bytes.fromhex("89504e470d0a1a0a0000000d49484452")).decode()
HEADERS = {"x-api-key": "test-key", "anthropic-version": "2023-06-01"}


def post(server: FakeAnthropic, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    with httpx.Client(base_url=server.url) as client:
        return client.post(
            "/v1/messages", json=body, headers=HEADERS if headers is None else headers
        )


def body(*messages: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 10, "messages": list(messages), **extra}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


TEXT = {"type": "text", "text": "hi"}
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}


def assert_refused(reply: httpx.Response, fragment: str, status: int = 400) -> None:
    assert reply.status_code == status, reply.text
    error = reply.json()
    assert error["type"] == "error"
    expected_type = {400: "invalid_request_error", 401: "authentication_error"}[status]
    assert error["error"]["type"] == expected_type
    assert fragment in error["error"]["message"]
    assert reply.headers["request-id"].startswith("req_")


def test_a_valid_request_gets_a_message(server: FakeAnthropic) -> None:
    reply = post(server, body(user(TEXT)))
    assert reply.status_code == 200
    message = reply.json()
    assert message["type"] == "message" and message["role"] == "assistant"
    assert message["content"][0]["type"] == "text"
    assert message["usage"]["input_tokens"] > 0


def test_missing_api_key_is_401(server: FakeAnthropic) -> None:
    assert_refused(
        post(server, body(user(TEXT)), {"anthropic-version": "2023-06-01"}), "x-api-key", 401
    )


def test_wrong_api_key_is_401(server: FakeAnthropic) -> None:
    headers = {**HEADERS, "x-api-key": "other"}
    assert_refused(post(server, body(user(TEXT)), headers), "invalid x-api-key", 401)


def test_missing_anthropic_version_is_refused(server: FakeAnthropic) -> None:
    assert_refused(post(server, body(user(TEXT)), {"x-api-key": "test-key"}), "anthropic-version")


@pytest.mark.parametrize("field", ["model", "max_tokens", "messages"])
def test_missing_required_field_is_refused(server: FakeAnthropic, field: str) -> None:
    request = body(user(TEXT))
    del request[field]
    assert_refused(post(server, request), f"{field}: Field required")


def test_empty_messages_are_refused(server: FakeAnthropic) -> None:
    assert_refused(post(server, body()), "at least one message")


def test_unknown_top_level_field_is_refused(server: FakeAnthropic) -> None:
    assert_refused(post(server, body(user(TEXT), detail="high")), "Extra inputs are not permitted")


def test_image_in_an_assistant_turn_is_refused(server: FakeAnthropic) -> None:
    reply = post(server, body(user(TEXT), assistant(IMAGE), user(TEXT)))
    assert_refused(reply, "only allowed in user messages")


def test_video_block_is_refused(server: FakeAnthropic) -> None:
    video = {"type": "video", "source": {"type": "url", "url": "https://e.com/v.mp4"}}
    assert_refused(post(server, body(user(video))), "Input tag 'video'")


def test_unsupported_image_media_type_is_refused(server: FakeAnthropic) -> None:
    bmp = {"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": PNG}}
    assert_refused(post(server, body(user(bmp))), "media_type")


def test_image_bytes_must_match_the_media_type(server: FakeAnthropic) -> None:
    jpeg = {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": PNG}}
    assert_refused(post(server, body(user(jpeg))), "does not match the provided media type")


def test_invalid_base64_is_refused(server: FakeAnthropic) -> None:
    bad = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "@@@"}}
    assert_refused(post(server, body(user(bad))), "invalid base64")


def document(source: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"type": "document", "source": source, **fields}


PDF = {
    "type": "base64",
    "media_type": "application/pdf",
    "data": base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode(),
}


@pytest.mark.parametrize(
    "source",
    [
        PDF,
        {"type": "url", "url": "https://example.com/report.pdf"},
        {"type": "text", "media_type": "text/plain", "data": "Ship on Friday."},
    ],
    ids=["base64-pdf", "url", "text"],
)
def test_the_documented_document_sources_are_accepted(
    server: FakeAnthropic, source: dict[str, Any]
) -> None:
    reply = post(server, body(user(document(source, title="report"), TEXT)))
    assert reply.status_code == 200, reply.text


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ({"type": "text", "media_type": "text/markdown", "data": "# x"}, "'text/plain'"),
        ({"type": "text", "media_type": "text/plain", "data": 3}, "valid string"),
        ({**PDF, "media_type": "text/plain"}, "'application/pdf'"),
        ({**PDF, "data": base64.b64encode(b"not a pdf").decode()}, "PDF specified was not valid"),
        ({"type": "url", "url": "ftp://example.com/r.pdf"}, "Only HTTP(S) URLs"),
    ],
    ids=["text-markdown", "text-not-a-string", "base64-not-pdf-type", "not-pdf-bytes", "ftp"],
)
def test_a_malformed_document_source_is_refused(
    server: FakeAnthropic, source: dict[str, Any], fragment: str
) -> None:
    assert_refused(post(server, body(user(document(source)))), fragment)


def test_a_document_in_an_assistant_turn_is_refused(server: FakeAnthropic) -> None:
    reply = post(server, body(user(TEXT), assistant(document(PDF)), user(TEXT)))
    assert_refused(reply, "only allowed in user messages")


def test_an_audio_block_is_refused(server: FakeAnthropic) -> None:
    audio = {"type": "audio", "source": {"type": "url", "url": "https://e.com/a.wav"}}
    assert_refused(post(server, body(user(audio))), "Input tag 'audio'")


def test_tool_result_without_a_matching_tool_use_is_refused(server: FakeAnthropic) -> None:
    reply = post(server, body(user(TEXT), assistant(TEXT), user(RESULT)))
    assert_refused(reply, "must have a corresponding `tool_use` block")


def test_tool_use_without_a_tool_result_in_the_next_turn_is_refused(server: FakeAnthropic) -> None:
    reply = post(server, body(user(TEXT), assistant(CALL), user(TEXT)))
    assert_refused(reply, "without `tool_result` blocks immediately after")


def test_tool_result_after_other_content_is_refused(server: FakeAnthropic) -> None:
    reply = post(server, body(user(TEXT), assistant(CALL), user(TEXT, RESULT)))
    assert_refused(reply, "must come before any other content")


def test_thinking_without_signature_is_refused(server: FakeAnthropic) -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": ""}
    assert_refused(post(server, body(user(TEXT), assistant(thinking), user(TEXT))), "signature")


def test_empty_text_is_refused(server: FakeAnthropic) -> None:
    assert_refused(post(server, body(user({"type": "text", "text": ""}))), "non-empty")


def test_stream_follows_the_documented_event_sequence(server: FakeAnthropic) -> None:
    server.reply(
        {"type": "thinking", "thinking": "abcdef", "signature": "s1"},
        {"type": "text", "text": "hello"},
    )
    reply = post(server, body(user(TEXT), stream=True))
    names = [line[7:] for line in reply.text.splitlines() if line.startswith("event: ")]
    assert names[0] == "message_start"
    assert names[1:3] == ["content_block_start", "content_block_delta"]
    assert "ping" in names
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    assert '"signature_delta"' in reply.text


def test_whitespace_only_text_is_refused(server: FakeAnthropic) -> None:
    reply = post(server, body(user({"type": "text", "text": " \n"})))
    assert_refused(reply, "non-whitespace text")


def test_tool_use_in_a_user_turn_is_refused(server: FakeAnthropic) -> None:
    assert_refused(post(server, body(user(CALL))), "only allowed in assistant messages")


def test_tool_result_in_an_assistant_turn_is_refused(server: FakeAnthropic) -> None:
    reply = post(server, body(user(TEXT), assistant(RESULT)))
    assert_refused(reply, "only allowed in user messages")


def test_a_tool_result_answering_an_older_turn_is_refused(server: FakeAnthropic) -> None:
    # the tool_use must be in the *previous* assistant turn, not any earlier one
    reply = post(
        server,
        body(user(TEXT), assistant(CALL), user(RESULT), assistant(TEXT), user(RESULT)),
    )
    assert_refused(reply, "must have a corresponding `tool_use` block")


def test_an_unknown_role_is_refused(server: FakeAnthropic) -> None:
    reply = post(server, body({"role": "system", "content": [TEXT]}))
    assert_refused(reply, "Input should be 'user' or 'assistant'")


def test_an_image_part_in_a_tool_result_is_accepted(server: FakeAnthropic) -> None:
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [TEXT, IMAGE]}
    reply = post(server, body(user(TEXT), assistant(CALL), user(result)))
    assert reply.status_code == 200, reply.text


def test_a_video_inside_a_tool_result_is_refused(server: FakeAnthropic) -> None:
    video = {"type": "video", "source": {"type": "url", "url": "https://e.com/v.mp4"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [video]}
    reply = post(server, body(user(TEXT), assistant(CALL), user(result)))
    assert_refused(reply, "Input tag 'video'")


def test_temperature_above_one_is_refused(server: FakeAnthropic) -> None:
    assert_refused(post(server, body(user(TEXT), temperature=1.5)), "temperature")


def test_an_error_event_has_the_documented_shape(server: FakeAnthropic) -> None:
    from oma_core.testing import ErrorMidStream

    server.enqueue(ErrorMidStream(after_events=1, error_type="overloaded_error"))
    reply = post(server, body(user(TEXT), stream=True))
    assert reply.status_code == 200
    assert reply.text.endswith(
        'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
        '"message": "scripted error mid-stream"}}\n\n'
    )
