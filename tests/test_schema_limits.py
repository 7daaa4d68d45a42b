"""``SchemaLimits`` (the toolkit's): a request's schemas counted together against a service's
documented limits, at the limit taken, one past it refused at the place it was passed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_core.toolkit import SchemaLimits


class Refused(Exception):
    def __init__(self, place: str, reason: str) -> None:
        super().__init__(f"{place}: {reason}")
        self.place = place
        self.reason = reason


def check(limits: SchemaLimits, *schemas: dict[str, Any]) -> None:
    limits.check([("$" if i == 0 else f"tools.t{i}", s) for i, s in enumerate(schemas)], Refused)


def obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or []}


def nested(depth: int) -> dict[str, Any]:
    """An object ``depth`` levels deep, each level holding the next under ``n``."""
    schema = obj({"v": {"type": "string"}}, ["v"])
    for _ in range(depth - 1):
        schema = obj({"n": schema}, ["n"])
    return schema


# -- a tree of objects with a known number of each thing, wherever it sits ---------------------

_LEAF = st.sampled_from(
    [
        ("plain", {"type": "string"}),
        ("optional", {"type": "integer"}),
        ("union", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
        ("union", {"type": ["string", "null"]}),
        ("plain", {"enum": ["a", "b", "c"]}),
    ]
)


@st.composite
def trees(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, int]]:
    """A schema and how many optional properties, unions and properties it holds."""
    counts = {"optional": 0, "unions": 0, "properties": 0}

    def build(level: int) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for i in range(draw(st.integers(1, 4))):
            key = f"p{i}"
            counts["properties"] += 1
            if level < 3 and draw(st.booleans()):
                sub = build(level + 1)
                if draw(st.booleans()):
                    sub = {"type": "array", "items": sub}
                properties[key] = sub
                required.append(key)
                continue
            kind, leaf = draw(_LEAF)
            properties[key] = leaf
            if kind == "optional":
                counts["optional"] += 1
            else:
                required.append(key)
                counts["unions"] += kind == "union"
        return obj(properties, required)

    return build(0), counts


@given(trees())
@settings(max_examples=100, deadline=None)
def test_optional_properties_are_counted_wherever_they_nest(
    tree: tuple[dict[str, Any], dict[str, int]],
) -> None:
    schema, counts = tree
    check(SchemaLimits(max_optional=counts["optional"]), schema)
    if counts["optional"]:
        with pytest.raises(Refused, match=f"{counts['optional']} optional properties"):
            check(SchemaLimits(max_optional=counts["optional"] - 1), schema)


@given(trees())
@settings(max_examples=100, deadline=None)
def test_unions_are_counted_as_any_of_or_a_list_of_types(
    tree: tuple[dict[str, Any], dict[str, int]],
) -> None:
    schema, counts = tree
    check(SchemaLimits(max_unions=counts["unions"]), schema)
    if counts["unions"]:
        with pytest.raises(Refused, match=f"{counts['unions']} properties with a union type"):
            check(SchemaLimits(max_unions=counts["unions"] - 1), schema)


@given(trees())
@settings(max_examples=100, deadline=None)
def test_properties_are_counted_in_every_object(
    tree: tuple[dict[str, Any], dict[str, int]],
) -> None:
    schema, counts = tree
    check(SchemaLimits(max_properties=counts["properties"]), schema)
    with pytest.raises(Refused, match=f"{counts['properties']} object properties"):
        check(SchemaLimits(max_properties=counts["properties"] - 1), schema)


# -- where, and what -------------------------------------------------------------------------


def test_the_refusal_names_the_place_the_limit_was_passed() -> None:
    schema = obj({"a": {"type": "string"}, "b": obj({"c": {"type": "string"}, "d": {}})})
    with pytest.raises(Refused) as error:
        check(SchemaLimits(max_optional=3), schema)
    assert error.value.place == "$.b.d"  # the fourth: a, b, c, d
    assert error.value.reason == (
        "4 optional properties (ones their object's `required` does not list) in all; "
        "the limit is 3, passed here"
    )


@pytest.mark.parametrize("depth", [1, 5, 10])
def test_objects_nested_to_the_limit_are_taken_and_one_deeper_refused(depth: int) -> None:
    check(SchemaLimits(max_depth=depth), nested(depth))
    with pytest.raises(Refused, match=f"more than {depth} levels deep") as error:
        check(SchemaLimits(max_depth=depth), nested(depth + 1))
    assert error.value.place == "$" + ".n" * depth


def test_arrays_and_unions_add_no_level_of_nesting() -> None:
    inner = obj({"v": {"type": "string"}})
    schema = obj({"a": {"type": "array", "items": {"anyOf": [inner, {"type": "null"}]}}})
    check(SchemaLimits(max_depth=2), schema)


def test_a_definition_counts_once_and_starts_at_the_root_level() -> None:
    schema = {
        **obj({"x": {"$ref": "#/$defs/Deep"}, "y": {"$ref": "#/$defs/Deep"}}, ["x", "y"]),
        "$defs": {"Deep": nested(3)},
    }
    check(SchemaLimits(max_depth=3, max_properties=5), schema)
    with pytest.raises(Refused) as error:
        check(SchemaLimits(max_depth=2), schema)
    assert error.value.place == "$defs.Deep.n.n"


def test_the_schemas_of_one_request_are_counted_together() -> None:
    output = obj({"a": {"type": "string"}, "b": {"type": "string"}})
    tool = obj({"c": {"type": "string"}})
    check(SchemaLimits(max_optional=3), output, tool)
    with pytest.raises(Refused) as error:
        check(SchemaLimits(max_optional=2), output, tool)
    assert error.value.place == "tools.t1.c"


def test_characters_of_names_and_values_are_counted() -> None:
    schema = {
        **obj({"ab": {"enum": ["xyz", 7]}, "c": {"const": "de"}}, ["ab", "c"]),
        "$defs": {"Fgh": {"type": "string"}},
    }
    check(SchemaLimits(max_chars=2 + 3 + 1 + 2 + 3), schema)
    with pytest.raises(Refused, match="11 characters"):
        check(SchemaLimits(max_chars=10), schema)


def test_a_large_string_enum_is_held_to_its_own_character_limit() -> None:
    limits = SchemaLimits(large_enum_values=3, max_large_enum_chars=8)
    check(limits, obj({"e": {"enum": ["aa", "bb", "cc", "dd"]}}, ["e"]))  # 4 values, 8 chars
    check(limits, obj({"e": {"enum": ["aaaa", "bbbb", "cccc"]}}, ["e"]))  # 3 values: no limit
    with pytest.raises(Refused, match="an enum of 4 string values holds 9 characters") as error:
        check(limits, obj({"e": {"enum": ["aa", "bb", "cc", "ddd"]}}, ["e"]))
    assert error.value.place == "$.e"


def test_enum_values_are_counted_across_the_schema() -> None:
    schema = obj({"a": {"enum": [1, 2]}, "b": {"type": "array", "items": {"enum": [3]}}})
    check(SchemaLimits(max_enum_values=3), schema)
    with pytest.raises(Refused, match="3 enum values in all; the limit is 2"):
        check(SchemaLimits(max_enum_values=2), schema)


def test_no_limit_given_checks_nothing() -> None:
    check(SchemaLimits(), nested(50))
