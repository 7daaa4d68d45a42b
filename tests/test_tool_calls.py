"""Agents run the tools a model calls: typed arguments, errors as tool results, and max_turns."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import attrs
import pytest
from _builders import PNG, Color, scripted_agent, tool_call_turn

from oma_core import (
    Agent,
    AgentConfig,
    PluginHost,
    dump_messages,
    tool,
)
from oma_core.errors import MaxTurnsExceededError, ToolError
from oma_core.messages import ImageBlock, TextBlock, ToolResultBlock
from oma_core.testing import ScriptedProvider


@tool(name="add")
def add_tool(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


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


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant turn calling tools: (id, name, input) each."""
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in items],
    }


def make(
    host: PluginHost, tools: list[Any], *responses: object, **config: Any
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="a", provider=provider, tools=tools, **config), plugins=host)
    return agent, provider


def results_sent(provider: ScriptedProvider, request: int = 1) -> list[ToolResultBlock]:
    turn = provider.requests[request].messages[-1]
    assert turn.role == "user"
    blocks = list(turn.content)
    assert all(isinstance(b, ToolResultBlock) for b in blocks)
    return blocks  # type: ignore[return-value]


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def test_tool_schema_follows_the_typed_signature() -> None:
    agent, provider = scripted_agent(["ok"], tools=[describe])
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
    agent, _ = scripted_agent([tool_call_turn("describe", args), "done"], tools=[describe])
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

    agent, _ = scripted_agent([tool_call_turn("shout", {"text": "hey"}), "done"], tools=[shout])
    result = await agent.run("x")
    assert "HEY" in json.dumps(dump_messages(result.messages)[1]["content"][0]["content"])


async def test_bad_tool_arguments_become_an_error_tool_result() -> None:
    agent, provider = scripted_agent(
        [tool_call_turn("add", {"a": "one"}), "recovered"], tools=[add_tool]
    )
    result = await agent.run("x")
    assert result.success and result.output == "recovered"
    tool_result = dump_messages(result.messages)[1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is True
    assert isinstance(tool_result["content"], str)
    assert len(provider.requests) == 2


async def test_a_raising_tool_becomes_an_error_tool_result(host: PluginHost) -> None:
    def fail(x: int) -> int:
        """Always fails."""
        raise RuntimeError("tool exploded")

    agent, _ = scripted_agent([tool_call_turn("fail", {"x": 1}), "after"], tools=[fail])
    result = await agent.run("x")
    assert result.success
    tool_result = dump_messages(result.messages)[1]["content"][0]
    assert tool_result["is_error"] is True
    assert "tool exploded" in tool_result["content"]

    def broken() -> str:
        raise ValueError("disk on fire")

    agent, provider = make(host, [broken], calls(("t1", "broken", {})), "recovered")
    result = await agent.run("go")
    assert result.success and result.output == "recovered"
    (block,) = results_sent(provider)
    assert block.is_error and "disk on fire" in str(block.content)


async def test_max_turns_ends_an_endless_tool_loop() -> None:
    calls = [tool_call_turn("add", {"a": 1, "b": 1}, call_id=f"c{i}") for i in range(5)]
    agent, provider = scripted_agent([*calls, "never"], tools=[add_tool], max_turns=2)
    result = await agent.run("x")
    assert not result.success and result.status.code == "error"
    assert len(provider.requests) == 2


async def test_an_unknown_tool_call_becomes_an_error_tool_result(host: PluginHost) -> None:
    agent, _ = scripted_agent([tool_call_turn("nope", {}), "after"], tools=[add_tool])
    result = await agent.run("x")
    assert result.success and result.output == "after"
    assert dump_messages(result.messages)[1]["content"][0]["is_error"] is True

    agent, provider = make(host, [add], calls(("t1", "nope", {})), "ok")
    await agent.run("go")
    (block,) = results_sent(provider)
    assert block.is_error and "unknown tool 'nope'" in str(block.content)


async def test_an_optional_tool_argument_allows_null() -> None:
    agent, provider = scripted_agent(["ok"], tools=[describe])
    await agent.run("x")
    assert "null" in json.dumps(_schema(provider, "describe")["properties"]["o"])


async def test_tool_calls_are_answered_in_one_user_turn_in_order(host: PluginHost) -> None:
    async def shout(text: str) -> str:
        return text.upper()

    agent, provider = make(
        host,
        [add, shout],
        calls(("t1", "shout", {"text": "hi"}), ("t2", "add", {"a": 1, "b": 2})),
        "done",
    )
    result = await agent.run("go")
    assert result.success and result.output == "done"
    sent = results_sent(provider)
    assert [(b.tool_use_id, b.content, b.is_error) for b in sent] == [
        ("t1", "HI", False),
        ("t2", "3", False),
    ]
    assert [m.role for m in result.messages] == ["assistant", "user", "assistant"]
    assert [t.name for t in provider.requests[0].tools] == ["add", "shout"]


async def test_a_schema_mismatch_becomes_an_error_result_naming_the_problem(
    host: PluginHost,
) -> None:
    ran: list[int] = []

    def count(n: int) -> int:
        ran.append(n)
        return n

    agent, provider = make(host, [count], calls(("t1", "count", {"n": "three"})), "ok")
    result = await agent.run("go")
    assert result.success
    (block,) = results_sent(provider)
    assert block.is_error
    assert "input.n must be integer, got string" in str(block.content)
    assert ran == []


async def test_json_results_are_dumped_and_parts_are_kept(host: PluginHost) -> None:
    def data() -> dict[str, list[int]]:
        return {"xs": [1, 2]}

    def picture() -> list[Any]:
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": PNG},
        }
        return [{"type": "text", "text": "see"}, image]

    agent, provider = make(
        host, [data, picture], calls(("t1", "data", {}), ("t2", "picture", {})), "ok"
    )
    await agent.run("go")
    first, second = results_sent(provider)
    assert first.content == '{"xs": [1, 2]}'
    assert isinstance(second.content, tuple)
    assert second.content[0] == TextBlock("see")
    assert isinstance(second.content[1], ImageBlock)


async def test_invalid_result_parts_become_an_error_result(host: PluginHost) -> None:
    def bad() -> list[Any]:
        return [
            {
                "type": "image",
                "source": {"type": "url", "media_type": "image/png", "url": "file:///x.png"},
            }
        ]

    agent, provider = make(host, [bad], calls(("t1", "bad", {})), "ok")
    await agent.run("go")
    (block,) = results_sent(provider)
    assert block.is_error and "HTTP" in str(block.content)


async def test_max_turns_bounds_model_calls(host: PluginHost) -> None:
    loop = [calls((f"t{i}", "add", {"a": i, "b": 1})) for i in range(5)]
    agent, provider = make(host, [add], *loop, max_turns=3)
    result = await agent.run("go")
    assert not result.success and result.status.code == "error"
    assert isinstance(result.status.error, MaxTurnsExceededError)
    assert len(provider.requests) == 3


async def test_tool_events_are_streamed(host: PluginHost) -> None:
    agent, _ = make(host, [add], calls(("t1", "add", {"a": 1, "b": 1})), "two")
    events = [event async for event in agent.stream("go")]
    types = [event.type for event in events]
    assert types.index("tool_use") < types.index("tool_result") < types.index("done")
    assert types.count("tool_use") == 1 and types.count("tool_result") == 1
    assert events[types.index("tool_result")].data.content == "2"


async def test_tools_are_not_re_executed_when_a_later_call_is_retried(host: PluginHost) -> None:
    from oma_core.errors import ProviderError

    ran: list[int] = []

    def once(n: int) -> int:
        ran.append(n)
        return n

    agent, _ = make(
        host,
        [once],
        calls(("t1", "once", {"n": 1})),
        ProviderError("busy", status_code=503),
        "ok",
        retry_delay=0.0,
    )
    result = await agent.run("go")
    assert result.success and ran == [1]


def test_two_tools_with_one_name_are_refused(host: PluginHost) -> None:
    with pytest.raises(ToolError, match="add"):
        Agent(AgentConfig(name="a", tools=[add, tool(add)]), plugins=host)


async def test_a_tool_returning_one_image_sends_it_as_media(host: PluginHost) -> None:
    from oma_core import image_base64

    def snapshot() -> Any:
        return image_base64(PNG, "image/png")

    agent, provider = make(host, [snapshot], calls(("t1", "snapshot", {})), "ok")
    assert (await agent.run("go")).success
    (block,) = results_sent(provider)
    assert not block.is_error
    assert isinstance(block.content, tuple) and isinstance(block.content[0], ImageBlock)


async def test_a_tool_returning_a_video_gets_an_error_result_naming_it(host: PluginHost) -> None:
    from oma_core import video_url

    def clip() -> Any:
        return video_url("https://example.com/clip.mp4")

    agent, provider = make(host, [clip], calls(("t1", "clip", {})), "ok")
    assert (await agent.run("go")).success
    (block,) = results_sent(provider)
    assert block.is_error
    assert "tool 'clip' returned an unusable result" in str(block.content)
    assert "video" in str(block.content)


async def test_a_tool_result_image_is_checked_against_the_provider_capabilities(
    host: PluginHost,
) -> None:
    from oma_core import image_base64
    from oma_core.capabilities import BlockSupport, Capabilities
    from oma_core.errors import UnsupportedContentBlockError

    def snapshot() -> Any:
        return [image_base64(PNG, "image/png")]

    provider = ScriptedProvider(
        [calls(("t1", "snapshot", {})), "never"],
        display_name="No Tool Media",
        capabilities=Capabilities(
            (
                BlockSupport("text"),
                BlockSupport("tool_use", frozenset({"assistant"})),
                BlockSupport("tool_result", frozenset({"user"})),
            )
        ),
    )
    agent = Agent(
        AgentConfig(name="a", provider=provider, tools=[snapshot], max_retries=3), plugins=host
    )
    result = await agent.run("go")
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert "inside a tool result" in str(result.status.error)
    assert len(provider.requests) == 1  # refused before the second call, never retried
