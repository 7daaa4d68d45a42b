"""Agents run the tools a model calls: typed arguments, errors as tool results, and max_turns."""

from __future__ import annotations

import asyncio
import enum
import json
from typing import Any, Literal

import attrs

from oma_core import (
    Agent,
    AgentConfig,
    PluginHost,
    dump_messages,
    tool,
)
from oma_core.testing import ScriptedProvider


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _tool_call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return _assistant({"type": "tool_use", "id": call_id, "name": name, "input": args})


def _agent(
    responses: list[Any], host: PluginHost | None = None, **config: Any
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="a", provider=provider, **config), plugins=host)
    return agent, provider


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.define
class Point:
    x: int
    y: int


received: dict[str, Any] = {}


@tool
def describe(
    s: str,
    i: int,
    f: float,
    b: bool,
    mode: Literal["fast", "slow"],
    color: Color,
    xs: list[int],
    d: dict[str, float],
    p: Point,
    o: int | None = None,
) -> str:
    """Describe the arguments."""
    received.update(s=s, i=i, f=f, b=b, mode=mode, color=color, xs=xs, d=d, p=p, o=o)
    return "described"


def _schema(provider: ScriptedProvider, name: str) -> dict[str, Any]:
    for definition in provider.requests[0].tools:
        if definition.name == name:
            return dict(definition.input_schema)
    raise AssertionError(f"no tool {name}")


async def test_tool_schema_follows_the_typed_signature() -> None:
    agent, provider = _agent(["ok"], tools=[describe])
    await agent.run("x")
    schema = _schema(provider, "describe")
    assert schema["type"] == "object"
    props = schema["properties"]
    assert props["s"]["type"] == "string"
    assert props["i"]["type"] == "integer"
    assert props["f"]["type"] == "number"
    assert props["b"]["type"] == "boolean"
    assert set(props["mode"]["enum"]) == {"fast", "slow"}
    assert set(props["color"]["enum"]) == {"red", "blue"}
    assert props["xs"]["type"] == "array" and props["xs"]["items"]["type"] == "integer"
    assert props["d"]["type"] == "object"
    assert props["p"]["type"] == "object" and set(props["p"]["properties"]) == {"x", "y"}
    assert "o" in props
    assert set(schema["required"]) == {"s", "i", "f", "b", "mode", "color", "xs", "d", "p"}
    assert provider.requests[0].tools[0].description.startswith("Describe the arguments")


async def test_tool_arguments_are_converted_to_the_annotated_types() -> None:
    args = {
        "s": "x",
        "i": 1,
        "f": 2.5,
        "b": True,
        "mode": "fast",
        "color": "blue",
        "xs": [1, 2],
        "d": {"k": 1.0},
        "p": {"x": 1, "y": 2},
    }
    agent, _ = _agent([_tool_call("describe", args), "done"], tools=[describe])
    result = await agent.run("x")
    assert result.success
    assert received["color"] is Color.BLUE
    assert received["p"] == Point(1, 2)
    assert received["o"] is None and received["xs"] == [1, 2]


async def test_an_async_tool_is_awaited() -> None:
    @tool
    async def shout(text: str) -> str:
        """Shout."""
        await asyncio.sleep(0)
        return text.upper()

    agent, _ = _agent([_tool_call("shout", {"text": "hey"}), "done"], tools=[shout])
    result = await agent.run("x")
    assert "HEY" in json.dumps(dump_messages(result.messages)[1]["content"][0]["content"])


async def test_bad_tool_arguments_become_an_error_tool_result() -> None:
    agent, provider = _agent([_tool_call("add", {"a": "one"}), "recovered"], tools=[add])
    result = await agent.run("x")
    assert result.success and result.output == "recovered"
    tool_result = dump_messages(result.messages)[1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is True
    assert isinstance(tool_result["content"], str)
    assert len(provider.requests) == 2


async def test_a_raising_tool_becomes_an_error_tool_result() -> None:
    @tool
    def fail(x: int) -> int:
        """Always fails."""
        raise RuntimeError("tool exploded")

    agent, _ = _agent([_tool_call("fail", {"x": 1}), "after"], tools=[fail])
    result = await agent.run("x")
    assert result.success
    tool_result = dump_messages(result.messages)[1]["content"][0]
    assert tool_result["is_error"] is True
    assert "tool exploded" in tool_result["content"]


async def test_max_turns_ends_an_endless_tool_loop() -> None:
    calls = [_tool_call("add", {"a": 1, "b": 1}, call_id=f"c{i}") for i in range(5)]
    agent, provider = _agent([*calls, "never"], tools=[add], max_turns=2)
    result = await agent.run("x")
    assert not result.success and result.status.code == "error"
    assert len(provider.requests) == 2


async def test_an_unknown_tool_call_becomes_an_error_tool_result() -> None:
    agent, _ = _agent([_tool_call("nope", {}), "after"], tools=[add])
    result = await agent.run("x")
    assert result.success and result.output == "after"
    assert dump_messages(result.messages)[1]["content"][0]["is_error"] is True


async def test_an_optional_tool_argument_allows_null() -> None:
    agent, provider = _agent(["ok"], tools=[describe])
    await agent.run("x")
    assert "null" in json.dumps(_schema(provider, "describe")["properties"]["o"])
