"""Agent.stream: its events, exactly one done at the end, and closing it early."""

from __future__ import annotations

from typing import Any

from oma_core import (
    Agent,
    AgentConfig,
    PluginHost,
    ProviderError,
    RunResult,
    StreamEvent,
    tool,
)
from oma_core.testing import Delayed, ScriptedProvider


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


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


async def test_stream_ends_with_exactly_one_done_carrying_the_run_result() -> None:
    agent, _ = _agent(["hello there"])
    events = [event async for event in agent.stream("x")]
    assert all(isinstance(e, StreamEvent) for e in events)
    assert [e.type for e in events].count("done") == 1
    assert events[-1].type == "done"
    assert isinstance(events[-1].data, RunResult)
    assert events[-1].data.output == "hello there"
    assert "".join(e.data for e in events if e.type == "text") == "hello there"
    allowed = {"text", "reasoning", "tool_use", "tool_result", "error", "done"}
    assert {e.type for e in events} <= allowed


async def test_a_failed_stream_yields_an_error_event_with_the_exception_before_done() -> None:
    boom = ProviderError("bad request", status_code=400)
    agent, _ = _agent([boom])
    events = [event async for event in agent.stream("x")]
    types = [e.type for e in events]
    assert types.count("done") == 1 and types[-1] == "done"
    assert types.count("error") == 1 and types.index("error") < types.index("done")
    assert events[types.index("error")].data is boom
    assert events[-1].data.success is False


async def test_stream_works_as_an_async_context_manager() -> None:
    agent, _ = _agent(["hi"])
    async with agent.stream([_user("x")]) as events:
        collected = [event async for event in events]
    assert collected[-1].type == "done"


async def test_stream_context_exits_cleanly_when_left_early() -> None:
    agent, _ = _agent([Delayed(0.05, "hi")])
    async with agent.stream("x") as events:
        async for _ in events:
            break
    # a second stream still works: the first was closed
    agent2, _ = _agent(["again"])
    assert (await agent2.run("x")).output == "again"


async def test_stream_reports_tool_use_and_tool_result_events() -> None:
    agent, _ = _agent([_tool_call("add", {"a": 1, "b": 2}), "3"], tools=[add])
    events = [event async for event in agent.stream("x")]
    types = [e.type for e in events]
    assert "tool_use" in types and "tool_result" in types
    assert types.index("tool_use") < types.index("tool_result") < types.index("done")


async def test_reasoning_reaches_the_stream_as_reasoning_events() -> None:
    turn = _assistant({"type": "reasoning", "text": "thinking hard"}, "answer")
    agent, _ = _agent([turn])
    events = [e async for e in agent.stream("x")]
    assert "thinking hard" in "".join(e.data for e in events if e.type == "reasoning")
    assert events[-1].data.output == "answer"
