"""Teams: tasks with dependencies, plans from a coordinator, and their progress."""

from __future__ import annotations

import json
import time

import pytest
from _builders import builtin_host, text_block, user_turn

import oma_core
from oma_core import (
    Agent,
    AgentConfig,
    InvalidMessageError,
    OpenMultiAgent,
    ProgressEvent,
    ProviderError,
    TaskSpec,
    Team,
    TeamRunResult,
)
from oma_core.testing import Delayed, ScriptedProvider

PLAN = {
    "tasks": [
        {"title": "research", "description": "find facts", "assignee": "w", "depends_on": []},
        {
            "title": "write",
            "description": "write it up",
            "assignee": None,
            "depends_on": ["research"],
        },
    ]
}


def test_team_and_task_spec_defaults() -> None:
    team = Team("t", [AgentConfig(name="w")])
    assert team.max_concurrency == 4
    spec = TaskSpec("title", "description")
    assert spec.assignee is None and tuple(spec.depends_on) == () and spec.max_retries == 0


async def test_run_tasks_runs_dependencies_and_reports_statuses() -> None:
    worker = ScriptedProvider(["first done", "second done"])
    team = Team("t", [AgentConfig(name="w", provider=worker)])
    result = await OpenMultiAgent().run_tasks(
        team,
        [
            TaskSpec("one", "do one", assignee="w"),
            TaskSpec("two", "do two", assignee="w", depends_on=("one",)),
        ],
    )
    assert isinstance(result, TeamRunResult)
    assert result.success
    assert result.tasks["one"].status == "completed"
    assert result.tasks["two"].status == "completed"
    assert len(worker.requests) == 2


async def test_a_failed_task_skips_its_dependents() -> None:
    worker = ScriptedProvider([ProviderError("bad", status_code=400)])
    team = Team("t", [AgentConfig(name="w", provider=worker)])
    result = await OpenMultiAgent().run_tasks(
        team,
        [TaskSpec("one", "do one"), TaskSpec("two", "do two", depends_on=["one"])],
    )
    assert not result.success
    assert result.tasks["one"].status == "failed"
    assert result.tasks["two"].status == "skipped"


@pytest.mark.parametrize("fenced", [False, True], ids=["bare", "fenced"])
async def test_run_team_plans_runs_and_answers(fenced: bool) -> None:
    text = json.dumps(PLAN)
    plan_text = f"Here is the plan:\n```json\n{text}\n```\n" if fenced else text
    coordinator = AgentConfig(name="boss", provider=ScriptedProvider([plan_text, "final answer"]))
    worker = ScriptedProvider(["facts", "essay"])
    team = Team("t", [AgentConfig(name="w", provider=worker)])
    result = await OpenMultiAgent().run_team(team, "explain", coordinator=coordinator)
    assert result.success
    assert result.output == "final answer"
    assert result.plan is not None
    assert [t.title for t in result.plan] == ["research", "write"]
    assert result.tasks["research"].status == "completed"
    assert result.tasks["write"].status == "completed"
    assert len(worker.requests) == 2


async def test_run_team_plan_only_runs_no_task() -> None:
    coordinator = AgentConfig(name="boss", provider=ScriptedProvider([json.dumps(PLAN)]))
    worker = ScriptedProvider(["never"])
    team = Team("t", [AgentConfig(name="w", provider=worker)])
    result = await OpenMultiAgent().run_team(
        team, "explain", coordinator=coordinator, plan_only=True
    )
    assert result.plan is not None and len(result.plan) == 2
    assert worker.requests == []
    assert all(t.status == "pending" for t in result.tasks.values())


async def test_tasks_report_progress_with_their_title() -> None:
    events: list[ProgressEvent] = []
    team = Team("t", [AgentConfig(name="w", provider=ScriptedProvider(["done"]))])
    await OpenMultiAgent(on_progress=events.append).run_tasks(team, [TaskSpec("one", "do")])
    types = [e.type for e in events]
    assert "task_start" in types
    start = next(e for e in events if e.type == "task_start")
    assert start.task == "one"


async def test_max_concurrency_bounds_parallel_tasks() -> None:
    def team(limit: int) -> Team:
        worker = ScriptedProvider([Delayed(0.2, "a"), Delayed(0.2, "b")])
        return Team("t", [AgentConfig(name="w", provider=worker)], max_concurrency=limit)

    tasks = [TaskSpec("one", "do"), TaskSpec("two", "do")]
    start = time.monotonic()
    assert (await OpenMultiAgent().run_tasks(team(1), tasks)).success
    serial = time.monotonic() - start
    start = time.monotonic()
    assert (await OpenMultiAgent().run_tasks(team(2), tasks)).success
    parallel = time.monotonic() - start
    assert serial >= 0.39
    assert parallel < 0.35


async def test_a_task_with_max_retries_is_tried_again() -> None:
    worker = ScriptedProvider([ProviderError("busy", status_code=503), "second try"])
    team = Team("t", [AgentConfig(name="w", provider=worker, max_retries=0)])
    result = await OpenMultiAgent().run_tasks(team, [TaskSpec("one", "do", max_retries=1)])
    assert result.success and result.tasks["one"].status == "completed"


def test_task_descriptions_are_text() -> None:
    with pytest.raises((TypeError, ValueError)):
        TaskSpec("one", [user_turn("x")])  # type: ignore[arg-type]


async def test_run_team_goals_are_text() -> None:
    team = Team("t", [AgentConfig(name="w", provider=ScriptedProvider(["x"]))])
    with pytest.raises((TypeError, ValueError)):
        await OpenMultiAgent().run_team(team, [user_turn("x")])  # type: ignore[arg-type]


async def test_run_team_default_coordinator_uses_the_first_agents_provider() -> None:
    plan = {"tasks": [{"title": "only", "description": "do it", "assignee": "w", "depends_on": []}]}
    shared = ScriptedProvider([json.dumps(plan), "task output", "the final answer"])
    team = Team("t", [AgentConfig(name="w", provider=shared, model="m1")])
    result = await OpenMultiAgent().run_team(team, "goal")
    assert result.success and result.output == "the final answer"
    assert len(shared.requests) == 3
    assert shared.requests[0].model == "m1"


async def test_an_unreadable_plan_fails_the_team_run() -> None:
    coordinator = AgentConfig(name="boss", provider=ScriptedProvider(["no plan here"]))
    team = Team("t", [AgentConfig(name="w", provider=ScriptedProvider(["x"]))])
    try:
        result = await OpenMultiAgent().run_team(team, "goal", coordinator=coordinator)
    except oma_core.errors.PlanError:
        return
    assert not result.success


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
