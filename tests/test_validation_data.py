"""Tool inputs hold plain JSON data only; anything else is refused, naming where it is."""

from __future__ import annotations

import datetime
import enum
from typing import Any

import pytest
from _builders import assistant, refused, refused_saying, tool_call, tool_use

from oma_core import (
    dump_messages,
    load_messages,
)


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
        (frozenset({1}), "frozenset"),
        (bytearray(b"x"), "bytearray"),
        (1 + 2j, "complex"),
    ],
)
def test_non_plain_data_in_a_tool_input_is_refused(value: Any, shown: str) -> None:
    error = refused_saying(
        [assistant(tool_call({"a": [1, {"b": value}]}))],
        "messages must contain cloneable structured data",
        "messages[0].content[0].input.a[1].b",
    )
    assert shown in str(error)


def test_a_non_string_key_in_a_tool_input_is_refused() -> None:
    refused_saying(
        [assistant(tool_call({"a": {1: "x"}}))],
        "messages must contain cloneable structured data",
        "messages[0].content[0].input.a",
    )

    err = refused([assistant(tool_use({1: "a"}))])
    assert err.path.startswith("messages[0].content[0]")


def test_odd_keys_are_quoted_in_paths() -> None:
    refused_saying(
        [assistant(tool_call({"a b": [{"c": {1, 2}}]}))],
        "cloneable",
        "messages[0].content[0].input['a b'][0].c",
    )


def test_plain_json_values_are_accepted_in_a_tool_input() -> None:
    value = {"s": "x", "i": 1, "f": 1.5, "b": True, "n": None, "l": [1, [2]], "t": (3,), "d": {}}
    block = load_messages([assistant(tool_call(value))])[0].content[0]
    assert block.plain_input() == {**value, "t": [3]}

    value = {"s": "é", "i": -3, "f": 1.5, "b": False, "n": None, "l": [[], {}], "big": 10**30}
    (message,) = load_messages([assistant(tool_use(value))])
    assert dump_messages([message])[0]["content"][0]["input"] == value


def test_a_dict_subclass_is_copied_from_what_it_really_holds() -> None:
    class Lying(dict[str, Any]):
        def items(self) -> Any:
            return [("fake", 1)]

    block = load_messages([assistant(tool_call(Lying(real=[1])))])[0].content[0]
    assert block.plain_input() == {"real": [1]}
    assert type(block.plain_input()) is dict


def test_a_cyclic_tool_input_is_refused_without_recursion_error() -> None:
    loop: list[Any] = []
    loop.append(loop)
    err = refused([assistant(tool_use({"loop": loop}))])
    assert err.path.startswith("messages[0].content[0]")


def test_first_violation_inside_tool_input_names_the_key() -> None:
    err = refused([assistant(tool_use({"ok": 1, "bad": {1, 2}}))])
    assert err.path.startswith("messages[0].content[0].input")
    assert "bad" in err.path
