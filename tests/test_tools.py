"""@tool: schemas from signatures, argument checks and result conversion."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import attrs
import pytest
from _builders import Color

from oma_core import Tool, tool
from oma_core.errors import ToolError
from oma_core.messages import TextBlock
from oma_core.tools import tool_result_content


@attrs.frozen
class Point:
    x: int
    y: int = 0


def test_scalar_parameters_become_a_json_schema() -> None:
    @tool
    def add(a: int, b: float, label: str, exact: bool = False) -> float:
        """Add two numbers.

        More detail that is not part of the description.
        """
        return a + b

    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert add.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number"},
            "label": {"type": "string"},
            "exact": {"type": "boolean", "default": False},
        },
        "required": ["a", "b", "label"],
        "additionalProperties": False,
    }


def test_literal_enum_optional_list_dict_and_attrs_types_are_described() -> None:
    @tool
    def f(
        mode: Literal["fast", "slow"],
        color: Color,
        tags: list[str],
        weights: dict[str, float],
        point: Point,
        note: str | None = None,
    ) -> str:
        return ""

    props = f.input_schema["properties"]
    assert props["mode"] == {"enum": ["fast", "slow"]}
    assert props["color"] == {"enum": ["red", "blue"]}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["weights"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["point"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}


def test_parameter_descriptions_come_from_args_section_and_annotated() -> None:
    @tool
    def search(query: str, limit: Annotated[int, "at most this many hits"] = 5) -> str:
        """Search the index.

        Args:
            query: what to look for,
                in plain words.
        """
        return ""

    props = search.input_schema["properties"]
    assert props["query"]["description"] == "what to look for, in plain words."
    assert props["limit"]["description"] == "at most this many hits"


def test_explicit_name_description_and_schema_win() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

    @tool(name="lookup", description="Look it up.", input_schema=schema)
    def anything(**kwargs: Any) -> str:
        return str(kwargs)

    assert (anything.name, anything.description) == ("lookup", "Look it up.")
    assert anything.input_schema == schema
    schema["properties"] = {}  # the tool keeps its own copy
    assert anything.input_schema["properties"] == {"q": {"type": "string"}}


def test_varargs_without_a_schema_are_a_tool_error() -> None:
    def f(*args: int) -> int:
        return 0

    with pytest.raises(ToolError, match="args"):
        tool(f)


def test_unsupported_parameter_type_is_a_tool_error() -> None:
    def f(x: bytes) -> None:
        return None

    with pytest.raises(ToolError, match="'x'"):
        tool(f)


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"a": 1}, "missing the required argument 'b'"),
        ({"a": "1", "b": 2}, "input.a must be integer, got string"),
        ({"a": True, "b": 2}, "input.a must be integer, got boolean"),
        ({"a": 1, "b": 2, "c": 3}, "unexpected argument 'c'"),
        ({"a": 1, "b": 2, "mode": "medium"}, 'input.mode must be one of "fast", "slow"'),
        ({"a": 1, "b": 2, "tags": ["x", 3]}, "input.tags[1] must be string, got integer"),
    ],
)
def test_argument_mismatches_are_named(arguments: dict[str, Any], problem: str) -> None:
    @tool
    def f(a: int, b: int, mode: Literal["fast", "slow"] = "fast", tags: list[str] = []) -> int:  # noqa: B006
        return a + b

    found = f.check_arguments(arguments)
    assert found is not None
    assert problem in found


def test_valid_arguments_pass_the_check() -> None:
    @tool
    def f(a: int, b: float, note: str | None = None) -> float:
        return a + b

    assert f.check_arguments({"a": 1, "b": 2}) is None
    assert f.check_arguments({"a": 1.0, "b": 2, "note": None}) is None


async def test_arguments_are_turned_into_the_annotated_python_types() -> None:
    seen: dict[str, Any] = {}

    @tool
    async def f(color: Color, point: Point, ratio: float, tags: list[str]) -> str:
        seen.update(color=color, point=point, ratio=ratio, tags=tags)
        return "ok"

    result = await f.invoke({"color": "blue", "point": {"x": 1}, "ratio": 2, "tags": ("a",)})
    assert result == "ok"
    assert seen == {"color": Color.BLUE, "point": Point(1, 0), "ratio": 2.0, "tags": ["a"]}
    assert isinstance(seen["ratio"], float)


async def test_sync_tools_run_and_return() -> None:
    @tool
    def double(n: int) -> int:
        return n * 2

    assert await double.invoke({"n": 21}) == 42


def test_tool_result_content_keeps_strings_and_dumps_json() -> None:
    assert tool_result_content("plain") == "plain"
    assert tool_result_content({"a": [1, 2]}) == '{"a": [1, 2]}'
    assert tool_result_content(None) == "null"
    assert tool_result_content(Point(1, 2)) == '{"x": 1, "y": 2}'
    assert tool_result_content(Color.RED) == '"red"'


def test_tool_result_content_passes_parts_on() -> None:
    parts = [TextBlock("a"), {"type": "text", "text": "b"}]
    assert tool_result_content(parts) == parts


def test_tool_result_content_refuses_what_is_not_json() -> None:
    with pytest.raises(TypeError):
        tool_result_content(object())


def test_a_single_part_is_passed_on_as_a_one_part_list() -> None:
    from oma_core import image_base64

    picture = image_base64("iVBORw0KGgo=", "image/png")
    assert tool_result_content(picture) == [picture]
    as_dict = {"type": "image", "source": {"type": "url", "media_type": "image/png",
               "url": "https://example.com/a.png"}}  # fmt: skip
    assert tool_result_content(as_dict) == [as_dict]


@pytest.mark.parametrize("nested", [False, True])
def test_a_block_a_tool_result_cannot_carry_is_refused_not_dumped_as_text(nested: bool) -> None:
    from oma_core import video_url

    clip = video_url("https://example.com/clip.mp4")
    with pytest.raises(TypeError, match="cannot carry a video block"):
        tool_result_content([TextBlock("see"), clip] if nested else clip)


def test_an_enum_default_is_given_as_its_json_value() -> None:
    @tool
    def paint(color: Color = Color.BLUE) -> str:
        return color.value

    assert paint.input_schema["properties"]["color"] == {"enum": ["red", "blue"], "default": "blue"}
    assert "required" not in paint.input_schema


def test_a_tool_stays_callable_as_the_function_it_wraps() -> None:
    @tool
    def double(n: int) -> int:
        return n * 2

    assert isinstance(double, Tool)
    assert double(21) == 42 and double(n=2) == 4
