"""Static types of structured output, checked by ``nox -s types`` (``mypy --strict`` over
this file): ``assert_type`` is a no-op at run time, a wrong type fails the session."""

from __future__ import annotations

from typing import Any, assert_type

import attrs

from oma_core import Agent, AgentConfig, RunResult


@attrs.frozen
class Invoice:
    number: str
    total: float


async def typed() -> None:
    agent = Agent(AgentConfig("a", output_type=Invoice))
    assert_type(agent, Agent[Invoice])
    result = await agent.run("go")
    assert_type(result, RunResult[Invoice])
    assert_type(result.structured, Invoice | None)
    if result.structured is not None:
        assert_type(result.structured.total, float)


async def listed() -> None:
    result = await Agent(AgentConfig("a", output_type=list[Invoice])).run("go")
    assert_type(result.structured, list[Invoice] | None)


async def untyped() -> None:
    plain = Agent(AgentConfig("a"))
    assert_type(plain, Agent[Any])
    schema = Agent(AgentConfig("a", output_type={"type": "object", "properties": {}}))
    assert_type(schema, Agent[Any])
    result: RunResult = await plain.run("go")  # a bare annotation means RunResult[Any]
    assert_type(result.structured, Any | None)


def sync() -> None:
    assert_type(Agent(AgentConfig("a", output_type=int)).run_sync("go"), RunResult[int])
