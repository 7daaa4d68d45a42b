"""Which blocks a message may hold, in which role, with which keys; text, tool_use and tool_result
rules.
"""

from __future__ import annotations

from typing import Any

import pytest
from _builders import (
    PNG_B64,
    URL_SOURCE,
    VID_URL,
    VIDEO_SOURCE,
    assistant,
    image,
    refused,
    refused_saying,
    text,
    tool_call,
    tool_result,
    tool_use,
    url_source,
    user,
    video,
)

from oma_core import (
    ImageBlock,
    TextBlock,
    ToolUseBlock,
    dump_messages,
    load_messages,
)


@pytest.mark.parametrize(
    ("block", "path", "phrase"),
    [
        (5, "messages[0].content[0]", "must be a content block (a dict or block object), got int"),
        ({"text": "hi"}, "messages[0].content[0].type", "must be one of"),
        ({"type": "hologram"}, "messages[0].content[0].type", "must be one of"),
        ({"type": 3}, "messages[0].content[0].type", "must be one of"),
        (
            {"type": "file", "filename": "a", "source": URL_SOURCE},
            "messages[0].content[0].type",
            "",
        ),
        ({"type": "text"}, "messages[0].content[0].text", "is missing"),
        ({"type": "text", "text": 5}, "messages[0].content[0].text", "must be a string, got int"),
        ({"type": "text", "text": None}, "messages[0].content[0].text", "got None"),
        (
            {"type": "text", "text": "a", "cache_control": {}},
            "messages[0].content[0].cache_control",
            'is not allowed in a "text" block',
        ),
        ({"type": "image"}, "messages[0].content[0].source", "is missing"),
        (
            {"type": "image", "source": "https://example.com/a.png"},
            "messages[0].content[0].source",
            "must be a media source",
        ),
        (
            {"type": "image", "source": URL_SOURCE, "detail": "ultra"},
            "messages[0].content[0].detail",
            'must be "low", "high" or "auto"',
        ),
        (
            {"type": "image", "source": {**URL_SOURCE, "type": "file"}},
            "messages[0].content[0].source.type",
            'must be "base64" or "url"',
        ),
        (
            {"type": "image", "source": {"media_type": "image/png", "url": "https://a.b/c"}},
            "messages[0].content[0].source.type",
            '"base64" or "url"',
        ),
        (
            {"type": "image", "source": {**URL_SOURCE, "data": "QUJD"}},
            "messages[0].content[0].source.data",
            'is not allowed in a "url" source',
        ),
        (
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "QUJD", "url": "x"},
            },
            "messages[0].content[0].source.url",
            'is not allowed in a "base64" source',
        ),
        (
            {"type": "image", "source": {"type": "url", "url": "https://a.b/c.png"}},
            "messages[0].content[0].source.media_type",
            "is missing",
        ),
        (
            {"type": "image", "source": VIDEO_SOURCE},
            "messages[0].content[0].source.media_type",
            "must be an image MIME type",
        ),
        (
            {"type": "video", "source": URL_SOURCE},
            "messages[0].content[0].source.media_type",
            "must be a video MIME type",
        ),
        (
            {"type": "video", "source": VIDEO_SOURCE, "detail": "low"},
            "messages[0].content[0].detail",
            'is not allowed in a "video" block',
        ),
        (
            {"type": "tool_result", "content": "x"},
            "messages[0].content[0].tool_use_id",
            "is missing",
        ),
        (
            {"type": "tool_result", "tool_use_id": 1, "content": "x"},
            "messages[0].content[0].tool_use_id",
            "must be a string, got int",
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": 5},
            "messages[0].content[0].content",
            "got int",
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": []},
            "messages[0].content[0].content",
            "non-empty list",
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "video"}]},
            "messages[0].content[0].content[0].type",
            'must be "text", "image" or "file"',
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": ["x"]},
            "messages[0].content[0].content[0]",
            "must be a tool result part",
        ),
        (
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [{"type": "image", "source": URL_SOURCE, "detail": "low"}],
            },
            "messages[0].content[0].content[0].detail",
            "is not allowed",
        ),
        (
            {
                "type": "tool_result",
                "tool_use_id": "t",
                "content": [{"type": "file", "source": URL_SOURCE}],
            },
            "messages[0].content[0].content[0].filename",
            "is missing",
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": "x", "is_error": "yes"},
            "messages[0].content[0].is_error",
            "must be true or false (a bool), got str",
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": [text()], "is_error": True},
            "messages[0].content[0].content",
            "must be a string for an error tool result",
        ),
    ],
)
def test_a_malformed_user_block_is_refused(block: Any, path: str, phrase: str) -> None:
    refused_saying([user(block)], phrase, path)


@pytest.mark.parametrize(
    ("block", "path", "phrase"),
    [
        ({"type": "tool_use", "name": "f", "input": {}}, "messages[0].content[0].id", "is missing"),
        (
            {"type": "tool_use", "id": 1, "name": "f", "input": {}},
            "messages[0].content[0].id",
            "must be a string, got int",
        ),
        (
            {"type": "tool_use", "id": "t", "name": None, "input": {}},
            "messages[0].content[0].name",
            "got None",
        ),
        ({"type": "tool_use", "id": "t", "name": "f"}, "messages[0].content[0].input", "missing"),
        (
            tool_call([1, 2]),
            "messages[0].content[0].input",
            "must be a JSON object (a dict), got list",
        ),
        (tool_call("{}"), "messages[0].content[0].input", "got str"),
        (
            {"type": "reasoning", "text": "r", "signature": 5},
            "messages[0].content[0].signature",
            "must be a string, got int",
        ),
        (
            {"type": "reasoning", "text": "r", "redacted_data": b"x"},
            "messages[0].content[0].redacted_data",
            "got bytes",
        ),
        (
            {"type": "reasoning", "text": "r", "signature": "s", "provider": 1},
            "messages[0].content[0].provider",
            "must be a string, got int",
        ),
    ],
)
def test_a_malformed_assistant_block_is_refused(block: Any, path: str, phrase: str) -> None:
    refused_saying([assistant(block)], phrase, path)


def test_every_valid_block_is_accepted_in_its_role(conversation: list[dict[str, Any]]) -> None:
    loaded = load_messages(conversation)
    assert [m.role for m in loaded] == ["user", "assistant", "user", "user"]
    assert [b.type for m in loaded for b in m.content] == [
        "text",
        "image",
        "image",
        "reasoning",
        "tool_use",
        "tool_result",
        "video",
    ]


def test_empty_text_is_allowed() -> None:
    assert load_messages([user(text(""))])[0].content[0] == TextBlock("")

    (message,) = load_messages([user(text(""))])
    assert message.content[0].text == ""


def test_optional_keys_may_be_none() -> None:
    loaded = load_messages(
        [
            user({"type": "image", "source": URL_SOURCE, "detail": None}),
            assistant({"type": "reasoning", "text": "", "signature": None, "redacted_data": None}),
        ]
    )
    assert loaded[0].content[0].detail is None


def test_an_error_tool_result_with_string_content_is_accepted() -> None:
    block = {"type": "tool_result", "tool_use_id": "t", "content": "boom", "is_error": True}
    assert load_messages([user(block)])[0].content[0].is_error is True


def test_a_tool_result_may_hold_text_image_and_file_parts(png_base64: str) -> None:
    pdf = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}
    block = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [
            text("here"),
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": png_base64},
            },
            {"type": "file", "filename": "a.pdf", "source": pdf},
        ],
    }
    parts = load_messages([user(block)])[0].content[0].content
    assert [p.type for p in parts] == ["text", "image", "file"]


@pytest.mark.parametrize(
    ("message", "phrase", "path"),
    [
        (
            user(tool_call({})),
            'is a "tool_use" block, which only assistant messages may contain',
            "messages[0].content[0]",
        ),
        (user(text(), tool_use()), "only assistant messages", "messages[0].content[1]"),
        (user({"type": "reasoning", "text": "r"}), "only assistant messages", None),
        (user({"type": "reasoning", "text": "thinking"}), "only assistant messages", None),
        (
            assistant({"type": "tool_result", "tool_use_id": "t", "content": "x"}),
            'is a "tool_result" block, which only user messages may contain',
            None,
        ),
        (assistant(tool_result()), "only user messages", None),
    ],
)
def test_blocks_in_the_wrong_role_are_refused(message: Any, phrase: str, path: str | None) -> None:
    refused([message], path or "messages[0].content[0]", phrase)


def test_role_rules_apply_to_block_objects_in_dict_messages() -> None:
    block = ToolUseBlock("t", "f", {})
    refused_saying([user(text(), block)], "only assistant messages", "messages[0].content[1]")


@pytest.mark.parametrize(
    ("message", "path"),
    [
        (user(text("a\ud800b")), "messages[0].content[0].text"),
        (assistant({"type": "reasoning", "text": "\udfff"}), "messages[0].content[0].text"),
        (assistant(tool_call({"k": "\ud800"})), "messages[0].content[0].input.k"),
        (assistant(tool_call({"\ud800": 1})), None),
        (user({"type": "tool_result", "tool_use_id": "\udc00", "content": "x"}), None),
        (user({"type": "tool_result", "tool_use_id": "t", "content": "\udc00"}), None),
        (user({"type": "tool_result", "tool_use_id": "t", "content": "bad \ud800"}), None),
        (user(text("\ud800")), "messages[0].content[0].text"),
        (user(text("ok \udfff")), "messages[0].content[0].text"),
        (assistant({"type": "reasoning", "text": "\ud800"}), "messages[0].content[0].text"),
    ],
)
def test_lone_surrogates_are_refused(message: Any, path: str | None) -> None:
    refused_saying([message], "lone surrogates", path)


def test_paired_surrogates_written_as_characters_are_fine() -> None:
    assert load_messages([user(text("cat \U0001f408"))])[0].content[0].text == "cat \U0001f408"

    (message,) = load_messages([user(text("héllo 😀 中文"))])
    assert message.content[0].text == "héllo 😀 中文"


@pytest.mark.parametrize("detail", ["low", "high", "auto"])
def test_every_documented_detail_is_accepted(detail: str) -> None:
    (message,) = load_messages([user(image(detail=detail))])
    assert message.content[0].detail == detail


def test_images_may_appear_in_assistant_turns() -> None:
    (message,) = load_messages([assistant(image(), text("here"))])
    assert isinstance(message.content[0], ImageBlock)


@pytest.mark.parametrize("block", [42, "text", None, ["type", "text"]])
def test_a_block_that_is_not_a_mapping_is_refused(block: Any) -> None:
    refused([user(text(), block)], "messages[0].content[1]")


@pytest.mark.parametrize("kind", [None, 1, "sound", "Text", "image_url", "pdf", "file"])
def test_block_types_must_name_a_known_block(kind: Any) -> None:
    block = {"text": "x"} if kind is None else {"type": kind, "text": "x"}
    err = refused([user(block)])
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


def test_text_block_without_text_is_refused() -> None:
    err = refused([user({"type": "text"})])
    assert err.path.startswith("messages[0].content[0]")


@pytest.mark.parametrize(
    ("value", "name"),
    [(123, "int"), (None, "None"), (b"hi", "bytes"), (["a"], "list"), (True, "bool")],
)
def test_non_string_text_is_refused_naming_the_type(value: Any, name: str) -> None:
    err = refused([user(text(value))])
    assert err.path.startswith("messages[0].content[0]")
    assert f"got {name}" in str(err)


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
