"""Inside a tool: ``current_tool_call()`` names the call being run, and
``report_tool_progress`` reaches the run's observers as ``tool_progress`` events."""

from __future__ import annotations

from typing import Any

import pytest

from oma_core import (
    AgentConfig,
    OpenMultiAgent,
    ProgressEvent,
    ToolUseBlock,
    current_tool_call,
    tool,
)
from oma_core.errors import ToolError
from oma_core.progress import report_tool_progress
from oma_core.testing import ScriptedProvider


def _use(name: str, id: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": id, "name": name, "input": arguments or {}}
    return {"role": "assistant", "content": [block]}


async def _run(tools: list[Any], *responses: Any) -> tuple[Any, list[ProgressEvent]]:
    events: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=events.append)
    config = AgentConfig(name="a", provider=ScriptedProvider([*responses, "done"]), tools=tools)
    result = await oma.run_agent(config, "go")
    return result, events


async def test_a_tool_sees_the_call_it_runs_for() -> None:
    seen: list[ToolUseBlock | None] = []

    async def which() -> str:
        seen.append(current_tool_call())
        return "ok"

    result, _ = await _run([tool(which)], _use("which", "c7"))

    assert result.success, result.status
    (block,) = seen
    assert block is not None and block.id == "c7" and block.name == "which"


def test_outside_a_tool_there_is_no_current_call_and_progress_goes_nowhere() -> None:
    assert current_tool_call() is None
    report_tool_progress(1, 2, "nothing listens")  # no error, no event


async def test_an_async_tools_progress_reaches_the_observers_in_order() -> None:
    async def count(n: int) -> str:
        for i in range(1, n + 1):
            report_tool_progress(i, n, f"step {i}")
        return "counted"

    result, events = await _run([tool(count)], _use("count", "c1", {"n": 3}))

    assert result.success, result.status
    progress = [e for e in events if e.type == "tool_progress"]
    assert [e.data for e in progress] == [
        {"tool": "count", "call_id": "c1", "progress": i, "total": 3, "message": f"step {i}"}
        for i in (1, 2, 3)
    ]
    assert all(e.agent == "a" for e in progress)
    kinds = [e.type for e in events]
    assert kinds.index("agent_start") < kinds.index("tool_progress") < kinds.index("agent_complete")


async def test_a_sync_tool_reports_from_its_thread() -> None:
    def halves() -> str:
        block = current_tool_call()
        report_tool_progress(0.5, message=None if block is None else block.id)
        report_tool_progress(1.0)
        return "done"

    result, events = await _run([tool(halves)], _use("halves", "c2"))

    assert result.success, result.status
    progress = [e.data for e in events if e.type == "tool_progress"]
    assert [(d["progress"], d["total"], d["message"]) for d in progress] == [
        (0.5, None, "c2"),
        (1.0, None, None),
    ]


async def test_after_the_tool_returns_the_call_is_no_longer_current() -> None:
    async def noop() -> str:
        return "ok"

    result, _ = await _run([tool(noop)], _use("noop", "c3"))

    assert result.success
    assert current_tool_call() is None


@pytest.mark.parametrize(
    ("progress", "total", "message"),
    [("1", None, None), (True, None, None), (float("nan"), None, None), (1, "2", None), (1, 2, 3)],
)
def test_progress_that_is_not_a_number_is_refused(progress: Any, total: Any, message: Any) -> None:
    with pytest.raises(ToolError, match="report_tool_progress"):
        report_tool_progress(progress, total, message)
