"""The executor conformance suite: the same task graphs give the same outcome on every executor.

An executor plugin subclasses ``ExecutorConformance`` in its tests, names its executor and
supplies its options, and inherits every ``test_...`` method::

    # tests/test_ray_conformance.py
    import pytest
    from oma_core.testing.executors import ExecutorConformance

    class TestRayConformance(ExecutorConformance):
        executor_name = "ray"

        @pytest.fixture
        def executor_options(self, ray_cluster):       # the plugin's own cluster fixture
            return {"address": ray_cluster}

Each test runs one graph — independent tasks, a chain, a diamond, a failing dependency, a
terminal and a retryable error under task retries, a cancelled run, a shared ``Budget`` that
runs out mid-graph — twice: on the in-process ``local`` executor and on the executor under
test, and holds the two to the same results (status, attempts, output, usage, the error's type,
text and fields, per task and for the team), the same progress events per task (type, agent,
the data that does not name a run), and the same ``Budget`` spent. The graphs are small and
each task makes one model call, so a suite on a real cluster stays short.

The agents run on ``GraphProvider``, a provider object (it is pickled to remote workers with
the agent's config) whose answer depends only on the prompt, so a run anywhere answers alike:
``[terminal]`` in a task's description fails with a 400, ``[retryable]`` with a 503, ``[slow]``
waits until cancelled (and leaves a marker file saying so), anything else answers with the
description's first line and the titles of the dependencies whose outputs the prompt carries.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest

from .._config import AgentConfig
from ..budgets import Budget
from ..capabilities import Capabilities
from ..errors import ProviderError
from ..messages import LLMMessage, TextBlock, ToolResultBlock, ToolUseBlock
from ..orchestrator import OpenMultiAgent
from ..plugins import PluginHost
from ..progress import ProgressEvent
from ..providers import ProviderRequest, ProviderResponse, Usage
from ..teams import TaskSpec, Team, TeamRunResult
from ..tools import Tool, tool

__all__ = [
    "CALL_USAGE",
    "ExecutorConformance",
    "GraphProvider",
    "MarkedToolset",
    "ToolCallingProvider",
    "outcome_of",
]

#: What every successful call of ``GraphProvider`` reports.
CALL_USAGE = Usage(20, 5)

_DEPENDENCY = re.compile(r"^## (.+)$", re.M)


@attrs.frozen
class GraphProvider:
    """A provider whose answer is a pure function of the prompt (see the module docstring).

    ``markers`` is a directory where a ``[slow]`` call writes ``started-<pid>`` when it is in
    flight and ``cancelled-<pid>`` when it is cancelled: the proof, from any process, that
    cancelling the driver's run reached the call.
    """

    markers: str | None = None
    name: ClassVar[str] = "graph"
    display_name: ClassVar[str] = "Graph test provider"
    capabilities: ClassVar[Capabilities] = Capabilities.text_only()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        prompt = "".join(
            block.text for block in request.messages[-1].content if isinstance(block, TextBlock)
        )
        if "[terminal]" in prompt:
            raise ProviderError("the request was refused", status_code=400, provider="graph")
        if "[retryable]" in prompt:
            raise ProviderError("the service is busy", status_code=503, provider="graph")
        if "[slow]" in prompt:
            if self.markers is not None:
                _mark(self.markers, "started")  # the call is in flight: cancel it now
            try:
                await asyncio.sleep(3600)
            finally:
                if self.markers is not None:
                    _mark(self.markers, "cancelled")
        first = prompt.splitlines()[0] if prompt else ""
        dependencies = _DEPENDENCY.findall(prompt)
        text = first + (f" <- {', '.join(dependencies)}" if dependencies else "")
        message = LLMMessage(role="assistant", content=(TextBlock(text),))
        return ProviderResponse(message, CALL_USAGE, stop_reason="end_turn")

    async def aclose(self) -> None:
        return None


@attrs.frozen
class ToolCallingProvider(GraphProvider):
    """``GraphProvider`` that first calls the tool ``shout`` on the prompt's first line, then
    answers with the tool's result: a run whose answer proves the tool ran."""

    capabilities: ClassVar[Capabilities] = Capabilities.everything()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        last = request.messages[-1].content
        results = [block for block in last if isinstance(block, ToolResultBlock)]
        if results:
            text = str(results[0].content)
            message = LLMMessage(role="assistant", content=(TextBlock(text),))
            return ProviderResponse(message, CALL_USAGE, stop_reason="end_turn")
        prompt = "".join(block.text for block in last if isinstance(block, TextBlock))
        first = prompt.splitlines()[0] if prompt else ""
        call = ToolUseBlock("c1", "shout", {"text": first})
        message = LLMMessage(role="assistant", content=(call,))
        return ProviderResponse(message, CALL_USAGE, stop_reason="tool_use")


@attrs.frozen
class MarkedToolset:
    """A toolset (``oma_core.toolkit.Toolset``) with one tool, ``shout``, that pickles as its
    settings — as an MCP server's does — and leaves ``listed-<pid>`` and ``closed-<pid>``
    marker files in ``markers``: the proof of which process started it and that it was closed
    there."""

    markers: str
    name: ClassVar[str] = "marked"

    async def list_tools(self) -> list[Tool]:
        _mark(self.markers, "listed")

        def shout(text: str) -> str:
            """Shout the text."""
            return text.upper()

        return [tool(shout)]

    async def aclose(self) -> None:
        _mark(self.markers, "closed")


def _mark(markers: str, what: str) -> None:
    Path(markers, f"{what}-{os.getpid()}").write_text(what)


def _markers(where: Path, what: str = "cancelled") -> list[Path]:
    return list(where.glob(f"{what}-*"))


def _error_of(error: BaseException | None) -> Any:
    if error is None:
        return None
    fields = {k: v for k, v in vars(error).items() if not k.startswith("_")}
    return (type(error).__name__, str(error), fields)


def outcome_of(result: TeamRunResult) -> dict[str, Any]:
    """The parts of a team run every executor must agree on, as plain comparable data."""
    return {
        "success": result.success,
        "usage": result.usage,
        "tasks": {
            title: {
                "status": record.status,
                "assignee": record.assignee,
                "attempts": record.attempts,
                "output": record.output,
                "usage": record.usage,
                "error": _error_of(record.error),
                "result_status": None if record.result is None else record.result.status.code,
                "result_messages": None if record.result is None else record.result.messages,
            }
            for title, record in result.tasks.items()
        },
    }


_KEPT_DATA = {"prompt", "success", "output", "usage", "status", "code", "attempt", "kind"}


def _event_of(event: ProgressEvent) -> tuple[Any, ...]:
    data = {k: v for k, v in event.data.items() if k in _KEPT_DATA}
    if "error" in event.data:
        data["error"] = _error_of(event.data["error"])
    return (event.type, event.agent, tuple(sorted(data.items())))


def _per_task(events: Iterable[ProgressEvent]) -> dict[str | None, list[tuple[Any, ...]]]:
    """Each task's events in order (tasks run concurrently, so only that order is shared)."""
    by_task: dict[str | None, list[tuple[Any, ...]]] = {}
    for event in events:
        by_task.setdefault(event.task, []).append(_event_of(event))
    return by_task


class ExecutorConformance:
    """Inherit in an executor plugin's tests; set ``executor_name``, override
    ``executor_options`` (a fixture) when the executor needs options."""

    executor_name: ClassVar[str] = "local"
    #: How long the cancellation test waits for the cancelled call's marker (seconds).
    cancel_marker_timeout: ClassVar[float] = 60.0

    @pytest.fixture
    def executor_options(self) -> Mapping[str, Any]:
        return {}

    # -- running a graph on both executors --------------------------------------------------

    def team(self, markers: str | None = None, max_concurrency: int = 2) -> Team:
        provider = GraphProvider(markers)
        agents = [AgentConfig(n, provider=provider, max_retries=0) for n in ("ann", "bob")]
        return Team("conformance", agents, max_concurrency=max_concurrency)

    async def run_graph(
        self,
        executor: str,
        options: Mapping[str, Any],
        tasks: Sequence[TaskSpec],
        *,
        team: Team | None = None,
        budget: Budget | None = None,
    ) -> tuple[TeamRunResult, list[ProgressEvent]]:
        events: list[ProgressEvent] = []
        async with OpenMultiAgent(
            on_progress=events.append,
            plugins=PluginHost.default(),
            executor=executor,
            executor_options=options,
        ) as oma:
            result = await oma.run_tasks(team or self.team(), tasks, budget=budget)
        return result, events

    async def same_on_both(
        self,
        options: Mapping[str, Any],
        tasks: Sequence[TaskSpec],
        *,
        team: Team | None = None,
        budget_tokens: int | None = None,
    ) -> tuple[TeamRunResult, list[ProgressEvent]]:
        """Run ``tasks`` locally and on the executor under test; assert they agree."""
        runs = []
        for executor, given in (("local", {}), (self.executor_name, options)):
            budget = None if budget_tokens is None else Budget(max_tokens=budget_tokens)
            result, events = await self.run_graph(executor, given, tasks, team=team, budget=budget)
            runs.append((result, events, budget))
        (local, local_events, local_budget), (tested, events, budget) = runs
        assert outcome_of(tested) == outcome_of(local)
        assert _per_task(events) == _per_task(local_events)
        if budget is not None and local_budget is not None:
            assert (budget.used_tokens, budget.used_cost) == (
                local_budget.used_tokens,
                local_budget.used_cost,
            )
        return tested, events

    # -- the graphs -----------------------------------------------------------------------------

    async def test_independent_tasks_all_complete(self, executor_options: Any) -> None:
        tasks = [TaskSpec(f"t{i}", f"Part {i}.") for i in range(4)]
        result, _ = await self.same_on_both(executor_options, tasks)
        assert result.success
        assert [r.output for r in result.tasks.values()] == [f"Part {i}." for i in range(4)]
        assert result.usage == Usage(80, 20)

    async def test_a_chain_runs_in_order_and_carries_outputs(self, executor_options: Any) -> None:
        tasks = [
            TaskSpec("a", "First."),
            TaskSpec("b", "Second.", depends_on="a"),
            TaskSpec("c", "Third.", depends_on="b"),
        ]
        result, events = await self.same_on_both(executor_options, tasks)
        assert result.tasks["c"].output == "Third. <- b"
        starts = [e.task for e in events if e.type == "task_start"]
        assert starts == ["a", "b", "c"]

    async def test_a_diamond_joins_both_branches(self, executor_options: Any) -> None:
        tasks = [
            TaskSpec("top", "Top."),
            TaskSpec("left", "Left.", depends_on="top"),
            TaskSpec("right", "Right.", depends_on="top"),
            TaskSpec("bottom", "Bottom.", depends_on=["left", "right"]),
        ]
        result, _ = await self.same_on_both(executor_options, tasks)
        assert result.success and result.tasks["bottom"].output == "Bottom. <- left, right"
        assert result.usage == Usage(80, 20)

    async def test_a_failed_dependency_skips_what_waits_for_it(self, executor_options: Any) -> None:
        tasks = [
            TaskSpec("broken", "Fail [terminal]."),
            TaskSpec("after", "After.", depends_on="broken"),
            TaskSpec("aside", "Aside."),
        ]
        result, _ = await self.same_on_both(executor_options, tasks)
        statuses = {title: r.status for title, r in result.tasks.items()}
        assert statuses == {"broken": "failed", "after": "skipped", "aside": "completed"}
        error = result.tasks["broken"].error
        assert isinstance(error, ProviderError) and error.status_code == 400

    async def test_only_retryable_errors_are_retried(self, executor_options: Any) -> None:
        tasks = [
            TaskSpec("terminal", "Refused [terminal].", max_retries=2),
            TaskSpec("transient", "Busy [retryable].", max_retries=2),
        ]
        result, events = await self.same_on_both(executor_options, tasks)
        assert result.tasks["terminal"].attempts == 1
        assert result.tasks["transient"].attempts == 3
        retries = [e.data["attempt"] for e in events if e.type == "task_retry"]
        assert retries == [2, 3]

    async def test_a_shared_budget_runs_out_mid_graph(self, executor_options: Any) -> None:
        tasks = [TaskSpec("0", "Step 0.")] + [
            TaskSpec(str(i), f"Step {i}.", depends_on=str(i - 1)) for i in range(1, 4)
        ]
        result, _ = await self.same_on_both(executor_options, tasks, budget_tokens=60)
        statuses = [r.status for r in result.tasks.values()]
        assert statuses == ["completed", "completed", "failed", "skipped"]
        stopped = result.tasks["2"].result
        assert stopped is not None and stopped.status.code == "budget_exhausted"
        assert result.usage == Usage(60, 15)  # the call that passed the cap is counted

    async def test_an_agents_toolset_is_started_and_closed_where_its_task_runs(
        self, executor_options: Any, tmp_path: Path
    ) -> None:
        markers = tmp_path / "toolset"
        markers.mkdir()
        agent = AgentConfig(
            "ann",
            provider=ToolCallingProvider(),
            # AgentConfig.tools is typed as tools and functions; a toolset is taken too.
            tools=[MarkedToolset(str(markers))],  # type: ignore[list-item]
            max_retries=0,
        )
        team = Team("conformance", [agent], max_concurrency=2)
        tasks = [TaskSpec("a", "Shout this."), TaskSpec("b", "And this.", depends_on="a")]
        result, _ = await self.same_on_both(executor_options, tasks, team=team)

        assert result.success
        assert [r.output for r in result.tasks.values()] == ["SHOUT THIS.", "AND THIS."]
        listed = {p.name.removeprefix("listed-") for p in _markers(markers, "listed")}
        closed = {p.name.removeprefix("closed-") for p in _markers(markers, "closed")}
        assert listed and listed == closed  # closed in every process that started it

    async def test_cancelling_the_run_cancels_the_task_in_flight(
        self, executor_options: Any, tmp_path: Path
    ) -> None:
        oma = OpenMultiAgent(
            plugins=PluginHost.default(),
            executor=self.executor_name,
            executor_options=executor_options,
        )
        team = self.team(str(tmp_path))
        tasks = [TaskSpec("slow", "Wait [slow]."), TaskSpec("next", "N.", depends_on="slow")]
        run = asyncio.ensure_future(oma.run_tasks(team, tasks))
        # Cancel once the call is in flight (its marker, from whatever process runs it): a run
        # cancelled before its call starts proves nothing about cancelling a call.
        for _ in range(int(self.cancel_marker_timeout * 20)):
            if _markers(tmp_path, "started") or run.done():
                break
            await asyncio.sleep(0.05)
        assert _markers(tmp_path, "started"), "the slow call never started"
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
        for _ in range(int(self.cancel_marker_timeout * 20)):
            if _markers(tmp_path):
                break
            await asyncio.sleep(0.05)
        assert _markers(tmp_path), "the call in flight was never cancelled"
