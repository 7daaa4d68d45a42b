"""The message model checked against DESIGN.md sections 2, 3, 4 and 8, read as a test author would.

Each test states one promise of the contract; quoted phrases are matched as substrings and error
messages follow ``f"{path} {reason}"`` with the same ``path`` on ``error.path``.
"""

from __future__ import annotations

import datetime
import json
import math
import mimetypes
import types
from typing import Any

import attrs
import pytest

from oma_core import (
    IMAGE_MEDIA_TYPES,
    Base64Source,
    BudgetExceededError,
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    OmaError,
    ProviderError,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnsupportedContentBlockError,
    UrlSource,
    VideoBlock,
    dump_messages,
    estimate_tokens,
    image_base64,
    image_url,
    load_messages,
    video_base64,
    video_url,
)

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
IMG_URL = "https://example.com/cat.png"
VID_URL = "https://example.com/clip.mp4"


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: Any = "hi") -> dict[str, Any]:
    return {"type": "text", "text": value}


def url_source(url: str = IMG_URL, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "url", "media_type": media_type, "url": url}


def b64_source(data: str = PNG_B64, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "base64", "media_type": media_type, "data": data}


def image(source: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "image", "source": source or url_source(), **extra}


def video(source: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "video", "source": source or url_source(VID_URL, "video/mp4")}


def tool_use(input_: Any = None, **over: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "t1", "name": "zoom", "input": input_ or {"q": "x"}}
    block.update(over)
    return block


def tool_result(content: Any = "done", **over: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": "t1", "content": content}
    block.update(over)
    return block


def refused(data: Any, path: str | None = None, phrase: str | None = None) -> InvalidMessageError:
    """Load `data`, expect InvalidMessageError, and check the `f"{path} {reason}"` form."""
    with pytest.raises(InvalidMessageError) as info:
        load_messages(data)
    err = info.value
    assert isinstance(err.path, str) and err.path.startswith("messages")
    assert str(err).startswith(err.path + " "), str(err)
    if path is not None:
        assert err.path == path, (err.path, str(err))
    if phrase is not None:
        assert phrase in str(err), str(err)
    return err


def full_conversation() -> list[dict[str, Any]]:
    return [
        user(
            text("What is shown?"),
            image(url_source()),
            image(b64_source(), detail="low"),
            video(b64_source("AAAA", "video/mp4")),
            video(),
        ),
        assistant(
            {"type": "reasoning", "text": "Look closer.", "signature": "sig"},
            {"type": "reasoning", "text": "", "redacted_data": "opaque"},
            text("Let me zoom."),
            tool_use({"factor": 2, "nested": {"list": [1, 2.5, True, None, "s"]}}),
        ),
        user(
            tool_result(
                [
                    text("zoomed"),
                    {"type": "image", "source": b64_source()},
                    {
                        "type": "file",
                        "filename": "report.pdf",
                        "source": b64_source("JVBERi0=", "application/pdf"),
                    },
                ]
            ),
            tool_result("failed", is_error=True, tool_use_id="t2"),
            text("thanks"),
        ),
    ]


# --- section 8: public names ---------------------------------------------------------------


# (every section 8 name is checked in test_contract_agent.py)


def test_testing_names_are_importable() -> None:
    from oma_core.testing import Delayed, ScriptedProvider

    assert callable(ScriptedProvider) and callable(Delayed)


# --- section 2: shapes and round trip --------------------------------------------------------


def test_load_returns_a_tuple_of_frozen_messages_with_tuple_content() -> None:
    messages = load_messages(full_conversation())
    assert isinstance(messages, tuple) and len(messages) == 3
    assert all(isinstance(m, LLMMessage) for m in messages)
    first = messages[0]
    assert first.role == "user"
    assert isinstance(first.content, tuple)
    kinds = [type(b) for b in first.content]
    assert kinds == [TextBlock, ImageBlock, ImageBlock, VideoBlock, VideoBlock]
    assert isinstance(first.content[1].source, UrlSource)
    assert isinstance(first.content[2].source, Base64Source)
    assert first.content[2].detail == "low"
    assert first.content[1].detail is None
    assert [type(b) for b in messages[1].content] == [
        ReasoningBlock,
        ReasoningBlock,
        TextBlock,
        ToolUseBlock,
    ]
    assert isinstance(messages[2].content[0], ToolResultBlock)
    assert isinstance(messages[2].content[0].content, tuple)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        first.role = "assistant"  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        first.content[0].text = "changed"  # type: ignore[misc]


def test_dump_inverts_load_on_the_section_2_shape() -> None:
    data = full_conversation()
    dumped = dump_messages(load_messages(data))
    assert isinstance(dumped, list)
    assert dumped == data
    assert json.loads(json.dumps(dumped)) == data


def test_load_inverts_dump() -> None:
    messages = load_messages(full_conversation())
    assert load_messages(dump_messages(messages)) == messages


def test_optional_keys_absent_stay_absent_in_the_dump() -> None:
    data = [
        user(image(), tool_result("ok")),
        assistant({"type": "reasoning", "text": "r"}),
    ]
    dumped = dump_messages(load_messages(data))
    assert "detail" not in dumped[0]["content"][0]
    assert "is_error" not in dumped[0]["content"][1]
    assert set(dumped[1]["content"][0]) == {"type", "text"}


def test_optional_keys_present_round_trip() -> None:
    data = [
        user(image(detail="high"), tool_result("bad", is_error=True)),
        assistant({"type": "reasoning", "text": "r", "signature": "s", "redacted_data": "d"}),
    ]
    assert dump_messages(load_messages(data)) == data


@pytest.mark.parametrize("detail", ["low", "high", "auto"])
def test_every_documented_detail_is_accepted(detail: str) -> None:
    (message,) = load_messages([user(image(detail=detail))])
    assert message.content[0].detail == detail


def test_is_error_false_round_trips_through_load() -> None:
    messages = load_messages([user(tool_result([text("x")], is_error=False))])
    assert messages[0].content[0].is_error is False
    assert load_messages(dump_messages(messages)) == messages


def test_tuples_are_accepted_wherever_lists_are() -> None:
    data = ({"role": "user", "content": (text("a"), tool_result((text("b"),)))},)
    messages = load_messages(data)
    assert dump_messages(messages) == [user(text("a"), tool_result([text("b")]))]


def test_tuples_inside_tool_input_dump_as_json_lists() -> None:
    messages = load_messages([assistant(tool_use({"pair": (1, 2)}))])
    assert dump_messages(messages)[0]["content"][0]["input"] == {"pair": [1, 2]}


def test_missing_base64_padding_is_accepted_and_normalised() -> None:
    messages = load_messages([user(image(b64_source("AAA")), video(b64_source("AA", "video/mp4")))])
    assert messages[0].content[0].source.data == "AAA="
    assert messages[0].content[1].source.data == "AA=="
    assert dump_messages(messages)[0]["content"][0]["source"]["data"] == "AAA="


def test_images_may_appear_in_assistant_turns() -> None:
    (message,) = load_messages([assistant(image(), text("here"))])
    assert isinstance(message.content[0], ImageBlock)


def test_empty_text_is_allowed() -> None:
    (message,) = load_messages([user(text(""))])
    assert message.content[0].text == ""


def test_uppercase_url_scheme_is_accepted() -> None:
    (message,) = load_messages([user(image(url_source("HTTPS://example.com/a.png")))])
    assert message.content[0].source.url.lower().startswith("https://")


def test_file_part_accepts_any_media_type() -> None:
    part = {"type": "file", "filename": "a.csv", "source": url_source("http://x.org/a", "text/csv")}
    (message,) = load_messages([user(tool_result([part]))])
    assert dump_messages([message])[0]["content"][0]["content"] == [part]


def test_empty_input_is_refused_unless_allowed() -> None:
    # Section 3 leaves load_messages itself open: oma reads "at least one message" as the
    # default and lets a history-like caller opt in with allow_empty=True.
    refused([], "messages", "at least one message")
    assert load_messages([], allow_empty=True) == ()
    assert load_messages((), allow_empty=True) == ()


# --- section 2/3: mixed dicts and objects ----------------------------------------------------


def test_objects_and_dicts_mix_freely() -> None:
    message = LLMMessage(role="user", content=(TextBlock(text="obj"),))
    data = [
        message,
        assistant(TextBlock(text="block in a dict"), text("dict")),
        {"role": "user", "content": [image_url(IMG_URL), text("dict again")]},
    ]
    messages = load_messages(data)
    assert messages[0] == message
    assert messages[1].content[0] == TextBlock(text="block in a dict")
    assert messages[2].content[0] == image_url(IMG_URL)
    assert dump_messages(messages)[0] == user(text("obj"))


def test_load_returns_given_message_objects_unchanged() -> None:
    message = LLMMessage(role="user", content=(TextBlock(text="obj"),))
    assert load_messages([message])[0] is message


def test_a_mapping_that_is_not_a_dict_is_a_message() -> None:
    proxy = types.MappingProxyType({"role": "user", "content": [text("x")]})
    assert load_messages([proxy])[0].content[0].text == "x"


def test_dump_messages_accepts_plain_dicts_and_normalises_them() -> None:
    assert dump_messages([user(image(b64_source("AAA")))])[0]["content"][0]["source"]["data"] == (
        "AAA="
    )


def test_dump_messages_validates_dicts() -> None:
    with pytest.raises(InvalidMessageError):
        dump_messages([user(text(1))])


# --- section 3: the input and the messages ---------------------------------------------------


def test_a_dict_input_is_not_a_list() -> None:
    refused(user(text()), "messages", "messages must be a list, got dict")


@pytest.mark.parametrize(
    ("value", "name"), [("hello", "str"), (None, "None"), (3, "int"), ({1, 2}, "set")]
)
def test_input_types_are_named_as_python_names_them(value: Any, name: str) -> None:
    refused(value, "messages", f"messages must be a list, got {name}")


def test_a_message_that_is_not_a_mapping_is_refused() -> None:
    err = refused([user(text()), 42], "messages[1]")
    assert "got int" in str(err)


def test_a_string_content_is_refused_with_the_documented_message() -> None:
    refused(
        [user(text()), {"role": "assistant", "content": "hello"}],
        "messages[1].content",
        "messages[1].content must be a list of content blocks, got str",
    )


def test_none_content_is_named_none() -> None:
    refused([{"role": "user", "content": None}], "messages[0].content", "got None")


def test_missing_content_is_refused() -> None:
    refused([{"role": "user"}], "messages[0].content")


def test_empty_content_is_refused() -> None:
    refused([user()], "messages[0].content")


@pytest.mark.parametrize("role", ["system", "tool", "User", None, 1])
def test_roles_other_than_user_and_assistant_are_refused(role: Any) -> None:
    err = refused([{"role": role, "content": [text()]}])
    assert err.path.startswith("messages[0]")
    assert "role" in str(err)


def test_missing_role_is_refused() -> None:
    err = refused([{"content": [text()]}])
    assert err.path.startswith("messages[0]")


def test_unknown_message_key_is_refused() -> None:
    err = refused([{"role": "user", "content": [text()], "name": "bob"}])
    assert err.path.startswith("messages[0]")
    assert "name" in str(err)


# --- section 3: blocks -------------------------------------------------------------------------


@pytest.mark.parametrize("block", [42, "text", None, ["type", "text"]])
def test_a_block_that_is_not_a_mapping_is_refused(block: Any) -> None:
    refused([user(text(), block)], "messages[0].content[1]")


@pytest.mark.parametrize("kind", [None, 1, "audio", "Text", "image_url", "document", "file"])
def test_block_types_must_name_a_known_block(kind: Any) -> None:
    block = {"text": "x"} if kind is None else {"type": kind, "text": "x"}
    err = refused([user(block)])
    assert err.path.startswith("messages[0].content[0]")


def test_tool_result_in_an_assistant_message_is_refused() -> None:
    err = refused([assistant(tool_result())])
    assert err.path.startswith("messages[0].content[0]")


def test_tool_use_in_a_user_message_is_refused() -> None:
    err = refused([user(text(), tool_use())])
    assert err.path.startswith("messages[0].content[1]")


def test_reasoning_in_a_user_message_is_refused() -> None:
    err = refused([user({"type": "reasoning", "text": "thinking"})])
    assert err.path.startswith("messages[0].content[0]")


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}},
        {"type": "image", "source": url_source(), "cache_control": "x"},
        {"type": "video", "source": url_source(VID_URL, "video/mp4"), "cache_control": 1},
        {"type": "reasoning", "text": "x", "cache_control": None},
    ],
)
def test_keys_not_in_section_2_are_refused(block: dict[str, Any]) -> None:
    role = "assistant" if block["type"] == "reasoning" else "user"
    err = refused([{"role": role, "content": [block]}])
    assert err.path.startswith("messages[0].content[0]")
    assert "cache_control" in str(err)


def test_unknown_source_key_is_refused() -> None:
    source = {**url_source(), "data": PNG_B64}
    err = refused([user(image(source))])
    assert err.path.startswith("messages[0].content[0].source")
    assert PNG_B64 not in str(err)


def test_video_has_no_detail() -> None:
    block = {**video(), "detail": "low"}
    refused([user(block)])


# --- section 3: text -------------------------------------------------------------------------


def test_text_block_without_text_is_refused() -> None:
    err = refused([user({"type": "text"})])
    assert err.path.startswith("messages[0].content[0]")


@pytest.mark.parametrize(
    ("value", "name"), [(123, "int"), (None, "None"), (b"hi", "bytes"), (["a"], "list")]
)
def test_non_string_text_is_refused_naming_the_type(value: Any, name: str) -> None:
    err = refused([user(text(value))])
    assert err.path.startswith("messages[0].content[0]")
    assert f"got {name}" in str(err)


def test_bool_text_is_named_bool() -> None:
    err = refused([user(text(True))])
    assert "got bool" in str(err)


@pytest.mark.parametrize("value", ["\ud800", "ok \udfff", "a\udc00b"])
def test_lone_surrogates_in_text_are_refused(value: str) -> None:
    err = refused([user(text(value))])
    assert err.path.startswith("messages[0].content[0]")


def test_non_ascii_and_paired_astral_characters_are_text() -> None:
    (message,) = load_messages([user(text("héllo 😀 中文"))])
    assert message.content[0].text == "héllo 😀 中文"


def test_lone_surrogate_in_reasoning_is_refused() -> None:
    refused([assistant({"type": "reasoning", "text": "\ud800"})])


# --- section 3: sources -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "URL", "Base64", None, "path", "data"])
def test_source_type_must_be_base64_or_url(kind: Any) -> None:
    source = {"type": kind, "media_type": "image/png", "url": IMG_URL}
    refused(
        [user(image(source))],
        "messages[0].content[0].source.type",
        'messages[0].content[0].source.type must be "base64" or "url"',
    )


def test_source_must_be_a_mapping() -> None:
    err = refused([user({"type": "image", "source": IMG_URL})])
    assert err.path.startswith("messages[0].content[0].source")
    assert "got str" in str(err)


@pytest.mark.parametrize(
    "media_type",
    ["image/png; charset=binary", "image/png;q=1", "image/png ; a=b"],
)
def test_media_type_with_parameters_is_refused(media_type: str) -> None:
    refused(
        [user(image(url_source(media_type=media_type)))],
        "messages[0].content[0].source.media_type",
        "MIME type without parameters",
    )


@pytest.mark.parametrize(
    "media_type", ["IMAGE/PNG", "Image/png", "image", "image/", "/png", "", " image/png", "png"]
)
def test_media_type_must_be_a_lowercase_type_and_subtype(media_type: str) -> None:
    refused(
        [user(image(url_source(media_type=media_type)))],
        "messages[0].content[0].source.media_type",
        "MIME type without parameters",
    )


def test_media_type_must_be_a_string() -> None:
    err = refused([user(image(url_source(media_type=None)))])  # type: ignore[arg-type]
    assert err.path == "messages[0].content[0].source.media_type"
    assert "got None" in str(err)


def test_image_with_a_video_media_type_is_refused() -> None:
    err = refused([user(image(url_source(media_type="video/mp4")))])
    assert err.path.startswith("messages[0].content[0]")


def test_video_with_an_image_media_type_is_refused() -> None:
    err = refused([user(video(url_source(VID_URL, "image/png")))])
    assert err.path.startswith("messages[0].content[0]")


def test_image_in_a_tool_result_must_be_an_image() -> None:
    part = {"type": "image", "source": url_source(media_type="application/pdf")}
    err = refused([user(tool_result([part]))])
    assert err.path.startswith("messages[0].content[0].content[0]")


@pytest.mark.parametrize(
    "data",
    [
        "",
        "iVBO RwAA",
        "iVBORw0K\nGgo=",
        " AAAA",
        "AAAA\n",
        "data:image/png;base64,AAAA",
        "AA-_",
        "AB==",
        "AAB=",
        "A",
        "AAAAA",
        "AA=A",
        "AA===",
        "====",
        "AAAA====",
        "é===",
    ],
)
def test_non_canonical_base64_is_refused(data: str) -> None:
    refused(
        [user(image(b64_source(data)))],
        "messages[0].content[0].source.data",
        "must contain raw base64 data",
    )


def test_base64_data_must_be_a_string() -> None:
    err = refused([user(image(b64_source(b"AAAA")))])  # type: ignore[arg-type]
    assert err.path == "messages[0].content[0].source.data"
    assert "got bytes" in str(err)


@pytest.mark.parametrize("data", ["AAAA", "AA==", "AAA=", "AA", "AAA", "+/+/", PNG_B64])
def test_canonical_base64_is_accepted(data: str) -> None:
    (message,) = load_messages([user(image(b64_source(data)))])
    assert message.content[0].source.data.rstrip("=") == data.rstrip("=")
    assert len(message.content[0].source.data) % 4 == 0


def test_refused_base64_is_never_echoed() -> None:
    payload = "SECRETPAYLOADxyz" * 8 + "!!"
    err = refused([user(image(b64_source(payload)))])
    assert "SECRETPAYLOAD" not in str(err)
    err = refused([user(image(b64_source("data:image/png;base64," + "SECRETPAYLOAD" * 4)))])
    assert "SECRETPAYLOAD" not in str(err)


def test_valid_payload_is_not_echoed_by_a_later_error() -> None:
    block = image(b64_source("SECRETPAYLOADAAA", "image/png; x=y"))
    err = refused([user(block)])
    assert "SECRETPAYLOAD" not in str(err)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a.png",
        "http://example.com/a.png",
        "HTTP://EXAMPLE.COM/a.png",
        "hTTpS://example.com",
        "https://example.com:8443/a.png?x=1&y=2#frag",
        "http://127.0.0.1/a.png",
        "http://[::1]:8080/a.png",
    ],
)
def test_absolute_http_urls_are_accepted(url: str) -> None:
    (message,) = load_messages([user(image(url_source(url)))])
    assert message.content[0].source.url == url


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/a.png",
        "s3://bucket/a.png",
        "gs://bucket/a.png",
        "FILE:///tmp/a.png",
        "mailto:someone@example.com",
    ],
)
def test_other_schemes_must_use_http_or_https(url: str) -> None:
    refused(
        [user(image(url_source(url)))],
        "messages[0].content[0].source.url",
        "must use HTTP or HTTPS",
    )


@pytest.mark.parametrize(
    "url",
    [
        "mm_file://abc",
        "/images/a.png",
        "a.png",
        "example.com/a.png",
        "//example.com/a.png",
        "https://",
        "https:///a.png",
        "http:example.com",
        "https://exa mple.com/a.png",
        "https://example.com/a b.png",
        " https://example.com/a.png",
        "https://example.com/a.png\n",
        "https://example.com/\ta.png",
        "https://example.com/\x00a.png",
        "https://example.com/\x7fa.png",
        "https://example.com\\a.png",
        "https://user:hunter2@example.com/a.png",
        "https://user@example.com/a.png",
        "",
    ],
)
def test_urls_must_be_absolute_http_urls(url: str) -> None:
    refused(
        [user(image(url_source(url)))],
        "messages[0].content[0].source.url",
        "must be an absolute HTTP(S) URL",
    )


def test_data_url_in_the_url_field_is_refused() -> None:
    refused(
        [user(image(url_source("data:image/png;base64,AAAA")))],
        "messages[0].content[0].source.url",
    )


def test_url_credentials_are_never_echoed() -> None:
    err = refused([user(image(url_source("https://bob:hunter2@example.com/a.png")))])
    assert "hunter2" not in str(err)


def test_url_must_be_a_string() -> None:
    err = refused([user(video(url_source(None, "video/mp4")))])  # type: ignore[arg-type]
    assert err.path == "messages[0].content[0].source.url"
    assert "got None" in str(err)


def test_url_errors_inside_tool_result_parts_name_the_part() -> None:
    part = {"type": "image", "source": url_source("file:///x.png")}
    refused(
        [user(tool_result([text("a"), part]))],
        "messages[0].content[0].content[1].source.url",
        "must use HTTP or HTTPS",
    )


def test_validation_never_touches_the_network_or_the_file_system(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import builtins
    import socket

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("validation touched the outside world")

    monkeypatch.setattr(socket, "getaddrinfo", boom)
    monkeypatch.setattr(socket.socket, "connect", boom)
    monkeypatch.setattr(builtins, "open", boom)
    load_messages(full_conversation())
    load_messages([user(image(url_source("https://does-not-exist.invalid/a.png")))])


# --- section 3: tool_use and tool_result -------------------------------------------------------


@pytest.mark.parametrize("field", ["id", "name"])
@pytest.mark.parametrize("value", [None, 1, ["x"]])
def test_tool_use_id_and_name_are_strings(field: str, value: Any) -> None:
    err = refused([assistant(tool_use(**{field: value}))])
    assert err.path.startswith("messages[0].content[0]")


@pytest.mark.parametrize("field", ["id", "name", "input"])
def test_tool_use_fields_are_required(field: str) -> None:
    block = tool_use()
    del block[field]
    refused([assistant(block)])


@pytest.mark.parametrize("value", [[1, 2], "x", 1, None, (("a", 1),)])
def test_tool_use_input_is_a_json_object(value: Any) -> None:
    block = tool_use()
    block["input"] = value
    err = refused([assistant(block)])
    assert err.path.startswith("messages[0].content[0]")


def test_empty_tool_input_is_accepted() -> None:
    block = tool_use()
    block["input"] = {}
    (message,) = load_messages([assistant(block)])
    assert dump_messages([message])[0]["content"][0]["input"] == {}


def test_tool_result_needs_a_string_tool_use_id() -> None:
    refused([user(tool_result(tool_use_id=7))])
    block = tool_result()
    del block["tool_use_id"]
    refused([user(block)])


@pytest.mark.parametrize("content", [[], None, 5, {"type": "text", "text": "x"}])
def test_tool_result_content_is_a_string_or_a_non_empty_list(content: Any) -> None:
    err = refused([user(tool_result(content))])
    assert err.path.startswith("messages[0].content[0]")


def test_empty_string_tool_result_is_accepted() -> None:
    (message,) = load_messages([user(tool_result(""))])
    assert message.content[0].content == ""


def test_error_result_with_parts_is_refused() -> None:
    err = refused(
        [user(tool_result([text("oops")], is_error=True))],
        phrase="must be a string for an error tool result",
    )
    assert err.path.startswith("messages[0].content[0]")


def test_is_error_must_be_a_bool() -> None:
    refused([user(tool_result("x", is_error="yes"))])
    refused([user(tool_result("x", is_error=1))])


@pytest.mark.parametrize(
    "part",
    [
        {"type": "video", "source": url_source(VID_URL, "video/mp4")},
        {"type": "tool_use", "id": "a", "name": "b", "input": {}},
        {"type": "reasoning", "text": "x"},
        {"type": "file", "source": url_source()},
        {"type": "file", "filename": 3, "source": url_source()},
        {"type": "file", "filename": "a.png"},
        {"type": "text"},
        {"type": "text", "text": "x", "extra": 1},
        "plain string part",
    ],
)
def test_tool_result_parts_follow_section_2(part: Any) -> None:
    err = refused([user(tool_result([text("ok"), part]))])
    assert err.path.startswith("messages[0].content[0].content[1]")


def test_image_part_in_a_tool_result_has_no_detail_key() -> None:
    # Section 2 lists {"type": "image", "source": source} for parts: no "detail".
    part = {"type": "image", "source": url_source(), "detail": "low"}
    refused([user(tool_result([part]))])


# --- section 3: plain data only ----------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        lambda: None,
        {1, 2},
        frozenset({1}),
        b"bytes",
        bytearray(b"x"),
        datetime.datetime(2024, 1, 1),
        object(),
        1 + 2j,
    ],
)
def test_non_plain_data_in_tool_input_is_not_cloneable(value: Any) -> None:
    err = refused(
        [assistant(tool_use({"x": value}))],
        phrase="messages must contain cloneable structured data",
    )
    assert err.path.startswith("messages[0].content[0]")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused(value: float) -> None:
    err = refused([assistant(tool_use({"x": [value]}))])
    assert err.path.startswith("messages[0].content[0]")


def test_non_string_dict_keys_are_refused() -> None:
    err = refused([assistant(tool_use({1: "a"}))])
    assert err.path.startswith("messages[0].content[0]")


def test_a_set_as_content_is_refused() -> None:
    refused([{"role": "user", "content": {"a"}}], "messages[0].content")


def test_a_function_as_a_message_is_refused() -> None:
    refused([user(text()), print], "messages[1]")


def test_plain_json_values_in_tool_input_round_trip() -> None:
    value = {"s": "é", "i": -3, "f": 1.5, "b": False, "n": None, "l": [[], {}], "big": 10**30}
    (message,) = load_messages([assistant(tool_use(value))])
    assert dump_messages([message])[0]["content"][0]["input"] == value


def test_a_cyclic_tool_input_is_refused_without_recursion_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    err = refused([assistant(tool_use({"loop": loop}))])
    assert err.path.startswith("messages[0].content[0]")


# --- section 3: first violation wins ---------------------------------------------------------


def test_first_offending_message_wins() -> None:
    data = [user(text()), user(text(1)), {"role": "user", "content": "x"}]
    err = refused(data)
    assert err.path.startswith("messages[1].content[0]")


def test_first_offending_block_wins() -> None:
    data = [user(text(), image(url_source("file:///a.png")), image(b64_source("!!")))]
    refused(data, "messages[0].content[1].source.url")


def test_structural_error_before_uncloneable_data_wins() -> None:
    data = [user(text(), {"type": "text", "text": 5}), assistant(tool_use({"x": {1, 2}}))]
    err = refused(data)
    assert err.path.startswith("messages[0].content[1]")
    assert "cloneable" not in str(err)


def test_uncloneable_data_before_structural_error_wins() -> None:
    data = [assistant(tool_use({"x": {1, 2}})), user(text(), {"type": "text", "text": 5})]
    refused(data, phrase="messages must contain cloneable structured data")


def test_role_error_in_first_message_wins_over_later_ones() -> None:
    data = [{"role": "system", "content": [text()]}, {"role": "user", "content": None}]
    err = refused(data)
    assert err.path.startswith("messages[0]")


# --- section 3: limits -------------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def test_moderate_nesting_is_accepted() -> None:
    load_messages([assistant(tool_use({"deep": nested(50)}))])


@pytest.mark.parametrize("depth", [150, 5000, 100_000])
def test_deep_nesting_is_refused_without_recursion_error(depth: int) -> None:
    err = refused([assistant(tool_use({"deep": nested(depth)}))])
    assert err.path.startswith("messages[0].content[0]")


def test_deep_list_nesting_is_refused() -> None:
    value: Any = []
    for _ in range(10_000):
        value = [value]
    refused([assistant(tool_use({"deep": value}))])


def test_block_limit_is_one_hundred_thousand() -> None:
    blocks = [text("x")] * 100_000
    assert len(load_messages([user(*blocks)])[0].content) == 100_000


def test_more_than_one_hundred_thousand_blocks_are_refused() -> None:
    data = [user(*([text("x")] * 50_000)), assistant(*([text("y")] * 50_001))]
    err = refused(data)
    assert "100000" in str(err).replace(",", "").replace("_", "")


def test_block_limit_refuses_at_once_before_later_errors() -> None:
    data = [user(*([text("x")] * 100_001)), {"role": "user", "content": "bad"}]
    err = refused(data)
    assert not err.path.startswith("messages[1]")


def test_limits_are_settable() -> None:
    from oma_core import ValidationLimits  # type: ignore[attr-defined]

    small = ValidationLimits(max_depth=10, max_blocks=2)
    with pytest.raises(InvalidMessageError):
        load_messages([user(text(), text(), text())], limits=small)
    with pytest.raises(InvalidMessageError):
        load_messages([assistant(tool_use({"deep": nested(20)}))], limits=small)
    load_messages([user(text(), text())], limits=small)
    big = ValidationLimits(max_depth=1000, max_blocks=10)
    load_messages([assistant(tool_use({"deep": nested(500)}))], limits=big)


# --- section 3: copies -------------------------------------------------------------------------


def test_mutating_caller_data_after_load_changes_nothing() -> None:
    data = full_conversation()
    messages = load_messages(data)
    before = dump_messages(messages)
    data[0]["content"][0]["text"] = "changed"
    data[0]["content"].append(text("more"))
    data[0]["content"][1]["source"]["url"] = "https://evil.example/x.png"
    data[1]["content"][3]["input"]["nested"]["list"].append("more")
    data[1]["content"][3]["input"]["factor"] = 99
    data[2]["content"][0]["content"][0]["text"] = "changed"
    data[2]["content"][0]["content"].clear()
    data.append(user(text("extra")))
    assert dump_messages(messages) == before


def test_mutating_a_dump_changes_nothing() -> None:
    messages = load_messages(full_conversation())
    dumped = dump_messages(messages)
    dumped[1]["content"][3]["input"]["nested"]["list"].append("x")
    dumped[0]["content"].clear()
    assert dump_messages(messages) == full_conversation()


def test_tool_input_of_a_loaded_message_cannot_be_changed_through_the_caller() -> None:
    inner = {"a": [1]}
    (message,) = load_messages([assistant(tool_use({"inner": inner}))])
    inner["a"].append(2)
    inner["b"] = 1
    assert dump_messages([message])[0]["content"][0]["input"] == {"inner": {"a": [1]}}


def test_media_strings_are_shared_not_copied() -> None:
    data = "QUJD" * 250_000
    url = "https://example.com/" + "a" * 1000 + ".mp4"
    messages = load_messages(
        [user(video(b64_source(data, "video/mp4")), video(url_source(url, "video/mp4")))]
    )
    assert messages[0].content[0].source.data is data
    assert messages[0].content[1].source.url is url


def test_objects_keep_their_media_strings() -> None:
    data = "QUJD" * 1000
    block = image_base64(data, "image/png")
    assert block.source.data is data


# --- section 3: objects valid by construction ------------------------------------------------


def test_hand_built_objects_equal_loaded_ones() -> None:
    built = LLMMessage(
        role="user",
        content=(
            TextBlock(text="hi"),
            ImageBlock(source=UrlSource(media_type="image/png", url=IMG_URL), detail="high"),
            VideoBlock(source=Base64Source(media_type="video/mp4", data="AAAA")),
            ToolResultBlock(tool_use_id="t1", content="ok"),
        ),
    )
    loaded = load_messages(
        [
            user(
                text("hi"),
                image(url_source(), detail="high"),
                video(b64_source("AAAA", "video/mp4")),
                tool_result("ok"),
            )
        ]
    )
    assert loaded == (built,)
    assistant_built = LLMMessage(
        role="assistant",
        content=(
            ReasoningBlock(text="r", signature="s"),
            ToolUseBlock(id="t1", name="zoom", input={"q": "x"}),
        ),
    )
    assert dump_messages([assistant_built]) == [
        assistant({"type": "reasoning", "text": "r", "signature": "s"}, tool_use())
    ]


@pytest.mark.parametrize(
    "build",
    [
        lambda: TextBlock(text=123),
        lambda: TextBlock(text=None),
        lambda: TextBlock(text="\ud800"),
        lambda: UrlSource(media_type="image/png", url="file:///etc/passwd"),
        lambda: UrlSource(media_type="image/png", url="mm_file://abc"),
        lambda: UrlSource(media_type="Image/PNG", url=IMG_URL),
        lambda: UrlSource(media_type="image/png; q=1", url=IMG_URL),
        lambda: Base64Source(media_type="image/png", data="data:image/png;base64,AAAA"),
        lambda: Base64Source(media_type="image/png", data="AB=="),
        lambda: Base64Source(media_type="image/png", data=""),
        lambda: ImageBlock(source=UrlSource(media_type="image/png", url=IMG_URL), detail="medium"),
        lambda: ImageBlock(source=UrlSource(media_type="video/mp4", url=VID_URL)),
        lambda: ImageBlock(source="https://example.com/a.png"),
        lambda: VideoBlock(source=UrlSource(media_type="image/png", url=IMG_URL)),
        lambda: ToolUseBlock(id=1, name="x", input={}),
        lambda: ToolUseBlock(id="1", name="x", input=[1]),
        lambda: ToolUseBlock(id="1", name="x", input={"s": {1}}),
        lambda: ToolUseBlock(id="1", name="x", input={"f": math.nan}),
        lambda: ToolResultBlock(tool_use_id="t", content=()),
        lambda: ToolResultBlock(tool_use_id="t", content=(TextBlock(text="x"),), is_error=True),
        lambda: ToolResultBlock(tool_use_id=None, content="x"),
        lambda: ReasoningBlock(text=5),
        lambda: ReasoningBlock(text="x", signature=5),
        lambda: LLMMessage(role="system", content=(TextBlock(text="x"),)),
        lambda: LLMMessage(role="user", content=()),
        lambda: LLMMessage(role="user", content="hello"),
        lambda: LLMMessage(role="user", content=(ToolUseBlock(id="1", name="x", input={}),)),
        lambda: LLMMessage(role="user", content=(ReasoningBlock(text="x"),)),
        lambda: LLMMessage(
            role="assistant", content=(ToolResultBlock(tool_use_id="t", content="x"),)
        ),
        lambda: LLMMessage(role="user", content=({"type": "text", "text": 1},)),
    ],
)
def test_invalid_objects_cannot_be_constructed(build: Any) -> None:
    with pytest.raises(InvalidMessageError):
        build()


def test_constructed_error_never_echoes_base64() -> None:
    with pytest.raises(InvalidMessageError) as info:
        Base64Source(media_type="image/png", data="SECRETPAYLOAD" * 10 + "!")
    assert "SECRETPAYLOAD" not in str(info.value)


def test_hand_built_objects_are_frozen() -> None:
    block = TextBlock(text="x")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        block.text = "y"  # type: ignore[misc]
    source = UrlSource(media_type="image/png", url=IMG_URL)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        source.url = "file:///x"  # type: ignore[misc]


def test_evolving_into_an_invalid_object_is_refused() -> None:
    source = UrlSource(media_type="image/png", url=IMG_URL)
    with pytest.raises(InvalidMessageError):
        attrs.evolve(source, url="file:///x")


# --- section 2: helpers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "media_type"),
    [
        ("https://example.com/a.png", "image/png"),
        ("https://example.com/a.jpg", "image/jpeg"),
        ("https://example.com/a.jpeg", "image/jpeg"),
        ("https://example.com/a.gif", "image/gif"),
        ("https://example.com/a.webp", "image/webp"),
        ("https://example.com/dir/a.PNG", "image/png"),
        ("https://example.com/a.png?size=large#top", "image/png"),
    ],
)
def test_image_url_looks_up_the_media_type(url: str, media_type: str) -> None:
    block = image_url(url)
    assert isinstance(block, ImageBlock)
    assert block.source == UrlSource(media_type=media_type, url=url)
    assert block.detail is None


@pytest.mark.parametrize(
    ("url", "media_type"),
    [
        ("https://example.com/clip.mp4", "video/mp4"),
        ("https://example.com/clip.webm", "video/webm"),
        ("https://example.com/clip.mov", "video/quicktime"),
    ],
)
def test_video_url_looks_up_the_media_type(url: str, media_type: str) -> None:
    block = video_url(url)
    assert isinstance(block, VideoBlock)
    assert block.source == UrlSource(media_type=media_type, url=url)


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/photo",
        "https://example.com/photo.xyzzy",
        "https://example.com/",
        "https://example.com/a.png/",
    ],
)
def test_unknown_extension_without_media_type_is_refused(url: str) -> None:
    with pytest.raises(InvalidMessageError):
        image_url(url)
    with pytest.raises(InvalidMessageError):
        video_url(url)


def test_host_suffix_is_not_an_extension() -> None:
    with pytest.raises(InvalidMessageError):
        image_url("https://example.png")


def test_helper_media_type_table_is_fixed_not_mimetypes(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("mimetypes consulted")

    monkeypatch.setattr(mimetypes, "guess_type", boom)
    monkeypatch.setattr(mimetypes, "init", boom)
    assert image_url("https://example.com/a.webp").source.media_type == "image/webp"
    assert video_url("https://example.com/a.mp4").source.media_type == "video/mp4"


def test_explicit_media_type_and_detail_are_kept() -> None:
    block = image_url("https://example.com/render", media_type="image/png", detail="high")
    assert block.source.media_type == "image/png"
    assert block.detail == "high"
    assert video_url(VID_URL, media_type="video/webm").source.media_type == "video/webm"


def test_helpers_check_like_load() -> None:
    with pytest.raises(InvalidMessageError):
        image_url(IMG_URL, detail="medium")
    with pytest.raises(InvalidMessageError):
        image_url("https://example.com/clip.mp4")
    with pytest.raises(InvalidMessageError):
        video_url("https://example.com/a.png")
    with pytest.raises(InvalidMessageError, match="must use HTTP or HTTPS"):
        image_url("file:///tmp/a.png")
    with pytest.raises(InvalidMessageError):
        image_url("data:image/png;base64,AAAA")
    with pytest.raises(InvalidMessageError):
        video_url("mm_file://abc", media_type="video/mp4")
    with pytest.raises(InvalidMessageError):
        image_url(IMG_URL, media_type="image/png; charset=x")


def test_base64_helpers_build_base64_sources() -> None:
    img = image_base64(PNG_B64, "image/png", detail="low")
    assert img == ImageBlock(
        source=Base64Source(media_type="image/png", data=PNG_B64), detail="low"
    )
    vid = video_base64("AAAA", "video/mp4")
    assert vid == VideoBlock(source=Base64Source(media_type="video/mp4", data="AAAA"))
    assert image_base64("AAA", "image/gif").source.data == "AAA="


def test_base64_helpers_refuse_data_urls_and_wrong_kinds() -> None:
    with pytest.raises(InvalidMessageError, match="must contain raw base64 data"):
        image_base64("data:image/png;base64,AAAA", "image/png")
    with pytest.raises(InvalidMessageError, match="must contain raw base64 data"):
        video_base64("data:video/mp4;base64,AAAA", "video/mp4")
    with pytest.raises(InvalidMessageError):
        video_base64("AAAA", "image/png")
    with pytest.raises(InvalidMessageError):
        image_base64("AAAA", "video/mp4")
    with pytest.raises(InvalidMessageError):
        image_base64("AAAA", "image/png", detail="medium")


def test_helper_errors_do_not_echo_base64() -> None:
    with pytest.raises(InvalidMessageError) as info:
        image_base64("SECRETPAYLOAD" * 5 + "%", "image/png")
    assert "SECRETPAYLOAD" not in str(info.value)


def test_image_media_types_lists_the_common_image_formats() -> None:
    for media_type in ("image/jpeg", "image/png", "image/gif", "image/webp"):
        assert media_type in IMAGE_MEDIA_TYPES
    assert all(m.startswith("image/") for m in IMAGE_MEDIA_TYPES)


# --- section 8: estimate_tokens --------------------------------------------------------------


def test_estimate_of_nothing_is_zero() -> None:
    assert estimate_tokens([]) == 0


@pytest.mark.parametrize(("chars", "tokens"), [(0, 0), (1, 1), (4, 1), (5, 2), (8, 2), (9, 3)])
def test_text_costs_ceil_of_a_quarter_of_its_characters(chars: int, tokens: int) -> None:
    assert estimate_tokens([user(text("x" * chars))]) == tokens


def test_characters_not_bytes_are_counted() -> None:
    assert estimate_tokens([user(text("é" * 8))]) == 2


def test_each_image_costs_image_tokens() -> None:
    messages = [user(image(), image(b64_source(PNG_B64)))]
    assert estimate_tokens(messages) == 2000
    assert estimate_tokens(messages, image_tokens=85) == 170
    assert estimate_tokens(messages, image_tokens=0) == 0


def test_video_costs_a_quarter_of_its_payload_or_url() -> None:
    url = "https://example.com/clip.mp4"  # 28 characters
    assert estimate_tokens([user(video(url_source(url, "video/mp4")))]) == 7
    assert estimate_tokens([user(video(b64_source("AAAA" * 10, "video/mp4")))]) == 10
    assert estimate_tokens([user(video(b64_source("AAAAAA==", "video/mp4")))]) == 2


def test_reasoning_text_counts() -> None:
    assert estimate_tokens([assistant({"type": "reasoning", "text": "x" * 12})]) == 3


def test_tool_input_counts_as_json() -> None:
    value = {"q": "x"}  # '{"q": "x"}' is 10 characters; '{"q":"x"}' 9: both 3 tokens
    assert estimate_tokens([assistant(tool_use(value))]) == 3


def test_tool_result_text_counts() -> None:
    assert estimate_tokens([user(tool_result("x" * 8))]) == 2
    assert estimate_tokens([user(tool_result([text("x" * 4), text("y" * 4)]))]) == 2


def test_a_whole_conversation_adds_up() -> None:
    data = [
        user(text("x" * 8), image(), video(url_source("https://e.co/v.mp4", "video/mp4"))),
        assistant({"type": "reasoning", "text": "y" * 4}, tool_use({"q": "x"})),
        user(tool_result("z" * 4)),
    ]
    # text 2 + image 1000 + video ceil(18/4)=5 + reasoning 1 + input 3 + result 1
    assert estimate_tokens(data) == 2 + 1000 + 5 + 1 + 3 + 1
    assert estimate_tokens(load_messages(data)) == estimate_tokens(data)


def test_estimate_refuses_invalid_input() -> None:
    with pytest.raises(InvalidMessageError):
        estimate_tokens([user(text(5))])


# --- section 4: errors -------------------------------------------------------------------------


def test_error_tree() -> None:
    for cls in (
        InvalidMessageError,
        UnsupportedContentBlockError,
        ProviderError,
        BudgetExceededError,
    ):
        assert issubclass(cls, OmaError)
    assert issubclass(OmaError, Exception)
    assert issubclass(InvalidMessageError, ValueError)


def test_invalid_message_error_is_a_value_error_with_code_and_path() -> None:
    with pytest.raises(ValueError) as info:
        load_messages([user(text(1))])
    err = info.value
    assert isinstance(err, InvalidMessageError)
    assert err.code == "INVALID_MESSAGE"
    assert err.retryable is False
    assert err.path.startswith("messages[0].content[0]")


def test_unsupported_content_block_error_message() -> None:
    err = UnsupportedContentBlockError(
        provider="Anthropic Messages", block_type="video", detail="no video mapping"
    )
    assert (
        str(err)
        == 'Anthropic Messages cannot represent the "video" content block: no video mapping'
    )
    assert err.code == "UNSUPPORTED_CONTENT_BLOCK"
    assert err.retryable is False
    assert (err.provider, err.block_type, err.detail) == (
        "Anthropic Messages",
        "video",
        "no video mapping",
    )


def test_unsupported_content_block_error_without_detail() -> None:
    err = UnsupportedContentBlockError(provider="Mistral", block_type="image")
    assert str(err) == 'Mistral cannot represent the "image" content block'
    assert err.detail is None


def test_unsupported_content_block_error_positional() -> None:
    err = UnsupportedContentBlockError("Google Gemini", "video")
    assert str(err) == 'Google Gemini cannot represent the "video" content block'


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529, 599])
def test_provider_error_statuses_that_are_retryable(status: int) -> None:
    err = ProviderError("boom", status_code=status, provider="openai")
    assert err.retryable is True
    assert err.status_code == status
    assert err.provider == "openai"
    assert err.code == "PROVIDER_ERROR"
    assert "boom" in str(err)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422, 499, 600, 200])
def test_provider_error_statuses_that_are_not_retryable(status: int) -> None:
    assert ProviderError("boom", status_code=status).retryable is False


def test_provider_error_defaults() -> None:
    err = ProviderError("boom")
    assert err.status_code is None
    assert err.provider is None
    assert err.retryable is False
    assert str(err) == "boom"


def test_explicit_retryable_wins_over_the_status() -> None:
    assert ProviderError("reset", retryable=True).retryable is True
    assert ProviderError("x", status_code=503, retryable=False).retryable is False
    assert ProviderError("x", status_code=400, retryable=True).retryable is True


def test_provider_error_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        ProviderError("boom", 500)  # type: ignore[misc]


def test_budget_exceeded_error() -> None:
    err = BudgetExceededError("token budget exhausted")
    assert err.code == "BUDGET_EXCEEDED"
    assert err.retryable is False
    assert isinstance(err, OmaError)
    assert str(err) == "token budget exhausted"


def test_budget_exceeded_error_with_figures_survives_pickling() -> None:
    import pickle

    err = pickle.loads(pickle.dumps(BudgetExceededError("tokens", 100, 120)))
    assert (err.kind, err.limit, err.used) == ("tokens", 100, 120)
    assert "120" in str(err) and "100" in str(err)


def test_errors_survive_pickling() -> None:
    import pickle

    with pytest.raises(InvalidMessageError) as info:
        load_messages([user(text(1))])
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.path, str(copy)) == (info.value.path, str(info.value))
    unsupported = pickle.loads(pickle.dumps(UnsupportedContentBlockError("Mistral", "video", "x")))
    assert str(unsupported) == 'Mistral cannot represent the "video" content block: x'
    provider = pickle.loads(pickle.dumps(ProviderError("boom", status_code=429, provider="p")))
    assert (provider.status_code, provider.provider, provider.retryable) == (429, "p", True)


# --- more edge cases ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "urn:isbn:0451450523",
        "mm-file://abc",
        "mm+file://abc",
        "ws://x.org/a",
    ],
)
def test_valid_rfc_3986_schemes_other_than_http_must_use_http_or_https(url: str) -> None:
    refused(
        [user(image(url_source(url)))],
        "messages[0].content[0].source.url",
        "must use HTTP or HTTPS",
    )


@pytest.mark.parametrize(
    "url",
    [
        "1http://example.com/a.png",
        "https:/example.com/a.png",
        "https://example.com/a\u2028.png",
        "https://example.com/a\u00a0.png",
        "https://example.com/a\x85.png",
        "https://example.com/a\x1f.png",
        "https://:pw@example.com/a.png",
    ],
)
def test_more_urls_that_are_not_absolute_http_urls(url: str) -> None:
    refused(
        [user(image(url_source(url)))],
        "messages[0].content[0].source.url",
        "must be an absolute HTTP(S) URL",
    )


@pytest.mark.parametrize("data", ["AB", "AAB", "AAAA=", "AAAA=A"])
def test_more_non_canonical_base64(data: str) -> None:
    refused([user(image(b64_source(data)))], phrase="must contain raw base64 data")


@pytest.mark.parametrize("media_type", ["image/png ", "image/png\n", "image/ png", "image//png"])
def test_media_types_with_stray_characters_are_refused(media_type: str) -> None:
    refused(
        [user(image(url_source(media_type=media_type)))],
        "messages[0].content[0].source.media_type",
        "MIME type without parameters",
    )


@pytest.mark.parametrize(
    "media_type", ["image/svg+xml", "image/vnd.microsoft.icon", "image/x-icon"]
)
def test_structured_and_vendor_image_types_are_accepted(media_type: str) -> None:
    (message,) = load_messages([user(image(url_source(media_type=media_type)))])
    assert message.content[0].source.media_type == media_type


def test_tool_result_string_with_lone_surrogate_is_refused() -> None:
    err = refused([user(tool_result("bad \ud800"))])
    assert err.path.startswith("messages[0].content[0]")


def test_optional_string_keys_given_as_none_mean_absent() -> None:
    # The contract is silent on null optional keys: oma accepts None where None is the
    # field's default (detail, signature, redacted_data) but not for is_error (a bool).
    data = [
        user(image(detail=None)),
        assistant({"type": "reasoning", "text": "r", "signature": None, "redacted_data": None}),
    ]
    messages = load_messages(data)
    assert messages[0].content[0].detail is None
    assert dump_messages(messages) == [user(image()), assistant({"type": "reasoning", "text": "r"})]
    refused([user(tool_result("x", is_error=None))], "messages[0].content[0].is_error", "got None")


def test_loaded_tool_input_is_read_only() -> None:
    (message,) = load_messages([assistant(tool_use({"a": {"b": [1]}}))])
    block = message.content[0]
    with pytest.raises(TypeError):
        block.input["x"] = 1  # type: ignore[index]
    with pytest.raises((TypeError, AttributeError)):
        block.input["a"]["b"].append(2)
    assert block.input["a"]["b"][0] == 1


def test_first_violation_inside_tool_input_names_the_key() -> None:
    err = refused([assistant(tool_use({"ok": 1, "bad": {1, 2}}))])
    assert err.path.startswith("messages[0].content[0].input")
    assert "bad" in err.path


def test_large_base64_video_loads_quickly() -> None:
    import time

    data = "QUJD" * 2_000_000  # 8 MB
    start = time.perf_counter()
    messages = load_messages([user(video(b64_source(data, "video/mp4")))])
    assert time.perf_counter() - start < 2.0
    start = time.perf_counter()
    for _ in range(20):
        load_messages([messages[0], user(text("x"))])
    assert time.perf_counter() - start < 0.5  # objects are not scanned again


def test_message_object_subclasses_of_dict_are_plain_mappings() -> None:
    from collections import OrderedDict

    message = OrderedDict([("role", "user"), ("content", [OrderedDict(type="text", text="x")])])
    assert load_messages([message])[0].content[0].text == "x"


def test_unsupported_content_block_error_empty_detail_has_no_colon() -> None:
    err = UnsupportedContentBlockError("LiteLLM bridge", "video", None)
    assert str(err).endswith("content block")


def test_loaded_tool_input_equals_the_plain_data_it_came_from() -> None:
    value = {"tags": ["a", "b"], "opts": {"k": [1, {"x": None}]}, "n": 1.5}
    (message,) = load_messages([assistant(tool_use(value))])
    block = message.content[0]
    assert block.input == value
    assert json.loads(json.dumps(block.input)) == value
    assert block.plain_input() == value
    assert ToolUseBlock(id="t1", name="zoom", input=value) == block


def test_tool_input_mutators_all_refuse() -> None:
    import copy
    import pickle

    block = ToolUseBlock(id="t", name="f", input={"l": [1, 2], "d": {"k": 1}})
    lst, dct = block.input["l"], block.input["d"]
    for attempt in (
        lambda: lst.append(3),
        lambda: lst.extend([3]),
        lambda: lst.insert(0, 3),
        lambda: lst.pop(),
        lambda: lst.remove(1),
        lambda: lst.clear(),
        lambda: lst.sort(),
        lambda: lst.reverse(),
        lambda: lst.__setitem__(0, 9),
        lambda: lst.__delitem__(0),
        lambda: dct.update(k=2),
        lambda: dct.pop("k"),
        lambda: dct.popitem(),
        lambda: dct.setdefault("z", 1),
        lambda: dct.clear(),
        lambda: dct.__setitem__("k", 2),
        lambda: dct.__delitem__("k"),
        lambda: dct.__ior__({"k": 2}),
        lambda: dct.__init__({"k": 3}),
    ):
        with pytest.raises((TypeError, AttributeError)):
            attempt()
    local = block.input["l"]
    local += [3]
    assert block.input == {"l": [1, 2], "d": {"k": 1}}
    assert copy.deepcopy(block) == block
    assert pickle.loads(pickle.dumps(block)) == block
    assert block.input["l"] == (1, 2)
