"""dump_messages: the JSON shape of the model, the inverse of load_messages."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from oma_core import (
    Base64Source,
    ImageBlock,
    InvalidMessageError,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    dump_messages,
    load_messages,
)
from oma_core.messages import ContentBlock
from oma_core.serialization import message_converter

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_dump_gives_back_the_dicts_that_were_loaded(conversation: list[dict[str, Any]]) -> None:
    assert dump_messages(load_messages(conversation)) == conversation


def test_load_inverts_dump(conversation: list[dict[str, Any]]) -> None:
    messages = load_messages(conversation)
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
            LLMMessage("assistant", [ReasoningBlock("", signature="s", redacted_data="x")]),
        ]
    )
    assert dumped[0]["content"][0]["detail"] == "auto"
    assert dumped[0]["content"][1]["is_error"] is True
    assert dumped[1]["content"][0] == {
        "type": "reasoning",
        "text": "",
        "signature": "s",
        "redacted_data": "x",
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


def test_the_converter_structures_through_validation() -> None:
    converter = message_converter()
    assert converter is message_converter()
    block = converter.structure({"type": "text", "text": "a"}, ContentBlock)
    assert block == TextBlock("a")
    with pytest.raises(InvalidMessageError, match="must be one of"):
        converter.structure({"type": "audio"}, ContentBlock)
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
