"""Teams: OpenMultiAgent.run_tasks / run_team, each task a run_agent with the task's title;
plans from a coordinator, and their progress."""

from __future__ import annotations

import asyncio
import json

import pytest
from _builders import builtin_host, text_block, user_turn
from _waiting import until

from oma_core import (
    Agent,
    AgentConfig,
    InvalidMessageError,
    LLMMessage,
    OpenMultiAgent,
    ProgressEvent,
    ProviderError,
    TaskSpec,
    Team,
    TextBlock,
)
from oma_core.errors import PlanError
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderRequest, ProviderResponse, Usage
from oma_core.testing import Delayed, ScriptedProvider


def _oma(events: list[ProgressEvent]) -> OpenMultiAgent:
    return OpenMultiAgent(on_progress=events.append, plugins=PluginHost(load_entrypoints=False))


async def test_run_tasks_reports_task_titles_in_progress_events() -> None:
    events: list[ProgressEvent] = []
    writer = AgentConfig("writer", provider=ScriptedProvider(["draft", "final"]))
    team = Team("t", [writer])
    tasks = [
        TaskSpec("draft", "Write a draft."),
        TaskSpec("polish", "Polish it.", depends_on=["draft"]),
    ]
    outcome = await _oma(events).run_tasks(team, tasks)
    assert outcome.success
    assert outcome.tasks["polish"].status == "completed"
    starts = [(e.task, e.agent) for e in events if e.type == "agent_start"]
    assert starts == [("draft", "writer"), ("polish", "writer")]
    assert [e.type for e in events if e.type.startswith("task_")] == [
        "task_start",
        "task_complete",
        "task_start",
        "task_complete",
    ]


async def test_run_team_plans_runs_and_answers() -> None:
    events: list[ProgressEvent] = []
    plan = {
        "tasks": [{"title": "look", "description": "Look.", "assignee": "worker", "depends_on": []}]
    }
    coordinator = AgentConfig("lead", provider=ScriptedProvider([json.dumps(plan), "all done"]))
    worker = AgentConfig("worker", provider=ScriptedProvider(["seen"]))
    outcome = await _oma(events).run_team(
        Team("t", [worker]), "Look around", coordinator=coordinator
    )
    assert outcome.success and outcome.output == "all done"
    assert outcome.tasks["look"].output == "seen"
    assert [e.agent for e in events if e.type == "agent_start"] == ["lead", "worker", "lead"]


class _Gauge:
    """A provider that answers after a short wait and records how many calls overlap."""

    name = "gauge"

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.prompts: list[str] = []

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        self.now += 1
        self.peak = max(self.peak, self.now)
        self.prompts.append(request.messages[-1].content[0].text)  # type: ignore[union-attr]
        try:
            await asyncio.sleep(0.01)
        finally:
            self.now -= 1
        return ProviderResponse(LLMMessage("assistant", (TextBlock("done"),)), Usage(2, 1))


async def test_max_concurrency_bounds_the_tasks_running_at_once() -> None:
    gauge = _Gauge()
    team = Team("t", [AgentConfig("a", provider=gauge)], max_concurrency=2)
    tasks = [TaskSpec(f"task {i}", f"Do {i}.") for i in range(6)]
    outcome = await _oma([]).run_tasks(team, tasks)
    assert outcome.success
    assert gauge.peak == 2
    assert outcome.usage == Usage(12, 6)


async def test_a_task_starts_after_its_dependencies_and_sees_their_output() -> None:
    events: list[ProgressEvent] = []
    first = AgentConfig("first", provider=ScriptedProvider(["facts: 42"]))
    second_provider = ScriptedProvider(["summary"])
    second = AgentConfig("second", provider=second_provider)
    tasks = [
        TaskSpec("summarise", "Summarise the facts.", assignee="second", depends_on=["gather"]),
        TaskSpec("gather", "Gather facts.", assignee="first"),
    ]
    outcome = await _oma(events).run_tasks(Team("t", [first, second]), tasks)
    assert outcome.success
    assert "Summarise the facts." in second_provider.text_of(0)
    assert "facts: 42" in second_provider.text_of(0)
    order = [(e.type, e.task) for e in events if e.type in ("task_start", "task_complete")]
    assert order == [
        ("task_start", "gather"),
        ("task_complete", "gather"),
        ("task_start", "summarise"),
        ("task_complete", "summarise"),
    ]


async def test_a_failed_task_skips_its_dependents_and_fails_the_team() -> None:
    events: list[ProgressEvent] = []
    key = "sk-ant-api03-" + "K" * 30
    broken = AgentConfig(
        "broken", provider=ScriptedProvider([ProviderError(f"bad {key}", status_code=400)])
    )
    fine = AgentConfig("fine", provider=ScriptedProvider(["ok"]))
    tasks = [
        TaskSpec("a", "A.", assignee="broken"),
        TaskSpec("b", "B.", assignee="fine", depends_on=["a"]),
        TaskSpec("c", "C.", assignee="fine", depends_on=["b"]),
        TaskSpec("d", "D.", assignee="fine"),
    ]
    outcome = await _oma(events).run_tasks(Team("t", [broken, fine]), tasks)
    assert not outcome.success
    statuses = {title: record.status for title, record in outcome.tasks.items()}
    assert statuses == {"a": "failed", "b": "skipped", "c": "skipped", "d": "completed"}
    (failed,) = [e for e in events if e.type == "task_failed"]
    assert failed.task == "a" and isinstance(failed.data["error"], ProviderError)
    assert key not in str(failed.data["error"])
    assert {e.task for e in events if e.type == "task_skipped"} == {"b", "c"}
    assert not [e for e in events if e.type == "agent_start" and e.task in ("b", "c")]


async def test_a_task_is_retried_as_often_as_its_spec_says() -> None:
    events: list[ProgressEvent] = []
    flaky = ScriptedProvider(
        [ProviderError("busy", status_code=503), ProviderError("busy", status_code=503), "ok"]
    )
    team = Team("t", [AgentConfig("a", provider=flaky, max_retries=0)])  # no per-call ladder
    outcome = await _oma(events).run_tasks(team, [TaskSpec("job", "Do it.", max_retries=2)])
    assert outcome.success
    assert outcome.tasks["job"].attempts == 3
    assert outcome.tasks["job"].output == "ok"
    assert [e.data["attempt"] for e in events if e.type == "task_retry"] == [2, 3]
    assert [e.type for e in events if e.type.startswith("task_")][-1] == "task_complete"


async def test_a_task_out_of_retries_fails() -> None:
    flaky = ScriptedProvider([ProviderError("busy", status_code=503)] * 2)
    team = Team("t", [AgentConfig("a", provider=flaky, max_retries=0)])  # no per-call ladder
    outcome = await _oma([]).run_tasks(team, [TaskSpec("job", "Do it.", max_retries=1)])
    assert not outcome.success
    assert outcome.tasks["job"].status == "failed"
    assert outcome.tasks["job"].attempts == 2
    assert isinstance(outcome.tasks["job"].error, ProviderError)


async def test_unassigned_tasks_are_shared_out_in_turn() -> None:
    a = AgentConfig("a", provider=ScriptedProvider(["1", "3"]))
    b = AgentConfig("b", provider=ScriptedProvider(["2"]))
    tasks = [TaskSpec("one", "1"), TaskSpec("two", "2"), TaskSpec("three", "3")]
    outcome = await _oma([]).run_tasks(Team("t", [a, b]), tasks)
    assert [outcome.tasks[t].assignee for t in ("one", "two", "three")] == ["a", "b", "a"]


async def test_an_invalid_plan_is_refused_before_anything_runs() -> None:
    events: list[ProgressEvent] = []
    provider = ScriptedProvider(["x"])
    team = Team("t", [AgentConfig("a", provider=provider)])
    with pytest.raises(PlanError, match="cycle"):
        await _oma(events).run_tasks(
            team, [TaskSpec("x", "X", depends_on=["y"]), TaskSpec("y", "Y", depends_on=["x"])]
        )
    assert events == [] and provider.requests == []


async def test_task_descriptions_and_goals_are_text() -> None:
    with pytest.raises(TypeError):
        TaskSpec("t", [{"type": "text", "text": "no"}])  # type: ignore[arg-type]
    team = Team("t", [AgentConfig("a", provider=ScriptedProvider(["x"]))])
    with pytest.raises(TypeError, match="text"):
        await _oma([]).run_team(team, [{"role": "user"}])  # type: ignore[arg-type]


async def test_plan_only_returns_the_plan_without_running_it() -> None:
    events: list[ProgressEvent] = []
    plan = {
        "tasks": [
            {"title": "a", "description": "A.", "assignee": None, "depends_on": []},
            {"title": "b", "description": "B.", "assignee": "w", "depends_on": ["a"]},
        ]
    }
    coordinator = AgentConfig(
        "lead", provider=ScriptedProvider([f"```json\n{json.dumps(plan)}\n```"])
    )
    worker_provider = ScriptedProvider([])
    team = Team("t", [AgentConfig("w", provider=worker_provider)])
    outcome = await _oma(events).run_team(team, "Goal", coordinator=coordinator, plan_only=True)
    assert outcome.success
    assert outcome.plan == (
        TaskSpec("a", "A."),
        TaskSpec("b", "B.", assignee="w", depends_on=("a",)),
    )
    assert {t: r.status for t, r in outcome.tasks.items()} == {"a": "pending", "b": "pending"}
    assert worker_provider.requests == []
    assert [e.agent for e in events if e.type == "agent_start"] == ["lead"]


async def test_the_default_coordinator_uses_the_first_agents_provider_and_model() -> None:
    plan = {"tasks": [{"title": "a", "description": "A.", "assignee": "w", "depends_on": []}]}
    provider = ScriptedProvider([json.dumps(plan), "task output", "final answer"])
    worker = AgentConfig("w", provider=provider, model="m-1", system_prompt="You work.")
    outcome = await _oma([]).run_team(Team("t", [worker]), "Goal")
    assert outcome.success and outcome.output == "final answer"
    planning, task, final = provider.requests
    assert planning.model == final.model == "m-1"
    assert planning.system_prompt != "You work." and '"tasks"' in (planning.system_prompt or "")
    assert "Goal" in provider.text_of(0)
    assert task.system_prompt == "You work."
    assert "task output" in provider.text_of(2)


async def test_a_coordinator_answer_without_a_plan_fails_the_team() -> None:
    events: list[ProgressEvent] = []
    refusals = ScriptedProvider(["I would rather not."])  # one answer: no corrective turn
    coordinator = AgentConfig("lead", provider=refusals)
    team = Team("t", [AgentConfig("w", provider=ScriptedProvider([]))])
    outcome = await _oma(events).run_team(team, "Goal", coordinator=coordinator)
    assert not outcome.success
    assert isinstance(outcome.error, PlanError)
    assert "holds no JSON plan" in str(outcome.error)
    assert len(refusals.requests) == 1
    assert [e.type for e in events][-1] == "error"


async def test_cancelling_run_tasks_cancels_every_running_task() -> None:
    before = asyncio.all_tasks()
    provider = ScriptedProvider([Delayed(30, "late")] * 3)
    team = Team("t", [AgentConfig("a", provider=provider)], max_concurrency=3)
    runner = asyncio.ensure_future(
        _oma([]).run_tasks(team, [TaskSpec(str(i), "wait") for i in range(3)])
    )
    await until(lambda: len(provider.requests) == 3)  # every task is running
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert asyncio.all_tasks() == before


def test_a_lone_dependency_title_is_one_dependency() -> None:
    assert TaskSpec("b", "B.", depends_on="a").depends_on == ("a",)


def test_team_and_task_spec_defaults() -> None:
    team = Team("t", [AgentConfig(name="w")])
    assert team.max_concurrency == 4
    spec = TaskSpec("title", "description")
    assert spec.assignee is None and tuple(spec.depends_on) == () and spec.max_retries == 0


async def test_a_team_may_be_given_agents() -> None:
    worker = ScriptedProvider(["done"])
    team = Team("t", [Agent(AgentConfig(name="w", provider=worker))])
    result = await OpenMultiAgent().run_tasks(team, [TaskSpec("one", "do", assignee="w")])
    assert result.success and result.tasks["one"].status == "completed"


@pytest.mark.parametrize("fence", ["```JSON", "```", "~~~json"], ids=["upper", "bare", "tilde"])
async def test_run_team_reads_a_plan_in_common_fences(fence: str) -> None:
    close = "~~~" if fence.startswith("~") else "```"
    plan = {"tasks": [{"title": "only", "description": "do it", "assignee": None}]}
    answer = f"Plan follows.\n{fence}\n{json.dumps(plan)}\n{close}\nThat is all."
    coordinator = AgentConfig(name="boss", provider=ScriptedProvider([answer, "final"]))
    team = Team("t", [AgentConfig(name="w", provider=ScriptedProvider(["done"]))])
    result = await OpenMultiAgent().run_team(team, "goal", coordinator=coordinator)
    assert result.success and result.output == "final"
    assert [t.title for t in result.plan or ()] == ["only"]


async def test_team_goals_and_task_descriptions_remain_text_only() -> None:
    with pytest.raises((TypeError, ValueError, InvalidMessageError)):
        TaskSpec("t", [text_block("a block")])  # type: ignore[arg-type]
    oma = OpenMultiAgent(plugins=builtin_host())
    team = Team("team", [AgentConfig(name="a")])
    with pytest.raises((TypeError, ValueError, InvalidMessageError)):
        await oma.run_team(team, [user_turn("goal")])  # type: ignore[arg-type]
