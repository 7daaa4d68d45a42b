"""The fake Chat Completions service itself refuses what the documented service refuses
(raw HTTP, no SDK): a malformed request fails here whatever the plugin does."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fake_openai import API_KEY, FakeChatCompletions
from openai_builders import MP4_B64, PDF_B64, PNG_B64

HEADERS = {"authorization": f"Bearer {API_KEY}"}
TEXT = {"type": "text", "text": "hi"}
IMAGE = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


def post(server: FakeChatCompletions, body: Any, headers: dict[str, str] | None = None) -> Any:
    with httpx.Client(base_url=server.base_url) as client:
        return client.post(
            "/chat/completions", json=body, headers=HEADERS if headers is None else headers
        )


def body(*messages: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "messages": list(messages), **extra}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assert_refused(reply: httpx.Response, fragment: str, status: int = 400) -> None:
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert fragment in error["message"], error["message"]


def test_a_valid_request_gets_a_completion(server: FakeChatCompletions) -> None:
    reply = post(server, body(user([TEXT, IMAGE])))
    assert reply.status_code == 200
    completion = reply.json()
    assert completion["object"] == "chat.completion"
    assert completion["choices"][0]["message"]["role"] == "assistant"
    assert completion["usage"]["total_tokens"] > 0


def test_a_wrong_key_is_401(server: FakeChatCompletions) -> None:
    assert_refused(
        post(server, body(user("hi")), {"authorization": "Bearer other"}), "API key", 401
    )


@pytest.mark.parametrize("field", ["model", "messages"])
def test_a_missing_required_field_is_refused(server: FakeChatCompletions, field: str) -> None:
    request = body(user("hi"))
    del request[field]
    assert_refused(post(server, request), f"Missing required parameter: '{field}'")


def test_empty_messages_are_refused(server: FakeChatCompletions) -> None:
    assert_refused(post(server, body()), "empty array")


def test_an_unknown_top_level_field_is_refused(server: FakeChatCompletions) -> None:
    assert_refused(post(server, body(user("hi"), detail="high")), "Unrecognized request argument")


def test_stream_options_without_stream_are_refused(server: FakeChatCompletions) -> None:
    reply = post(server, body(user("hi"), stream_options={"include_usage": True}))
    assert_refused(reply, "only allowed when 'stream' is enabled")


def test_a_tool_message_without_a_preceding_tool_call_is_refused(
    server: FakeChatCompletions,
) -> None:
    tool = {"role": "tool", "tool_call_id": "call_1", "content": "42"}
    reply = post(server, body(user("hi"), {"role": "assistant", "content": "ok"}, tool))
    assert_refused(reply, "must be a response to a preceeding message with 'tool_calls'")


def test_a_tool_message_answering_another_call_is_refused(server: FakeChatCompletions) -> None:
    assistant = {"role": "assistant", "tool_calls": [CALL]}
    tool = {"role": "tool", "tool_call_id": "call_2", "content": "42"}
    assert_refused(post(server, body(user("hi"), assistant, tool)), "preceeding message")


def test_tool_calls_left_unanswered_are_refused(server: FakeChatCompletions) -> None:
    assistant = {"role": "assistant", "tool_calls": [CALL]}
    reply = post(server, body(user("hi"), assistant, user("and?")))
    assert_refused(reply, "did not have response messages: call_1")


def test_an_image_part_in_an_assistant_message_is_refused(server: FakeChatCompletions) -> None:
    assistant = {"role": "assistant", "content": [TEXT, IMAGE]}
    reply = post(server, body(user("hi"), assistant, user("and?")))
    assert_refused(reply, "Supported values are: 'text' and 'refusal'")


def test_an_image_part_in_a_tool_message_is_refused(server: FakeChatCompletions) -> None:
    assistant = {"role": "assistant", "tool_calls": [CALL]}
    tool = {"role": "tool", "tool_call_id": "call_1", "content": [IMAGE]}
    reply = post(server, body(user("hi"), assistant, tool))
    assert_refused(reply, "Supported values are: 'text'.")


def test_an_assistant_message_without_content_or_tool_calls_is_refused(
    server: FakeChatCompletions,
) -> None:
    reply = post(server, body(user("hi"), {"role": "assistant"}, user("and?")))
    assert_refused(reply, "content is required unless tool_calls is set")


def test_a_video_part_is_refused_by_openai_and_taken_by_a_compatible_server() -> None:
    video = {"type": "video_url", "video_url": {"url": f"data:video/mp4;base64,{MP4_B64}"}}
    with FakeChatCompletions(mode="strict") as strict:
        assert_refused(post(strict, body(user([TEXT, video]))), "Invalid value: 'video_url'")  # type: ignore[arg-type]
    with FakeChatCompletions(mode="compatible") as compatible:
        assert post(compatible, body(user([TEXT, video]))).status_code == 200  # type: ignore[arg-type]


def test_an_image_data_url_that_is_not_an_image_is_refused(server: FakeChatCompletions) -> None:
    bad = {"type": "image_url", "image_url": {"url": f"data:video/mp4;base64,{MP4_B64}"}}
    assert_refused(post(server, body(user([bad]))), "Invalid image URL")


def test_invalid_base64_in_an_image_is_refused(server: FakeChatCompletions) -> None:
    bad = {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}
    assert_refused(post(server, body(user([bad]))), "Invalid image URL")


def test_an_unknown_image_detail_is_refused(server: FakeChatCompletions) -> None:
    bad = {"type": "image_url", "image_url": {"url": "https://e.com/a.png", "detail": "max"}}
    assert_refused(post(server, body(user([bad]))), "detail")


def test_a_file_that_is_not_a_pdf_is_refused_by_openai(server: FakeChatCompletions) -> None:
    pdf_data = f"data:application/pdf;base64,{PDF_B64}"
    pdf = {"type": "file", "file": {"filename": "a.pdf", "file_data": pdf_data}}
    assert post(server, body(user([pdf]))).status_code == 200
    text_data = "data:text/plain;base64,aGk="
    text_file = {"type": "file", "file": {"filename": "a.txt", "file_data": text_data}}
    assert_refused(post(server, body(user([text_file]))), "only PDF files")


def test_a_file_part_with_file_data_needs_a_filename(server: FakeChatCompletions) -> None:
    nameless = {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF_B64}"}}
    assert_refused(post(server, body(user([nameless]))), "file.filename")


def test_a_pdf_url_in_file_data_is_taken_by_openrouter_only() -> None:
    pdf = {"type": "file", "file": {"filename": "r.pdf", "file_data": "https://e.com/r.pdf"}}
    with FakeChatCompletions(mode="strict") as strict:
        assert_refused(post(strict, body(user([pdf]))), "Invalid file data")  # type: ignore[arg-type]
    with FakeChatCompletions(mode="compatible") as compatible:
        assert post(compatible, body(user([pdf]))).status_code == 200  # type: ignore[arg-type]


WAV_B64 = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


def test_an_input_audio_part_of_raw_base64_wav_is_taken(server: FakeChatCompletions) -> None:
    audio = {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}}
    assert post(server, body(user([TEXT, audio]))).status_code == 200


@pytest.mark.parametrize(
    ("input_audio", "fragment"),
    [
        ({"data": WAV_B64, "format": "ogg"}, "expected 'wav' or 'mp3'"),
        ({"data": f"data:audio/wav;base64,{WAV_B64}", "format": "wav"}, "expected base64"),
        ({"format": "wav"}, "input_audio.data"),
        ({"data": WAV_B64, "format": "wav", "url": "https://e.com/a.wav"}, "Unrecognized"),
    ],
    ids=["ogg", "data-url", "no-data", "extra-field"],
)
def test_a_malformed_input_audio_part_is_refused(
    server: FakeChatCompletions, input_audio: dict[str, Any], fragment: str
) -> None:
    audio = {"type": "input_audio", "input_audio": input_audio}
    assert_refused(post(server, body(user([audio]))), fragment)


def test_reasoning_content_is_refused_by_openai(server: FakeChatCompletions) -> None:
    assistant = {"role": "assistant", "content": "ok", "reasoning_content": "hmm"}
    reply = post(server, body(user("hi"), assistant, user("and?")))
    assert_refused(reply, "Unrecognized property")


def test_a_stream_ends_with_a_usage_chunk_and_done(server: FakeChatCompletions) -> None:
    reply = post(server, body(user("hi"), stream=True, stream_options={"include_usage": True}))
    assert reply.headers["content-type"].startswith("text/event-stream")
    lines = [line[6:] for line in reply.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


def test_a_stream_without_include_usage_has_no_usage_chunk(server: FakeChatCompletions) -> None:
    reply = post(server, body(user("hi"), stream=True))
    lines = [line[6:] for line in reply.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    assert '"usage"' not in reply.text


BREAKPOINT = {"mode": "explicit"}
MARKED = {**TEXT, "prompt_cache_breakpoint": BREAKPOINT}
ASSISTANT_MARKED = {"role": "assistant", "content": [MARKED]}


@pytest.mark.parametrize(
    ("messages", "options", "says"),
    [
        ([user([{**TEXT, "prompt_cache_breakpoint": BREAKPOINT}] * 5)], None, "at most 4"),
        ([user("hi"), ASSISTANT_MARKED, user("hi")], None, "output part"),
        ([user([{**TEXT, "prompt_cache_breakpoint": {"mode": "auto"}}])], None, "Invalid"),
        ([user("hi")], {"ttl": "1h"}, "prompt_cache_options.ttl"),
    ],
    ids=["five", "on-an-assistant-part", "bad-mode", "bad-ttl"],
)
def test_cache_breakpoints_are_held_to_openais_rules(
    server: FakeChatCompletions, messages: list[Any], options: Any, says: str
) -> None:
    extra = {} if options is None else {"prompt_cache_options": options}
    assert_refused(post(server, body(*messages, **extra)), says)


def test_four_breakpoints_and_the_cache_options_are_taken(server: FakeChatCompletions) -> None:
    parts = [{**TEXT, "prompt_cache_breakpoint": {**BREAKPOINT, "ttl": "12h"}}] * 4
    extra = {"prompt_cache_options": {"mode": "explicit"}, "prompt_cache_key": "k",
             "prompt_cache_retention": "24h"}  # fmt: skip
    assert post(server, body(user(parts), **extra)).status_code == 200
