"""load_messages and dump_messages: the JSON shape of the model, each the inverse of the other."""

from __future__ import annotations

import base64
import json
import pathlib
import types
from typing import Any

import attrs
import pytest
from _builders import (
    IMG_URL,
    SETTINGS,
    assistant,
    b64_source,
    full_conversation,
    image,
    reference_conversation,
    refused,
    text,
    tool_result,
    tool_use,
    user,
    user_turn,
    video,
    video_block,
)
from hypothesis import given
from hypothesis import strategies as st

from oma_core import (
    Base64Source,
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UrlSource,
    VideoBlock,
    dump_messages,
    image_url,
    load_messages,
)
from oma_core.messages import ContentBlock
from oma_core.serialization import message_converter

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)


JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        TEXT,
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(TEXT, children, max_size=3)
    ),
    max_leaves=15,
)


@st.composite
def sources(draw: Any, family: str) -> dict[str, Any]:
    subtype = draw(
        st.sampled_from(["png", "jpeg", "webp"] if family == "image" else ["mp4", "webm"])
    )
    media_type = f"{family}/{subtype}"
    if draw(st.booleans()):
        data = base64.b64encode(draw(st.binary(min_size=1, max_size=40))).decode()
        return {"type": "base64", "media_type": media_type, "data": data}
    path = draw(st.text(alphabet="abcdefghij/._-~%", max_size=15))
    return {"type": "url", "media_type": media_type, "url": f"https://example.com/{path}"}


@st.composite
def user_blocks(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["text", "image", "video", "tool_result"]))
    if kind == "text":
        return {"type": "text", "text": draw(TEXT)}
    if kind == "image":
        block = {"type": "image", "source": draw(sources("image"))}
        detail = draw(st.sampled_from([None, "low", "high", "auto"]))
        return block if detail is None else {**block, "detail": detail}
    if kind == "video":
        return {"type": "video", "source": draw(sources("video"))}
    if draw(st.booleans()):
        return {
            "type": "tool_result",
            "tool_use_id": draw(TEXT),
            "content": draw(TEXT),
            "is_error": True,
        }
    parts = draw(
        st.lists(
            st.one_of(
                st.builds(lambda t: {"type": "text", "text": t}, TEXT),
                st.builds(lambda s: {"type": "image", "source": s}, sources("image")),
                st.builds(
                    lambda n, s: {"type": "file", "filename": n, "source": s},
                    TEXT,
                    sources("video"),
                ),
            ),
            min_size=1,
            max_size=3,
        )
    )
    return {"type": "tool_result", "tool_use_id": draw(TEXT), "content": parts}


ASSISTANT_BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
    st.builds(
        lambda i, n, v: {"type": "tool_use", "id": i, "name": n, "input": v},
        TEXT,
        TEXT,
        st.dictionaries(TEXT, JSON_VALUES, max_size=3),
    ),
    st.builds(
        lambda t, s, r, p: {
            "type": "reasoning",
            "text": t,
            **({"signature": s} if s else {}),
            **({"redacted_data": r} if r else {}),
            **({"provider": p} if p else {}),
        },
        TEXT,
        st.one_of(st.none(), TEXT.filter(bool)),
        st.one_of(st.none(), TEXT.filter(bool)),
        st.one_of(st.none(), st.sampled_from(["anthropic", "bedrock", "gemini"]), TEXT),
    ),
)


CONVERSATIONS = st.lists(
    st.one_of(
        st.builds(
            lambda c: {"role": "user", "content": c},
            st.lists(user_blocks(), min_size=1, max_size=4),
        ),
        st.builds(
            lambda c: {"role": "assistant", "content": c},
            st.lists(ASSISTANT_BLOCKS, min_size=1, max_size=4),
        ),
    ),
    min_size=1,
    max_size=4,
)


def test_dump_gives_back_the_dicts_that_were_loaded(conversation: list[dict[str, Any]]) -> None:
    assert dump_messages(load_messages(conversation)) == conversation

    data = full_conversation()
    dumped = dump_messages(load_messages(data))
    assert isinstance(dumped, list)
    assert dumped == data
    assert json.loads(json.dumps(dumped)) == data


def test_load_inverts_dump(conversation: list[dict[str, Any]]) -> None:
    messages = load_messages(conversation)
    assert load_messages(dump_messages(messages)) == messages

    messages = load_messages(full_conversation())
    assert load_messages(dump_messages(messages)) == messages


def test_dump_output_is_json(conversation: list[dict[str, Any]]) -> None:
    dumped = dump_messages(conversation)
    assert json.loads(json.dumps(dumped)) == dumped


def test_type_comes_first_and_optional_keys_are_left_out() -> None:
    dumped = dump_messages(
        [
            LLMMessage(
                "user",
                [
                    ImageBlock(Base64Source("image/png", "QUJD")),
                    ToolResultBlock("t", "ok"),
                ],
            ),
            LLMMessage("assistant", [ReasoningBlock("r")]),
        ]
    )
    image, result = dumped[0]["content"]
    assert list(image) == ["type", "source"]
    assert list(image["source"]) == ["type", "media_type", "data"]
    assert result == {"type": "tool_result", "tool_use_id": "t", "content": "ok"}
    assert dumped[1]["content"] == [{"type": "reasoning", "text": "r"}]


def test_set_optional_keys_are_kept() -> None:
    dumped = dump_messages(
        [
            LLMMessage(
                "user",
                [
                    ImageBlock(Base64Source("image/png", "QUJD"), detail="auto"),
                    ToolResultBlock("t", "boom", is_error=True),
                ],
            ),
            LLMMessage(
                "assistant",
                [ReasoningBlock("", signature="s", redacted_data="x", provider="anthropic")],
            ),
        ]
    )
    assert dumped[0]["content"][0]["detail"] == "auto"
    assert dumped[0]["content"][1]["is_error"] is True
    assert dumped[1]["content"][0] == {
        "type": "reasoning",
        "text": "",
        "signature": "s",
        "redacted_data": "x",
        "provider": "anthropic",
    }


def test_tool_inputs_come_back_as_plain_dicts_and_lists() -> None:
    message = LLMMessage("assistant", [ToolUseBlock("t", "f", {"a": [1, {"b": (2,)}]})])
    dumped_input = dump_messages([message])[0]["content"][0]["input"]
    assert dumped_input == {"a": [1, {"b": [2]}]}
    assert type(dumped_input) is dict
    assert type(dumped_input["a"]) is list
    assert type(dumped_input["a"][1]) is dict


def test_mutating_what_dump_returned_changes_no_message() -> None:
    message = LLMMessage(
        "assistant", [TextBlock("a"), ToolUseBlock("t", "f", {"tags": ["x"], "o": {"k": 1}})]
    )
    dumped = dump_messages([message])
    dumped[0]["content"][0]["text"] = "changed"
    dumped[0]["content"][1]["input"]["tags"].append("y")
    dumped[0]["content"][1]["input"]["o"]["k"] = 2
    dumped[0]["content"].clear()
    assert message.content[0] == TextBlock("a")
    assert message.content[1].plain_input() == {"tags": ["x"], "o": {"k": 1}}


def test_dump_shares_media_strings(png_base64: str) -> None:
    message = LLMMessage("user", [ImageBlock(Base64Source("image/png", png_base64))])
    assert dump_messages([message])[0]["content"][0]["source"]["data"] is png_base64


def test_dump_validates_dicts_it_is_given() -> None:
    with pytest.raises(InvalidMessageError, match="messages must be a list, got dict"):
        dump_messages({"role": "user"})
    assert dump_messages([]) == []

    with pytest.raises(InvalidMessageError):
        dump_messages([user(text(1))])


def test_the_converter_structures_through_validation() -> None:
    converter = message_converter()
    assert converter is message_converter()
    block = converter.structure({"type": "text", "text": "a"}, ContentBlock)
    assert block == TextBlock("a")
    with pytest.raises(InvalidMessageError, match="must be one of"):
        converter.structure({"type": "hologram"}, ContentBlock)
    with pytest.raises(InvalidMessageError, match="must use HTTP or HTTPS"):
        converter.structure(
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "url", "media_type": "image/png", "url": "ftp://h/x"},
                    }
                ],
            },
            LLMMessage,
        )


def test_the_example_conversation_round_trips() -> None:
    data = json.loads((EXAMPLES / "conversation.json").read_text())
    assert dump_messages(load_messages(data)) == data


def test_the_invalid_example_is_refused_for_its_file_url() -> None:
    data = json.loads((EXAMPLES / "invalid_conversation.json").read_text())
    with pytest.raises(InvalidMessageError, match="must use HTTP or HTTPS") as info:
        load_messages(data)
    assert info.value.path.endswith(".source.url")


def test_objects_and_dicts_mix_freely(png_base64: str) -> None:
    image = ImageBlock(Base64Source("image/png", png_base64))
    loaded = load_messages(
        [LLMMessage("user", [TextBlock("a")]), {"role": "user", "content": [image, text("b")]}]
    )
    assert loaded[1].content[0] is image
    assert loaded[1].content[1] == TextBlock("b")

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


def test_a_tuple_of_messages_is_returned_as_it_is() -> None:
    messages = (LLMMessage("user", [TextBlock("a")]),)
    assert load_messages(messages) is messages


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


def test_is_error_false_round_trips_through_load() -> None:
    messages = load_messages([user(tool_result([text("x")], is_error=False))])
    assert messages[0].content[0].is_error is False
    assert load_messages(dump_messages(messages)) == messages


def test_tuples_inside_tool_input_dump_as_json_lists() -> None:
    messages = load_messages([assistant(tool_use({"pair": (1, 2)}))])
    assert dump_messages(messages)[0]["content"][0]["input"] == {"pair": [1, 2]}


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


def test_a_large_base64_video_is_scanned_once_and_never_copied(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from oma_core import _checks, _sources

    scanned: list[int] = []

    def counting(value: object, path: str) -> str:
        scanned.append(len(value))  # type: ignore[arg-type]
        return _checks.check_base64(value, path)

    monkeypatch.setattr(_sources, "check_base64", counting)  # dicts are checked here
    data = "QUJD" * 2_000_000  # 8 MB
    messages = load_messages([user(video(b64_source(data, "video/mp4")))])
    assert scanned == [len(data)]
    for _ in range(20):
        again = load_messages([messages[0], user(text("x"))])
        assert again[0].content[0].source.data is data
    assert scanned == [len(data)]  # message objects are not scanned again
    assert messages[0].content[0].source.data is data


def test_message_object_subclasses_of_dict_are_plain_mappings() -> None:
    from collections import OrderedDict

    message = OrderedDict([("role", "user"), ("content", [OrderedDict(type="text", text="x")])])
    assert load_messages([message])[0].content[0].text == "x"


def test_loaded_tool_input_equals_the_plain_data_it_came_from() -> None:
    value = {"tags": ["a", "b"], "opts": {"k": [1, {"x": None}]}, "n": 1.5}
    (message,) = load_messages([assistant(tool_use(value))])
    block = message.content[0]
    assert block.input == value
    assert json.loads(json.dumps(block.input)) == value
    assert block.plain_input() == value
    assert ToolUseBlock(id="t1", name="zoom", input=value) == block


def test_load_and_dump_invert_each_other_on_the_reference_shapes() -> None:
    conversation = [*reference_conversation(), user_turn(video_block("url"), video_block("base64"))]
    assert dump_messages(load_messages(conversation)) == conversation
    assert load_messages(dump_messages(load_messages(conversation))) == load_messages(conversation)


@SETTINGS
@given(CONVERSATIONS)
def test_valid_conversations_round_trip_exactly(conversation: list[dict[str, Any]]) -> None:
    loaded = load_messages(conversation)
    dumped = dump_messages(loaded)
    assert dumped == conversation
    assert load_messages(dumped) == loaded
