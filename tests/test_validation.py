"""load_messages: the structural rules and their paths, limits, copying, what is not re-checked."""

from __future__ import annotations

import contextlib
import datetime
import enum
import time
from typing import Any

import pytest

import oma_core._parse as messages_module
from oma_core import (
    Base64Source,
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    TextBlock,
    ToolUseBlock,
    ValidationLimits,
    load_messages,
)
from oma_core.validation import load_user_content

URL_SOURCE = {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"}
VIDEO_SOURCE = {"type": "url", "media_type": "video/mp4", "url": "https://example.com/a.mp4"}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: Any = "hi") -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "t1", "name": "f", "input": input}


def refused(data: Any, message: str, path: str | None = None) -> InvalidMessageError:
    with pytest.raises(InvalidMessageError) as info:
        load_messages(data)
    assert message in str(info.value)
    if path is not None:
        assert info.value.path == path
        assert str(info.value).startswith(path + " ")
    return info.value


# --- the top level ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (None, "messages must be a list, got None"),
        (0, "messages must be a list, got int"),
        ("text", "messages must be a list, got str"),
        ({}, "messages must be a list, got dict"),
        ({"role": "user", "content": []}, "messages must be a list, got dict"),
    ],
)
def test_input_that_is_not_a_list_is_refused(data: Any, message: str) -> None:
    refused(data, message, "messages")


def test_an_empty_list_is_refused_unless_allowed() -> None:
    refused([], "messages must contain at least one message", "messages")
    assert load_messages([], allow_empty=True) == ()


def test_a_tuple_is_accepted_like_a_list() -> None:
    assert load_messages((user(text()),)) == (LLMMessage("user", [TextBlock("hi")]),)


def test_the_error_path_starts_from_the_given_name() -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_messages([None], path="history")
    assert info.value.path == "history[0]"


def test_the_first_violation_in_document_order_wins() -> None:
    refused(
        [user(text()), user(text(1)), user(text(None))], "got int", "messages[1].content[0].text"
    )


def test_invalid_message_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        load_messages("nope")


# --- messages -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "path", "phrase"),
    [
        (None, "messages[1]", "must be a message (a dict or LLMMessage), got None"),
        ("hi", "messages[1]", "got str"),
        ({"content": [text()]}, "messages[1].role", "is missing"),
        ({"role": "user"}, "messages[1].content", "is missing"),
        ({"role": "system", "content": [text()]}, "messages[1].role", 'must be "user" or'),
        ({"role": None, "content": [text()]}, "messages[1].role", "got None"),
        ({"role": "user", "content": "hi"}, "messages[1].content", "must be a list of content"),
        ({"role": "user", "content": []}, "messages[1].content", "at least one content block"),
        ({"role": "user", "content": None}, "messages[1].content", "got None"),
        ({"role": "user", "content": [text()], "name": "x"}, "messages[1].name", "not allowed"),
    ],
)
def test_a_malformed_message_is_refused(message: Any, path: str, phrase: str) -> None:
    refused([user(text()), message], phrase, path)


def test_string_content_is_refused_with_the_contract_wording() -> None:
    refused(
        [user(text()), {"role": "assistant", "content": "hello"}],
        "messages[1].content must be a list of content blocks, got str",
    )


# --- blocks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "path", "phrase"),
    [
        (5, "messages[0].content[0]", "must be a content block (a dict or block object), got int"),
        ({"text": "hi"}, "messages[0].content[0].type", "must be one of"),
        ({"type": "audio"}, "messages[0].content[0].type", "must be one of"),
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
    refused([user(block)], phrase, path)


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
            tool_use([1, 2]),
            "messages[0].content[0].input",
            "must be a JSON object (a dict), got list",
        ),
        (tool_use("{}"), "messages[0].content[0].input", "got str"),
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
    ],
)
def test_a_malformed_assistant_block_is_refused(block: Any, path: str, phrase: str) -> None:
    refused([assistant(block)], phrase, path)


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


# --- roles --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "phrase"),
    [
        (user(tool_use({})), 'is a "tool_use" block, which only assistant messages may contain'),
        (user({"type": "reasoning", "text": "r"}), "only assistant messages"),
        (
            assistant({"type": "tool_result", "tool_use_id": "t", "content": "x"}),
            'is a "tool_result" block, which only user messages may contain',
        ),
    ],
)
def test_blocks_in_the_wrong_role_are_refused(message: Any, phrase: str) -> None:
    refused([message], phrase, "messages[0].content[0]")


def test_role_rules_apply_to_block_objects_in_dict_messages() -> None:
    block = ToolUseBlock("t", "f", {})
    refused([user(text(), block)], "only assistant messages", "messages[0].content[1]")


# --- plain data in tool inputs ------------------------------------------------------------


class Colour(enum.IntEnum):
    RED = 1


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (lambda: 1, "function"),
        ({1, 2}, "set"),
        (b"bytes", "bytes"),
        (datetime.datetime(2024, 1, 1), "datetime"),
        (object(), "object"),
        (Colour.RED, "Colour"),
        (float("nan"), "non-finite float"),
        (float("inf"), "non-finite float"),
        (float("-inf"), "non-finite float"),
    ],
)
def test_non_plain_data_in_a_tool_input_is_refused(value: Any, shown: str) -> None:
    error = refused(
        [assistant(tool_use({"a": [1, {"b": value}]}))],
        "messages must contain cloneable structured data",
        "messages[0].content[0].input.a[1].b",
    )
    assert shown in str(error)


def test_a_non_string_key_in_a_tool_input_is_refused() -> None:
    refused(
        [assistant(tool_use({"a": {1: "x"}}))],
        "messages must contain cloneable structured data",
        "messages[0].content[0].input.a",
    )


def test_odd_keys_are_quoted_in_paths() -> None:
    refused(
        [assistant(tool_use({"a b": [{"c": {1, 2}}]}))],
        "cloneable",
        "messages[0].content[0].input['a b'][0].c",
    )


def test_plain_json_values_are_accepted_in_a_tool_input() -> None:
    value = {"s": "x", "i": 1, "f": 1.5, "b": True, "n": None, "l": [1, [2]], "t": (3,), "d": {}}
    block = load_messages([assistant(tool_use(value))])[0].content[0]
    assert block.plain_input() == {**value, "t": [3]}


def test_a_dict_subclass_is_copied_from_what_it_really_holds() -> None:
    class Lying(dict[str, Any]):
        def items(self) -> Any:
            return [("fake", 1)]

    block = load_messages([assistant(tool_use(Lying(real=[1])))])[0].content[0]
    assert block.plain_input() == {"real": [1]}
    assert type(block.plain_input()) is dict


# --- text ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "path"),
    [
        (user(text("a\ud800b")), "messages[0].content[0].text"),
        (assistant({"type": "reasoning", "text": "\udfff"}), "messages[0].content[0].text"),
        (assistant(tool_use({"k": "\ud800"})), "messages[0].content[0].input.k"),
        (assistant(tool_use({"\ud800": 1})), None),
        (user({"type": "tool_result", "tool_use_id": "\udc00", "content": "x"}), None),
        (user({"type": "tool_result", "tool_use_id": "t", "content": "\udc00"}), None),
    ],
)
def test_lone_surrogates_are_refused(message: Any, path: str | None) -> None:
    refused([message], "lone surrogates", path)


def test_paired_surrogates_written_as_characters_are_fine() -> None:
    assert load_messages([user(text("cat \U0001f408"))])[0].content[0].text == "cat \U0001f408"


# --- limits -------------------------------------------------------------------------------


def _nested(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth - 1):
        node["a"] = {}
        node = node["a"]
    return root


def test_a_tool_input_at_the_depth_limit_is_accepted() -> None:
    assert load_messages([assistant(tool_use(_nested(100)))])


def test_a_tool_input_past_the_depth_limit_is_refused() -> None:
    refused(
        [assistant(tool_use(_nested(101)))],
        "is nested more than 100 levels deep",
        "messages[0].content[0].input",
    )


def test_a_ten_thousand_deep_tool_input_is_refused_quickly() -> None:
    deep_list: list[Any] = []
    node = deep_list
    for _ in range(10_000):
        node.append([])
        node = node[0]
    started = time.perf_counter()
    refused([assistant(tool_use(_nested(10_000)))], "levels deep")
    refused([assistant(tool_use({"x": deep_list}))], "levels deep")
    assert time.perf_counter() - started < 0.5


def test_a_self_referencing_tool_input_is_refused_as_too_deep() -> None:
    loop: dict[str, Any] = {}
    loop["me"] = loop
    refused([assistant(tool_use(loop))], "levels deep")


def test_a_message_with_a_million_blocks_is_refused_quickly() -> None:
    blocks = [text()] * 1_000_000
    started = time.perf_counter()
    refused([user(*blocks)], "exceeds the limit of 100000 content blocks", "messages[0].content")
    assert time.perf_counter() - started < 0.5


def test_a_million_messages_are_refused_at_once() -> None:
    many = [user(text())] * 1_000_000
    started = time.perf_counter()
    refused(many, "exceeds the limit", "messages")
    assert time.perf_counter() - started < 0.5


def test_the_block_limit_counts_the_whole_input_including_parts() -> None:
    limits = ValidationLimits(max_blocks=4)
    result = {"type": "tool_result", "tool_use_id": "t", "content": [text(), text()]}
    assert load_messages([user(text(), result)], limits=limits)
    with pytest.raises(InvalidMessageError) as info:
        load_messages([user(text(), result), user(text())], limits=limits)
    assert info.value.path == "messages[1].content"


def test_limits_are_settable() -> None:
    assert load_messages(
        [assistant(tool_use(_nested(150)))], limits=ValidationLimits(max_depth=150)
    )
    assert load_messages([assistant(tool_use({"a": {}}))], limits=ValidationLimits(max_depth=2))
    with pytest.raises(InvalidMessageError, match="more than 2 levels"):
        load_messages([assistant(tool_use({"a": {"b": {}}}))], limits=ValidationLimits(max_depth=2))
    with pytest.raises(InvalidMessageError, match="limit of 1 content blocks"):
        load_messages([user(text(), text())], limits=ValidationLimits(max_blocks=1))


# --- objects and mixes --------------------------------------------------------------------


def test_objects_and_dicts_mix_freely(png_base64: str) -> None:
    image = ImageBlock(Base64Source("image/png", png_base64))
    loaded = load_messages(
        [LLMMessage("user", [TextBlock("a")]), {"role": "user", "content": [image, text("b")]}]
    )
    assert loaded[1].content[0] is image
    assert loaded[1].content[1] == TextBlock("b")


def test_a_tuple_of_messages_is_returned_as_it_is() -> None:
    messages = (LLMMessage("user", [TextBlock("a")]),)
    assert load_messages(messages) is messages


def test_message_objects_are_not_checked_again(
    monkeypatch: pytest.MonkeyPatch, png_base64: str
) -> None:
    message = LLMMessage("user", [ImageBlock(Base64Source("image/png", png_base64))])

    def forbidden(*args: object) -> str:
        raise AssertionError("checked again")

    monkeypatch.setattr(messages_module, "check_base64", forbidden)
    monkeypatch.setattr(messages_module, "check_media_type", forbidden)
    monkeypatch.setattr(messages_module, "check_string", forbidden)
    assert load_messages([message])[0] is message
    assert load_messages([{"role": "user", "content": list(message.content)}])[0] == message


def test_dicts_are_checked_exactly_once(monkeypatch: pytest.MonkeyPatch, png_base64: str) -> None:
    calls: list[str] = []
    original = messages_module.check_base64

    def counting(value: object, path: str) -> str:
        calls.append(path)
        return original(value, path)

    monkeypatch.setattr(messages_module, "check_base64", counting)
    source = {"type": "base64", "media_type": "image/png", "data": png_base64}
    load_messages(
        [user({"type": "image", "source": source}, {"type": "video", "source": VIDEO_SOURCE})]
    )
    assert calls == ["messages[0].content[0].source.data"]


# --- copying ------------------------------------------------------------------------------


def test_mutating_the_callers_data_after_loading_changes_nothing() -> None:
    tags = ["a"]
    data = [user(text("before"), {"type": "image", "source": dict(URL_SOURCE)})]
    data.append(assistant(tool_use({"tags": tags, "opts": {"k": 1}})))
    loaded = load_messages(data)
    snapshot = repr(loaded)
    data[0]["content"][0]["text"] = "after"
    data[0]["content"][1]["source"]["url"] = "file:///etc/passwd"
    data[0]["content"].append(text("extra"))
    data[1]["content"][0]["input"]["opts"]["k"] = 2
    tags.append("b")
    data.clear()
    assert repr(loaded) == snapshot


def test_a_loaded_tool_input_cannot_be_mutated() -> None:
    block = load_messages([assistant(tool_use({"tags": ["a"], "opts": {"k": 1}}))])[0].content[0]
    with pytest.raises(TypeError):
        block.input["new"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        block.input["opts"]["k"] = 2
    with pytest.raises(AttributeError):
        block.input["tags"].append("b")
    assert block.input == {"tags": ("a",), "opts": {"k": 1}}


@pytest.mark.parametrize("data", ["QUJDRA==", "QUJDREU=", "QUJD"])
def test_a_complete_media_string_is_shared_not_copied(data: str) -> None:
    data = "".join([data])  # a str object of the test's own
    source = {"type": "base64", "media_type": "image/png", "data": data}
    loaded = load_messages([user({"type": "image", "source": source})])
    assert loaded[0].content[0].source.data is data


def test_missing_padding_is_added() -> None:
    source = {"type": "base64", "media_type": "image/png", "data": "QUJDRA"}
    assert load_messages([user({"type": "image", "source": source})])[0].content[0].source.data == (
        "QUJDRA=="
    )


# --- one user turn ------------------------------------------------------------------------


def test_load_user_content_builds_one_user_turn() -> None:
    message = load_user_content([text("a"), {"type": "image", "source": URL_SOURCE}])
    assert message.role == "user"
    assert [b.type for b in message.content] == ["text", "image"]


@pytest.mark.parametrize(
    ("blocks", "path", "phrase"),
    [
        ("hi", "messages[0].content", "must be a list of content blocks, got str"),
        ([], "messages[0].content", "at least one"),
        (
            [text(), {"type": "image", "source": {**URL_SOURCE, "url": "s3://b/k"}}],
            "messages[0].content[1].source.url",
            "must use HTTP or HTTPS",
        ),
        ([tool_use({})], "messages[0].content[0]", "only assistant messages"),
    ],
)
def test_load_user_content_names_errors_as_the_first_message(
    blocks: Any, path: str, phrase: str
) -> None:
    with pytest.raises(InvalidMessageError) as info:
        load_user_content(blocks)
    assert info.value.path == path
    assert phrase in str(info.value)


# --- no I/O -------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_io")
def test_validation_opens_no_socket_and_no_file(conversation: list[dict[str, Any]]) -> None:
    assert len(load_messages(conversation)) == 4
    for url in ("file:///etc/passwd", "https://example.com/a.png", "http://127.0.0.1:1/x.png"):
        with contextlib.suppress(InvalidMessageError):
            load_messages([user({"type": "image", "source": {**URL_SOURCE, "url": url}})])
