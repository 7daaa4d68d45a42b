"""The fake Mistral service refuses what the service refuses, in the service's error shape."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fake_mistral import API_KEY, FakeMistral

USER = {"role": "user", "content": "hi"}


def _post(server: FakeMistral, body: dict[str, Any], key: str = API_KEY) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/chat/completions", json=body, headers={"authorization": f"Bearer {key}"}
    )


def _call(call_id: str) -> dict[str, Any]:
    function = {"name": "f", "arguments": "{}"}
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


@pytest.mark.parametrize(
    ("messages", "status", "says"),
    [
        (
            [
                _call("call_0fypS1hVX"),
                {"role": "tool", "tool_call_id": "call_0fypS1hVX", "content": "x"},
            ],
            400,
            "must be a-z, A-Z, 0-9",
        ),
        (
            [USER, {"role": "tool", "tool_call_id": "abcdefghi", "content": "x"}],
            400,
            "unexpected tool call id",
        ),
        ([USER, _call("abcdefghi")], 400, "Expected last role User or Tool"),
        ([USER, {"role": "assistant", "content": "hello"}], 400, "Expected last role"),
        (
            [
                {
                    "role": "assistant",
                    "content": [{"type": "image_url", "image_url": "https://x/a.png"}],
                },
                USER,
            ],
            400,
            "images go in user messages",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": "data:image/bmp;base64,AAAA"}],
                }
            ],
            400,
            "not a URL or a base64 image data URL",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": "data:image/png;base64,not base64!"}
                    ],
                }
            ],
            400,
            "invalid base64",
        ),
        (
            [{"role": "user", "content": [{"type": "video_url", "video_url": "x"}]}],
            422,
            "unknown chunk",
        ),
    ],
    ids=[
        "bad-id",
        "orphan-tool",
        "unanswered-call",
        "ends-with-assistant",
        "assistant-image",
        "bmp-data-url",
        "bad-base64",
        "video",
    ],
)
def test_refuses_what_the_service_refuses(
    server: FakeMistral, messages: list[Any], status: int, says: str
) -> None:
    reply = _post(server, {"model": "m", "messages": messages})
    assert reply.status_code == status, reply.text
    error = reply.json()
    assert error["object"] == "error" and says in error["message"]


def test_refuses_unknown_fields_and_a_wrong_key(server: FakeMistral) -> None:
    assert _post(server, {"model": "m", "messages": [USER], "magic": 1}).status_code == 422
    assert _post(server, {"model": "m", "messages": [USER]}, key="nope").status_code == 401


def test_takes_a_valid_round_and_an_image_url_object(server: FakeMistral) -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}, image]},
        _call("abcdefghi"),
        {"role": "tool", "tool_call_id": "abcdefghi", "content": "x"},
    ]
    reply = _post(server, {"model": "m", "messages": messages, "stop": ["x"]})
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["role"] == "assistant"


def test_a_stream_opens_without_text_and_ends_with_done(server: FakeMistral) -> None:
    with httpx.stream(
        "POST",
        f"{server.base_url}/chat/completions",
        json={"model": "m", "messages": [USER], "stream": True},
        headers={"authorization": f"Bearer {API_KEY}"},
    ) as reply:
        lines = [line for line in reply.iter_lines() if line.startswith("data: ")]
    assert '"content": ""' in lines[0] and lines[-1] == "data: [DONE]"
    assert '"finish_reason": "stop"' in lines[-2] and '"usage"' in lines[-2]
