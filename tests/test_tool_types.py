"""Tool signatures people write: dataclasses, TypedDicts, attrs classes, Enums, datetimes and
pydantic models, in the JSON schema and in the arguments the tool receives."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import subprocess
import sys
from typing import Any, Literal, NotRequired, Required, TypedDict

import attrs
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oma_core import ToolResultBlock, tool
from oma_core.errors import ToolError
from oma_core.messages import ToolUseBlock
from oma_core.tools import Tool, call_tool, tool_result_content


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Step:
    at: datetime.datetime
    note: str = ""
    tags: list[str] = dataclasses.field(default_factory=list)


class Options(TypedDict, total=False):
    depth: int
    mode: Required[Literal["quick", "full"]]


class Filters(TypedDict):
    owner: str
    label: NotRequired[str]


@attrs.frozen
class Window:
    _start: datetime.date = attrs.field(alias="start")
    days: int = 7


class Address(pydantic.BaseModel):
    city: str
    zip_code: str = pydantic.Field(pattern=r"^[0-9]{5}$")


class Person(pydantic.BaseModel):
    name: str
    age: int = pydantic.Field(gt=0)
    home: Address
    born: datetime.datetime | None = None


async def _call(fn: Tool, arguments: dict[str, Any]) -> ToolResultBlock:
    return await call_tool({fn.name: fn}, ToolUseBlock("t1", fn.name, arguments))


# --- schemas ------------------------------------------------------------------------------


def test_a_dataclass_is_an_object_whose_defaulted_fields_are_optional() -> None:
    @tool
    def plan(step: Step) -> str:
        return ""

    assert plan.input_schema["properties"]["step"] == {
        "type": "object",
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "note": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["at"],
        "additionalProperties": False,
    }


def test_a_typeddict_requires_what_its_totality_and_markers_say() -> None:
    @tool
    def search(options: Options, filters: Filters) -> str:
        return ""

    props = search.input_schema["properties"]
    assert props["options"]["required"] == ["mode"]
    assert props["options"]["properties"]["mode"] == {"enum": ["quick", "full"]}
    assert props["filters"]["required"] == ["owner"]
    assert props["filters"]["properties"]["label"] == {"type": "string"}


def test_an_attrs_field_is_named_by_its_alias_and_dates_have_a_format() -> None:
    @tool
    def report(window: Window) -> str:
        return ""

    assert report.input_schema["properties"]["window"]["properties"] == {
        "start": {"type": "string", "format": "date"},
        "days": {"type": "integer"},
    }


def test_datetime_parameters_are_iso_strings_with_their_default_in_iso_form() -> None:
    @tool
    def remind(at: datetime.datetime, day: datetime.date = datetime.date(2026, 1, 2)) -> str:
        return ""

    props = remind.input_schema["properties"]
    assert props["at"] == {"type": "string", "format": "date-time"}
    assert props["day"] == {"type": "string", "format": "date", "default": "2026-01-02"}


def test_an_int_enum_is_described_by_its_values() -> None:
    @tool
    def triage(priority: Priority = Priority.LOW) -> str:
        return ""

    assert triage.input_schema["properties"]["priority"] == {"enum": [1, 2], "default": 1}


def test_a_pydantic_model_schema_is_inlined_without_refs() -> None:
    @tool
    def greet(person: Person) -> str:
        return ""

    schema = greet.input_schema["properties"]["person"]
    assert "$ref" not in json.dumps(greet.input_schema)
    assert "$defs" not in json.dumps(greet.input_schema)
    assert schema["required"] == ["name", "age", "home"]
    assert schema["properties"]["home"]["properties"]["city"]["type"] == "string"
    assert schema["properties"]["born"]["anyOf"][0] == {"type": "string", "format": "date-time"}


@dataclasses.dataclass
class Node:
    children: list[Node]


class Tree(pydantic.BaseModel):
    children: list[Tree]


@pytest.mark.parametrize("annotation", [Node, Tree])
def test_a_recursive_type_is_a_tool_error(annotation: Any) -> None:
    def walk(root: Any) -> str:
        return ""

    walk.__annotations__["root"] = annotation
    with pytest.raises(ToolError, match="recursive"):
        tool(walk)


# --- structuring --------------------------------------------------------------------------


async def test_arguments_become_dataclasses_typeddicts_attrs_and_enums() -> None:
    seen: dict[str, Any] = {}

    @tool
    def act(steps: list[Step], options: Options, window: Window, priority: Priority) -> str:
        seen.update(steps=steps, options=options, window=window, priority=priority)
        return "ok"

    result = await _call(
        act,
        {
            "steps": [{"at": "2026-03-04T05:06:07Z", "tags": ["a"]}],
            "options": {"mode": "quick"},
            "window": {"start": "2026-03-01"},
            "priority": 2,
        },
    )
    assert (result.is_error, result.content) == (False, "ok")
    utc = datetime.UTC
    assert seen["steps"] == [Step(datetime.datetime(2026, 3, 4, 5, 6, 7, tzinfo=utc), "", ["a"])]
    assert seen["options"] == {"mode": "quick"}
    assert seen["window"] == Window(datetime.date(2026, 3, 1))
    assert seen["priority"] is Priority.HIGH


async def test_a_pydantic_argument_is_validated_by_its_model() -> None:
    seen: list[Person] = []

    @tool
    def greet(person: Person) -> str:
        seen.append(person)
        return "hi"

    arguments: dict[str, Any] = {
        "name": "Ada",
        "age": 36,
        "home": {"city": "London", "zip_code": "12345"},
    }
    result = await _call(greet, {"person": {**arguments, "born": "1815-12-10T00:00:00"}})
    assert (result.is_error, result.content) == (False, "hi")
    assert seen == [Person(**arguments, born=datetime.datetime(1815, 12, 10))]


async def test_a_union_takes_the_first_member_the_value_fits() -> None:
    seen: list[Any] = []

    @tool
    def pick(value: Step | int | str) -> str:
        seen.append(value)
        return "ok"

    for value in ({"at": "2026-01-01T00:00:00"}, 3, "three"):
        await _call(pick, {"value": value})
    assert seen == [Step(datetime.datetime(2026, 1, 1)), 3, "three"]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"at": "tomorrow"}, 'input.at must be an ISO 8601 date-time, got "tomorrow"'),
        ({"at": 5}, "input.at must be string, got integer"),
        ({"at": "2026-01-01", "steps": [{"at": "x"}]}, "input.steps[0].at must be an ISO 8601"),
        (
            {
                "at": "2026-01-01",
                "person": {"name": "a", "age": 0, "home": {"city": "c", "zip_code": "12345"}},
            },
            "input.person.age input should be greater than 0",
        ),
        (
            {
                "at": "2026-01-01",
                "person": {"name": "a", "age": 1, "home": {"city": "c", "zip_code": "x"}},
            },
            "input.person.home.zip_code string should match",
        ),
    ],
)
async def test_a_bad_argument_is_an_error_result_naming_its_place(
    arguments: dict[str, Any], problem: str
) -> None:
    ran: list[bool] = []

    @tool
    def book(at: datetime.datetime, steps: list[Step] = [], person: Person | None = None) -> str:  # noqa: B006
        ran.append(True)
        return "booked"

    result = await _call(book, arguments)
    assert result.is_error
    assert isinstance(result.content, str)
    assert result.content.startswith("invalid arguments for tool 'book': ")
    assert problem in result.content
    assert ran == []


async def test_a_dataclass_that_refuses_its_fields_is_a_bad_argument() -> None:
    @dataclasses.dataclass
    class Span:
        days: int

        def __post_init__(self) -> None:
            if self.days > 30:
                raise ValueError("at most 30 days")

    def plan(span: Span) -> str:
        return "planned"

    plan.__annotations__["span"] = Span
    result = await _call(tool(plan), {"span": {"days": 40}})
    assert result.is_error
    assert result.content == (
        "invalid arguments for tool 'plan': input.span is invalid: ValueError: at most 30 days"
    )


# --- results ------------------------------------------------------------------------------


def test_results_of_the_new_types_are_their_json() -> None:
    step = Step(datetime.datetime(2026, 1, 1, 9, 30), "n")
    assert json.loads(tool_result_content(step)) == {  # type: ignore[arg-type]
        "at": "2026-01-01T09:30:00",
        "note": "n",
        "tags": [],
    }
    assert tool_result_content(datetime.date(2026, 1, 2)) == '"2026-01-02"'
    ada = Person(name="Ada", age=36, home=Address(city="L", zip_code="12345"))
    assert json.loads(tool_result_content(ada))["home"] == {  # type: ignore[arg-type]
        "city": "L",
        "zip_code": "12345",
    }


# --- what loads when ----------------------------------------------------------------------


def test_building_tools_imports_neither_pydantic_nor_cattrs() -> None:
    code = (
        "import dataclasses, datetime, sys\n"
        "from oma_core import tool\n"
        "@dataclasses.dataclass\n"
        "class Step:\n"
        "    at: datetime.datetime\n"
        "@tool\n"
        "def plan(step: Step, when: datetime.date) -> str:\n"
        "    return ''\n"
        "assert plan.input_schema['properties']['when']['format'] == 'date'\n"
        "print(sorted(m for m in ('pydantic', 'cattrs') if m in sys.modules))\n"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


def test_the_tool_types_module_stands_on_nothing_else_of_oma() -> None:
    import ast
    import pathlib

    import oma_core._tool_types as module

    tree = ast.parse(pathlib.Path(module.__file__).read_text())
    relative = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]
    assert relative == []


# --- properties ---------------------------------------------------------------------------


@dataclasses.dataclass
class Record:
    count: int
    ratio: float
    name: str
    when: datetime.datetime
    tags: list[str]
    priority: Priority
    note: str | None = None


_finite = st.floats(allow_nan=False, allow_infinity=False)
_zones = st.none() | st.builds(
    lambda minutes: datetime.timezone(datetime.timedelta(minutes=minutes)),
    st.integers(-23 * 60, 23 * 60),
)
_records = st.builds(
    Record,
    count=st.integers(-(2**53), 2**53),
    ratio=_finite,
    name=st.text(),
    when=st.datetimes(timezones=_zones),
    tags=st.lists(st.text(), max_size=3),
    priority=st.sampled_from(Priority),
    note=st.none() | st.text(),
)


def _as_arguments(record: Record) -> dict[str, Any]:
    """The JSON a model would send for ``record``."""
    data = dataclasses.asdict(record)
    data["when"] = record.when.isoformat()
    data["priority"] = record.priority.value
    return data


@given(_records)
def test_a_dataclass_comes_back_from_the_json_a_model_sends_for_it(record: Record) -> None:
    @tool
    def store(record: Record) -> str:
        return ""

    arguments = {"record": _as_arguments(record)}
    assert store.check_arguments(json.loads(json.dumps(arguments))) is None
    assert store.structure_arguments(json.loads(json.dumps(arguments))) == {"record": record}


@given(st.datetimes(timezones=_zones))
def test_any_iso_datetime_is_received_as_the_datetime_it_names(moment: datetime.datetime) -> None:
    @tool
    def remind(at: datetime.datetime) -> str:
        return ""

    received = remind.structure_arguments({"at": moment.isoformat()})["at"]
    assert received == moment and received.tzinfo == moment.tzinfo
