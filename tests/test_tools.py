"""@tool: schemas from signatures, argument checks and result conversion."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import attrs
import pytest
from _builders import Color

from oma_core import tool
from oma_core.errors import ToolError
from oma_core.messages import TextBlock
from oma_core.tools import Tool, ToolOutput, tool_result_content


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


# -- toolsets: tools listed at run time ---------------------------------------------------------


class _Toys:
    """A toy toolset: lists ``tools`` (a list it may be given anew) and counts the listings."""

    name = "toys"

    def __init__(self, *tools: Tool) -> None:
        self.tools = list(tools)
        self.listings = 0

        self.closes = 0

    async def list_tools(self) -> list[Tool]:
        self.listings += 1
        return list(self.tools)

    async def aclose(self) -> None:
        self.closes += 1


def _calls(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    blocks = [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    return {"role": "assistant", "content": blocks}


@tool
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


@tool
def whisper(text: str) -> str:
    """Whisper the text."""
    return text.lower()


async def test_a_toolsets_tools_are_offered_and_called_like_local_ones() -> None:
    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    provider = ScriptedProvider([_calls(("1", "shout", {"text": "hi"})), "done"])
    config = AgentConfig(name="a", provider=provider, tools=[whisper, _Toys(shout)])
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    assert result.success, result.status
    assert [t.name for t in provider.requests[0].tools] == ["whisper", "shout"]
    assert provider.requests[1].messages[-1].content[0].content == "HI"


async def test_a_toolset_call_passes_through_the_tool_call_middleware() -> None:
    from oma_core import Agent, AgentConfig, PluginHost, hookimpl
    from oma_core.testing import ScriptedProvider

    seen: list[str] = []

    class Watch:
        @hookimpl(wrapper=True)
        def oma_tool_call(self, call: Any, run: Any) -> Any:
            seen.append(call.block.name)
            return (yield)

    host = PluginHost(load_entrypoints=False)
    host.register(Watch(), "watch")
    provider = ScriptedProvider([_calls(("1", "shout", {"text": "a"})), "done"])
    config = AgentConfig(name="a", provider=provider, tools=[_Toys(shout)])
    result = await Agent(config, plugins=host).run("go")

    assert result.success and seen == ["shout"]


async def test_a_changed_tool_list_is_seen_by_the_next_model_call() -> None:
    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    toys = _Toys(shout)

    async def grow(**_: Any) -> str:
        toys.tools.append(whisper)
        return "grown"

    toys.tools.append(tool(grow, name="grow", input_schema={"type": "object"}))
    provider = ScriptedProvider([_calls(("1", "grow", {})), "done"])
    config = AgentConfig(name="a", provider=provider, tools=[toys])
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    assert result.success
    assert [t.name for t in provider.requests[1].tools] == ["shout", "grow", "whisper"]
    assert toys.listings == 2


async def test_a_toolset_tool_named_like_a_local_tool_fails_the_run_naming_both() -> None:
    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    provider = ScriptedProvider(["never"])
    config = AgentConfig(name="a", provider=provider, tools=[shout, _Toys(shout)])
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    assert not result.success
    error = result.status.error
    assert isinstance(error, ToolError) and error.tool == "shout"
    assert "the agent's own tools" in str(error) and "toolset 'toys'" in str(error)
    assert provider.requests == []


async def test_two_toolsets_offering_one_name_fail_the_run() -> None:
    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    provider = ScriptedProvider(["never"])
    config = AgentConfig(name="a", provider=provider, tools=[_Toys(shout), _Toys(shout)])
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    assert isinstance(result.status.error, ToolError)
    assert "give the toolset a prefix" in str(result.status.error)


async def test_a_tool_output_marked_as_error_is_an_error_result_with_its_text() -> None:
    from oma_core.messages import ToolUseBlock
    from oma_core.tools import call_tool

    @tool
    def refuse() -> ToolOutput:
        """Refuse."""
        return ToolOutput("the disk is full", is_error=True)

    result = await call_tool({"refuse": refuse}, ToolUseBlock("1", "refuse", {}))

    assert result.is_error and result.content == "the disk is full"


async def test_a_tool_output_with_invalid_media_is_an_error_result_naming_the_problem() -> None:
    from oma_core.messages import ToolUseBlock
    from oma_core.tools import call_tool

    @tool
    def picture() -> ToolOutput:
        """A picture."""
        bad = {"type": "base64", "media_type": "image/png", "data": "not base64!"}
        return ToolOutput([{"type": "image", "source": bad}])

    result = await call_tool({"picture": picture}, ToolUseBlock("1", "picture", {}))

    assert result.is_error and "must contain raw base64 data" in str(result.content)


def test_an_explicit_schema_with_defs_is_written_in_place() -> None:
    schema = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }

    made = tool(lambda **kw: kw, name="f", input_schema=schema)

    assert made.input_schema["properties"]["p"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
    }
    assert "$defs" not in made.input_schema


async def test_an_agent_closes_the_toolsets_its_runs_used_when_it_is_closed() -> None:
    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    used, unused = _Toys(shout), _Toys(whisper)
    provider = ScriptedProvider(["done"])
    agent = Agent(
        AgentConfig(name="a", provider=provider, tools=[used]),
        plugins=PluginHost(load_entrypoints=False),
    )
    await agent.run("go")
    assert used.closes == 0  # open between runs

    await agent.aclose()

    assert used.closes == 1 and unused.closes == 0


async def test_runs_of_one_orchestrator_share_a_toolset_closed_with_it() -> None:
    from oma_core import AgentConfig, OpenMultiAgent, PluginHost
    from oma_core.testing import ScriptedProvider

    toys = _Toys(shout)
    config = AgentConfig(name="a", provider=ScriptedProvider(["one", "two"]), tools=[toys])
    async with OpenMultiAgent(plugins=PluginHost(load_entrypoints=False)) as oma:
        first = await oma.run_agent(config, "go")
        second = await oma.run_agent(config, "again")
        assert toys.closes == 0

    assert first.success and second.success
    assert toys.listings == 2 and toys.closes == 1


def test_a_toolset_left_open_is_closed_when_its_event_loop_ends() -> None:
    import asyncio

    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    toys = _Toys(shout)

    async def main() -> None:
        config = AgentConfig(name="a", provider=ScriptedProvider(["done"]), tools=[toys])
        await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")
        assert toys.closes == 0

    asyncio.run(main())

    assert toys.closes == 1


async def test_an_agent_without_toolsets_offers_its_own_tools_only() -> None:
    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    provider = ScriptedProvider(["done"])
    config = AgentConfig(name="a", provider=provider, tools=[shout])
    agent = Agent(config, plugins=PluginHost(load_entrypoints=False))

    assert [t.name for t in agent.build_request("go").tools] == ["shout"]
    assert (await agent.run("go")).success
    assert [t.name for t in provider.requests[0].tools] == ["shout"]


# -- toolset kinds: registered by plugins, built from plain configuration -----------------------


def _toolset_host(*specs: Any) -> Any:
    from oma_core import PluginHost, hookimpl

    class Plugin:
        @hookimpl
        def oma_register_toolsets(self) -> list[Any]:
            return list(specs)

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="toys")
    return host


def _toys_from(config: Mapping[str, Any]) -> _Toys:
    toys = _Toys(*[tool(lambda n=n: n, name=n) for n in config.get("tools", [])])
    toys.name = config.get("name", "toys")
    return toys


async def test_a_plugin_registers_a_toolset_kind_built_from_its_plain_config() -> None:
    from oma_core import Agent, AgentConfig
    from oma_core.testing import ScriptedProvider
    from oma_core.toolkit import ToolsetSpec

    host = _toolset_host(ToolsetSpec("toys", _toys_from, "toy tools"))
    toys = host.build_toolset("toys", {"tools": ["ping"]})
    provider = ScriptedProvider([_calls(("1", "ping", {})), "done"])
    result = await Agent(AgentConfig(name="a", provider=provider, tools=[toys]), plugins=host).run(
        "go"
    )

    assert result.success, result.status
    assert provider.requests[1].messages[-1].content[0].content == "ping"
    (info,) = [i for i in host.plugin_info() if i.name == "toys"]
    assert info.toolsets == ("toys",) and list(host.toolset_specs()) == ["toys"]


def test_the_mcp_kind_without_its_plugin_names_the_package_to_install() -> None:
    from oma_core import PluginHost
    from oma_core.errors import NotRegisteredError

    with pytest.raises(NotRegisteredError) as caught:
        PluginHost(load_entrypoints=False).build_toolset("mcp", {"command": "server"})

    assert caught.value.distribution == "oma-mcp" and caught.value.kind == "toolset"
    assert "pip install oma-mcp" in str(caught.value)


def test_a_toolset_factory_whose_product_cannot_list_tools_names_its_plugin() -> None:
    from oma_core.errors import PluginError
    from oma_core.toolkit import ToolsetSpec

    host = _toolset_host(ToolsetSpec("broken", lambda config: object()))

    with pytest.raises(PluginError, match=r"plugin 'toys'.*'broken' returned a object"):
        host.build_toolset("broken", {})


def test_a_toolset_registration_that_returns_no_spec_is_refused_naming_the_hook() -> None:
    from oma_core.errors import PluginError

    with pytest.raises(PluginError, match="oma_register_toolsets must return a list of Toolset"):
        _toolset_host("mcp")


# -- names and schemas a provider can take -------------------------------------------------------


def _anything(**arguments: Any) -> dict[str, Any]:
    return arguments


def _named(text: str = "") -> str:
    return text


@pytest.mark.parametrize(
    "name",
    ["has space", "new\nline", "esc\x1b[31m", "x" * 65, "dotted.name", "naïve", "1st", "-dash", ""],
)
def test_a_tool_name_a_provider_would_refuse_is_a_tool_error_naming_it_and_the_pattern(
    name: str,
) -> None:
    with pytest.raises(ToolError) as raised:
        tool(_named, name=name)

    message = str(raised.value)
    assert "[A-Za-z_][A-Za-z0-9_-]{0,63}" in message
    assert repr(name[:40]) in message or "empty" in message
    assert "\x1b" not in message and "\n" not in message  # the name is shown escaped
    assert len(message) < 400  # a long name is shown cut


@pytest.mark.parametrize("name", ["a", "_private", "get-weather", "A1_b-2", "x" * 64])
def test_a_tool_name_every_provider_takes_is_kept(name: str) -> None:
    assert tool(_named, name=name).name == name


def test_the_output_tools_name_is_reserved_for_local_tools() -> None:
    from oma_core._output import OUTPUT_TOOL_NAME

    def final_result(answer: str) -> str:
        return answer

    with pytest.raises(ToolError, match="reserved") as raised:
        tool(_named, name=OUTPUT_TOOL_NAME)
    assert raised.value.tool == OUTPUT_TOOL_NAME
    with pytest.raises(ToolError, match="reserved"):
        tool(final_result)


async def test_a_toolset_listing_the_output_tools_name_ends_the_run_before_any_call() -> None:
    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    impostor = Tool("final_result", "Call me with anything.", {"type": "object"}, _anything)
    provider = ScriptedProvider(["never"])
    config = AgentConfig(
        name="a", provider=provider, tools=[_Toys(impostor)], output_type=dict[str, int]
    )
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    assert isinstance(result.status.error, ToolError)
    assert "'final_result'" in str(result.status.error) and "toys" in str(result.status.error)
    assert provider.requests == []


async def test_a_toolset_listing_a_name_a_provider_would_refuse_ends_the_run_naming_it() -> None:
    from oma_core import Agent, AgentConfig, PluginHost
    from oma_core.testing import ScriptedProvider

    odd = Tool("two words\x1b", "Odd.", {"type": "object"}, _anything)
    provider = ScriptedProvider(["never"])
    config = AgentConfig(name="a", provider=provider, tools=[_Toys(odd)])
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    assert isinstance(result.status.error, ToolError)
    assert "'two words\\x1b'" in str(result.status.error)
    assert provider.requests == []


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"enum": 5}, "$.properties.a.enum"),
        ({"anyOf": "x"}, "$.properties.a.anyOf"),
        ({"anyOf": [{"type": "string"}, 3]}, "$.properties.a.anyOf[1]"),
        ({"type": 5}, "$.properties.a.type"),
        ({"type": "object", "required": "b"}, "$.properties.a.required"),
        ({"type": "object", "properties": ["b"]}, "$.properties.a.properties"),
        ({"type": "array", "items": 3}, "$.properties.a.items"),
        ({"type": "object", "additionalProperties": "no"}, "$.properties.a.additionalProperties"),
        ("string", "$.properties.a"),
    ],
)
def test_an_input_schema_the_argument_check_cannot_read_is_a_tool_error_naming_the_place(
    bad: Any, where: str
) -> None:
    schema = {"type": "object", "properties": {"a": bad}}

    with pytest.raises(ToolError) as raised:
        tool(_anything, name="f", input_schema=schema)

    assert f"tool 'f': input_schema {where} " in str(raised.value)


async def test_boolean_schemas_are_read_as_json_schema_reads_them() -> None:
    from oma_core.messages import ToolUseBlock
    from oma_core.tools import call_tool

    schema = {"type": "object", "properties": {"a": True, "b": False}}
    made = tool(_anything, name="f", input_schema=schema)

    ok = await call_tool({"f": made}, ToolUseBlock("1", "f", {"a": [1, {"x": None}]}))
    refused = await call_tool({"f": made}, ToolUseBlock("2", "f", {"b": 1}))

    assert not ok.is_error and ok.content == '{"a": [1, {"x": null}]}'
    assert refused.is_error and "input.b" in str(refused.content)


_BOMB_CHILD = """
import tracemalloc
from oma_core.testing.samples import schema_bomb
from oma_core import tool
from oma_core.errors import ToolError
tracemalloc.start()
try:
    tool(lambda **kw: kw, name="bomb", input_schema=schema_bomb(24))
except ToolError as error:
    print("refused:", error)
else:
    print("built")
print("peak", tracemalloc.get_traced_memory()[1])
"""


def test_a_schema_whose_refs_grow_past_the_bound_is_refused_in_bounded_time_and_memory() -> None:
    import resource
    import subprocess
    import sys

    def limits() -> None:  # 24 levels took more than 10 GB and minutes before the bound
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        resource.setrlimit(resource.RLIMIT_CPU, (60, 60))

    done = subprocess.run(
        [sys.executable, "-c", _BOMB_CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limits,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: tool 'bomb': input_schema" in done.stdout
    assert "10000" in done.stdout or "10,000" in done.stdout
    peak = int(done.stdout.split("peak ")[1])
    assert peak < 20_000_000


def test_a_schema_bound_leaves_a_large_ordinary_schema_alone() -> None:
    defs = {
        f"d{i}": {"type": "object", "properties": {"v": {"type": "integer"}}} for i in range(200)
    }
    properties = {f"p{i}": {"$ref": f"#/$defs/d{i}"} for i in range(200)}
    schema = {"type": "object", "properties": properties, "$defs": defs}

    made = tool(_anything, name="wide", input_schema=schema)

    assert made.input_schema["properties"]["p199"]["properties"] == {"v": {"type": "integer"}}


def test_a_schema_nested_past_the_bound_is_a_tool_error_not_a_recursion_error() -> None:
    inner: dict[str, Any] = {"type": "string"}
    for _ in range(150):
        inner = {"type": "object", "properties": {"a": inner}}

    with pytest.raises(ToolError, match="nests schemas deeper than 100 levels"):
        tool(_anything, name="deep", input_schema=inner)
