"""The nesting and block limits: deep or huge input is refused at once, without recursion errors."""

from __future__ import annotations

from typing import Any

import pytest
from _builders import assistant, nested, refused, refused_saying, text, tool_call, tool_use, user

from oma_core import InvalidMessageError, load_messages
from oma_core.validation import ValidationLimits


def _nested(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth - 1):
        node["a"] = {}
        node = node["a"]
    return root


def test_a_tool_input_up_to_the_depth_limit_is_accepted() -> None:
    assert load_messages([assistant(tool_call(_nested(100)))])
    assert load_messages([assistant(tool_use({"deep": nested(50)}))])


@pytest.mark.parametrize("depth", [101, 150, 5000, 100_000])
def test_a_tool_input_past_the_depth_limit_is_refused_without_recursion_error(depth: int) -> None:
    refused_saying(
        [assistant(tool_call(_nested(depth)))],
        "is nested more than 100 levels deep",
        "messages[0].content[0].input",
    )
    err = refused([assistant(tool_use({"deep": nested(depth)}))])
    assert err.path.startswith("messages[0].content[0]")


def test_a_ten_thousand_deep_tool_input_is_refused_quickly() -> None:
    deep_list: list[Any] = []
    node = deep_list
    for _ in range(10_000):
        node.append([])
        node = node[0]
    refused_saying([assistant(tool_call(_nested(10_000)))], "levels deep")
    refused_saying([assistant(tool_call({"x": deep_list}))], "levels deep")


def test_a_self_referencing_tool_input_is_refused_as_too_deep() -> None:
    loop: dict[str, Any] = {}
    loop["me"] = loop
    refused_saying([assistant(tool_call(loop))], "levels deep")


def test_a_message_with_a_million_blocks_is_refused_quickly() -> None:
    blocks = [text()] * 1_000_000
    refused_saying(
        [user(*blocks)], "exceeds the limit of 100000 content blocks", "messages[0].content"
    )


def test_a_million_messages_are_refused_at_once() -> None:
    many = [user(text())] * 1_000_000
    refused_saying(many, "exceeds the limit", "messages")


def test_the_block_limit_counts_the_whole_input_including_parts() -> None:
    limits = ValidationLimits(max_blocks=4)
    result = {"type": "tool_result", "tool_use_id": "t", "content": [text(), text()]}
    assert load_messages([user(text(), result)], limits=limits)
    with pytest.raises(InvalidMessageError) as info:
        load_messages([user(text(), result), user(text())], limits=limits)
    assert info.value.path == "messages[1].content"


def test_limits_are_settable() -> None:
    assert load_messages(
        [assistant(tool_call(_nested(150)))], limits=ValidationLimits(max_depth=150)
    )
    assert load_messages([assistant(tool_call({"a": {}}))], limits=ValidationLimits(max_depth=2))
    with pytest.raises(InvalidMessageError, match="more than 2 levels"):
        load_messages(
            [assistant(tool_call({"a": {"b": {}}}))], limits=ValidationLimits(max_depth=2)
        )
    with pytest.raises(InvalidMessageError, match="limit of 1 content blocks"):
        load_messages([user(text(), text())], limits=ValidationLimits(max_blocks=1))

    small = ValidationLimits(max_depth=10, max_blocks=2)
    with pytest.raises(InvalidMessageError):
        load_messages([user(text(), text(), text())], limits=small)
    with pytest.raises(InvalidMessageError):
        load_messages([assistant(tool_use({"deep": nested(20)}))], limits=small)
    load_messages([user(text(), text())], limits=small)
    big = ValidationLimits(max_depth=1000, max_blocks=10)
    load_messages([assistant(tool_use({"deep": nested(500)}))], limits=big)


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
