"""OpenMultiAgent.run_tasks / run_team: each task is a run_agent with the task's title."""

from __future__ import annotations

import json

from oma_core import AgentConfig, OpenMultiAgent, ProgressEvent, TaskSpec, Team
from oma_core.plugins import PluginHost
from oma_core.testing import ScriptedProvider


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
