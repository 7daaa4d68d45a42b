"""Teams and structured output: typed task outputs handed on, prompts built from them, and
the coordinator's plan read as structured output."""

from __future__ import annotations

import json
from collections.abc import Mapping

import attrs
import pytest

from oma_core import AgentConfig, OpenMultiAgent, TaskSpec, Team
from oma_core.errors import PlanError
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderRequest
from oma_core.teams import Plan, PlannedTask, TaskResult
from oma_core.testing import ScriptedProvider


@attrs.frozen
class Invoice:
    total: float
    currency: str


def _oma() -> OpenMultiAgent:
    return OpenMultiAgent(plugins=PluginHost(load_entrypoints=False))


async def test_a_dependent_receives_a_structured_dependency_as_json() -> None:
    reader = ScriptedProvider(['Sure: {"total": 12.5, "currency": "EUR"}'])
    writer = ScriptedProvider(["noted"])
    team = Team("t", [AgentConfig("reader", provider=reader), AgentConfig("w", provider=writer)])
    outcome = await _oma().run_tasks(
        team,
        [
            TaskSpec("read", "Read the invoice.", assignee="reader", output_type=Invoice),
            TaskSpec("file", "File it.", assignee="w", depends_on=["read"]),
        ],
    )
    assert outcome.success
    assert outcome.tasks["read"].structured == Invoice(12.5, "EUR")
    prompt = writer.text_of(0)
    assert '{"total": 12.5, "currency": "EUR"}' in prompt
    assert "Sure:" not in prompt  # the validated object, not the reply's prose


async def test_a_prompt_builder_gets_the_dependencies_structured_objects() -> None:
    seen: list[Mapping[str, TaskResult]] = []

    def prompt(dependencies: Mapping[str, TaskResult]) -> str:
        seen.append(dependencies)
        invoice = dependencies["read"].structured
        assert isinstance(invoice, Invoice)
        return f"Pay {invoice.total:.2f} {invoice.currency}."

    reader = ScriptedProvider(['{"total": 3, "currency": "USD"}'])
    payer = ScriptedProvider(["paid"])
    team = Team("t", [AgentConfig("reader", provider=reader), AgentConfig("p", provider=payer)])
    outcome = await _oma().run_tasks(
        team,
        [
            TaskSpec("read", "Read.", assignee="reader", output_type=Invoice),
            TaskSpec("pay", "Pay it.", assignee="p", depends_on=["read"], prompt=prompt),
        ],
    )
    assert outcome.success
    assert payer.text_of(0) == "Pay 3.00 USD."
    assert list(seen[0]) == ["read"]


async def test_a_prompt_builder_sees_only_the_tasks_it_depends_on() -> None:
    titles: list[list[str]] = []

    def prompt(dependencies: Mapping[str, TaskResult]) -> str:
        titles.append(list(dependencies))
        return "go"

    agent = AgentConfig("a", provider=ScriptedProvider(["1", "2", "3"]))
    outcome = await _oma().run_tasks(
        Team("t", [agent]),
        [
            TaskSpec("one", "1"),
            TaskSpec("two", "2", depends_on=["one"]),
            TaskSpec("three", "3", depends_on=["two"], prompt=prompt),
        ],
    )
    assert outcome.success
    assert titles == [["two"]]


async def test_a_prompt_builder_that_returns_no_text_fails_its_task_and_skips_dependents() -> None:
    agent = AgentConfig("a", provider=ScriptedProvider([]))
    outcome = await _oma().run_tasks(
        Team("t", [agent]),
        [
            TaskSpec("bad", "b", prompt=lambda deps: 42),  # type: ignore[arg-type,return-value]
            TaskSpec("after", "a", depends_on=["bad"]),
        ],
    )
    assert not outcome.success
    assert outcome.tasks["bad"].status == "failed"
    assert isinstance(outcome.tasks["bad"].error, TypeError)
    assert "prompt builder of task 'bad' must return a str, got int" in str(
        outcome.tasks["bad"].error
    )
    assert outcome.tasks["after"].status == "skipped"


def test_a_prompt_builder_must_be_callable() -> None:
    with pytest.raises(TypeError):
        TaskSpec("t", "d", prompt="not callable")  # type: ignore[arg-type]


async def test_the_coordinator_plans_with_the_plan_output_type() -> None:
    plan = {"tasks": [{"title": "look", "description": "Look.", "assignee": "w"}]}
    boss = ScriptedProvider([json.dumps(plan), "the end"])
    team = Team("t", [AgentConfig("w", provider=ScriptedProvider(["seen"]))])
    outcome = await _oma().run_team(team, "Goal", coordinator=AgentConfig("b", provider=boss))
    assert outcome.success and outcome.output == "the end"
    assert outcome.plan == (TaskSpec("look", "Look.", "w"),)
    planning, final = boss.requests
    # The plan's schema went with the planning call: in the request's output (native or tool
    # mode) or in its instructions (prompted mode); the final answer is text.
    assert '"depends_on"' in _asked_schema(planning)
    assert _asked_schema(final) == ""


def _asked_schema(request: ProviderRequest) -> str:
    """The JSON schema a request asked for, as text, whatever the mode; "" for none."""
    if request.output is not None:
        return json.dumps(request.output.schema)
    prompt = request.system_prompt or ""
    return prompt[prompt.index("JSON Schema") :] if "JSON Schema" in prompt else ""


async def test_a_plan_that_does_not_validate_is_a_plan_error_at_once() -> None:
    good = {"tasks": [{"title": "a", "description": "d", "assignee": None, "depends_on": []}]}
    boss = ScriptedProvider(['{"tasks": [{"title": 1}]}', json.dumps(good), "fin"])
    team = Team("t", [AgentConfig("w", provider=ScriptedProvider(["ok"]))])
    coordinator = AgentConfig("b", provider=boss, output_retries=3)  # not used for the plan
    outcome = await _oma().run_team(team, "Goal", coordinator=coordinator)
    assert not outcome.success and isinstance(outcome.error, PlanError)
    assert len(boss.requests) == 1  # one answer, no corrective turn


async def test_a_structured_plan_with_a_cycle_is_still_a_plan_error() -> None:
    cyclic = {
        "tasks": [
            {"title": "a", "description": "d", "depends_on": ["b"]},
            {"title": "b", "description": "d", "depends_on": ["a"]},
        ]
    }
    boss = ScriptedProvider([json.dumps(cyclic)])
    team = Team("t", [AgentConfig("w", provider=ScriptedProvider([]))])
    outcome = await _oma().run_team(team, "Goal", coordinator=AgentConfig("b", provider=boss))
    assert not outcome.success
    assert isinstance(outcome.error, PlanError) and "form a cycle" in str(outcome.error)


async def test_a_structured_plan_naming_an_unknown_agent_is_a_plan_error() -> None:
    plan = {"tasks": [{"title": "a", "description": "d", "assignee": "ghost"}]}
    boss = ScriptedProvider([json.dumps(plan)])
    team = Team("t", [AgentConfig("w", provider=ScriptedProvider([]))])
    outcome = await _oma().run_team(team, "Goal", coordinator=AgentConfig("b", provider=boss))
    assert isinstance(outcome.error, PlanError) and "'ghost', who is not in team" in str(
        outcome.error
    )


async def test_a_coordinator_whose_call_fails_fails_the_team_with_that_error() -> None:
    from oma_core import ProviderError

    boss = ScriptedProvider([ProviderError("down", status_code=400)])
    team = Team("t", [AgentConfig("w", provider=ScriptedProvider([]))])
    outcome = await _oma().run_team(team, "Goal", coordinator=AgentConfig("b", provider=boss))
    assert not outcome.success
    assert isinstance(outcome.error, ProviderError)


def test_a_plan_becomes_task_specs() -> None:
    plan = Plan([PlannedTask("a", "x"), PlannedTask("b", "y", "w", ["a"])])
    assert plan.task_specs() == (TaskSpec("a", "x"), TaskSpec("b", "y", "w", ("a",)))
