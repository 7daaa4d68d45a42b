"""The fake Gemini API takes what the service takes and refuses what it refuses."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fake_gemini import API_KEY, FakeGemini, file_uri

TEXT = {"role": "user", "parts": [{"text": "hi"}]}


def _post(
    server: FakeGemini,
    body: dict[str, Any],
    path: str = "/v1beta/models/m:generateContent",
    **headers: str,
) -> httpx.Response:
    headers = {"x-goog-api-key": API_KEY, **headers}
    return httpx.post(server.url + path, json=body, headers=headers)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/models/m:generateContent",
        "/v1alpha/models/m:generateContent",
        "/any/prefix/v1beta/models/m:generateContent",
    ],
)
def test_takes_any_version_and_prefix(server: FakeGemini, path: str) -> None:
    assert _post(server, {"contents": [TEXT]}, path).status_code == 200


def test_takes_snake_case_fields(server: FakeGemini) -> None:
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [{"file_data": {"mime_type": "video/mp4", "file_uri": file_uri()}}],
            }
        ],
        "system_instruction": {"parts": [{"text": "x"}]},
        "generation_config": {"max_output_tokens": 3, "stop_sequences": ["a"]},
    }
    assert _post(server, body).status_code == 200


@pytest.mark.parametrize(
    ("contents", "says"),
    [
        ([{"role": "user", "parts": []}], "must not be empty"),
        ([{"role": "system", "parts": [{"text": "x"}]}], "valid role"),
        ([{"role": "user", "parts": [{"text": "a", "inlineData": {}}]}], "exactly one"),
        (
            [{"role": "user", "parts": [{"inlineData": {"mimeType": "image/gif", "data": ""}}]}],
            "Unsupported MIME type",
        ),
        (
            [{"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": "!!"}}]}],
            "Base64 decoding failed",
        ),
        (
            [{"role": "user", "parts": [{"fileData": {"fileUri": "http://example.com/a.mp4"}}]}],
            "unsupported file uri",
        ),
        (
            [{"role": "user", "parts": [{"fileData": {"fileUri": "https://example.com/a.mp4"}}]}],
            "required for an external URL",
        ),
        (
            [
                TEXT,
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            ],
            "function response parts",
        ),
        ([{"role": "user", "parts": [{"text": "x", "magic": 1}]}], 'Unknown name "magic"'),
    ],
    ids=[
        "empty-parts",
        "bad-role",
        "two-data-fields",
        "gif",
        "bad-base64",
        "http-url",
        "external-url-without-mime-type",
        "orphan-function-response",
        "unknown-part-field",
    ],
)
def test_refuses_what_the_service_refuses(
    server: FakeGemini, contents: list[Any], says: str
) -> None:
    reply = _post(server, {"contents": contents})
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and says in error["message"]


def test_refuses_a_wrong_key_and_unknown_fields(server: FakeGemini) -> None:
    assert _post(server, {"contents": [TEXT]}, **{"x-goog-api-key": "no"}).status_code == 400
    assert _post(server, {"contents": [TEXT], "magic": 1}).status_code == 400


def test_streams_whole_responses_per_event_with_no_end_marker(server: FakeGemini) -> None:
    with httpx.stream(
        "POST",
        server.base_url + "/models/m:streamGenerateContent?alt=sse",
        json={"contents": [TEXT]},
        headers={"x-goog-api-key": API_KEY},
    ) as reply:
        events = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data:")]
    assert events[0]["candidates"][0]["content"]["parts"] == [{"text": ""}]
    assert all("candidates" in e for e in events)
    assert "finishReason" in events[-1]["candidates"][0]
    assert "finishReason" not in events[-2]["candidates"][0]


def test_without_alt_sse_a_stream_is_one_json_array(server: FakeGemini) -> None:
    reply = _post(server, {"contents": [TEXT]}, "/v1beta/models/m:streamGenerateContent")
    assert isinstance(reply.json(), list) and reply.json()[-1]["candidates"][0]["finishReason"]


@pytest.mark.parametrize(
    ("model", "level", "accepted"),
    [
        ("gemini-3-flash-preview", "minimal", True),
        ("gemini-3.1-pro-preview", "medium", True),
        ("gemini-3-pro-preview", "minimal", False),  # the Flash models' only
        ("gemini-3-pro-preview", "medium", False),  # 3 Pro takes low and high
    ],
)
def test_refuses_a_thinking_level_the_model_does_not_take(
    server: FakeGemini, model: str, level: str, accepted: bool
) -> None:
    body = {"contents": [TEXT], "generationConfig": {"thinkingConfig": {"thinkingLevel": level}}}
    reply = _post(server, body, f"/v1beta/models/{model}:generateContent")
    assert (reply.status_code == 200) is accepted, reply.text


def test_refuses_an_altered_signature_it_issued(server: FakeGemini) -> None:
    from fake_gemini import ISSUED, Reply

    server.reply(Reply(thoughts="t", signature=ISSUED + "abc", signed_thought=True))
    assert _post(server, {"contents": [TEXT]}).status_code == 200
    for signature, status in ((ISSUED + "abc", 200), (ISSUED + "abd", 400)):
        thought = {"text": "t", "thought": True, "thoughtSignature": signature}
        turn = [TEXT, {"role": "model", "parts": [thought, {"text": "ok"}]}, TEXT]
        assert _post(server, {"contents": turn}).status_code == status
