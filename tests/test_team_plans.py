"""Plans: what the coordinator may answer, and which plans cannot run."""

from __future__ import annotations

import pytest

from oma_core import AgentConfig, TaskSpec, Team
from oma_core.errors import PlanError
from oma_core.teams import check_plan, parse_plan

TEAM = Team("t", [AgentConfig(name="writer"), AgentConfig(name="critic")])


def test_bare_json_plan_is_read() -> None:
    plan = parse_plan('{"tasks": [{"title": "a", "description": "do a", "assignee": null}]}')
    assert plan == (TaskSpec("a", "do a"),)


def test_fenced_plan_after_prose_is_read() -> None:
    text = (
        "Here is my plan:\n```json\n"
        '{"tasks": [{"title": "a", "description": "d", "assignee": "writer", "depends_on": []}]}'
        "\n```\nDone."
    )
    assert parse_plan(text) == (TaskSpec("a", "d", "writer"),)


def test_plan_dependencies_become_tuples() -> None:
    plan = parse_plan(
        '{"tasks": [{"title": "a", "description": "x"},'
        ' {"title": "b", "description": "y", "depends_on": ["a"]}]}'
    )
    assert plan[1].depends_on == ("a",)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no plan here", "holds no JSON plan"),
        ('{"steps": []}', '"tasks" list'),
        ('{"tasks": ["a"]}', "tasks[0] must be an object"),
        ('{"tasks": [{"title": 1, "description": "d"}]}', "string title"),
        ('{"tasks": [{"title": "a", "description": "d", "assignee": 3}]}', "assignee"),
        ('{"tasks": [{"title": "a", "description": "d", "depends_on": "b"}]}', "depends_on"),
    ],
)
def test_malformed_plans_are_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(PlanError, match=None) as caught:
        parse_plan(text)
    assert reason in str(caught.value)
    assert caught.value.code == "INVALID_PLAN"


def test_unknown_assignee_is_refused() -> None:
    with pytest.raises(PlanError, match="'nobody', who is not in team"):
        check_plan(TEAM, [TaskSpec("a", "d", assignee="nobody")])


def test_unknown_dependency_is_refused() -> None:
    with pytest.raises(PlanError, match="depends on unknown task 'z'"):
        check_plan(TEAM, [TaskSpec("a", "d", depends_on=("z",))])


def test_duplicate_titles_are_refused() -> None:
    with pytest.raises(PlanError, match="two tasks are titled 'a'"):
        check_plan(TEAM, [TaskSpec("a", "d"), TaskSpec("a", "e")])


def test_a_cycle_is_refused_and_named() -> None:
    plan = [
        TaskSpec("a", "d", depends_on=("c",)),
        TaskSpec("b", "d", depends_on=("a",)),
        TaskSpec("c", "d", depends_on=("b",)),
        TaskSpec("free", "d"),
    ]
    with pytest.raises(PlanError, match=r"\['a', 'b', 'c'\] form a cycle"):
        check_plan(TEAM, plan)


def test_a_dependency_listed_twice_is_one_dependency_first_mention_first() -> None:
    task = TaskSpec("c", "d", depends_on=["b", "a", "b", "a"])
    assert task.depends_on == ("b", "a")
    plan = check_plan(TEAM, [TaskSpec("a", "d"), TaskSpec("b", "d"), task])
    assert plan[2].depends_on == ("b", "a")


def test_a_team_needs_unique_agent_names() -> None:
    with pytest.raises(ValueError, match="unique"):
        Team("t", [AgentConfig(name="a"), AgentConfig(name="a")])


def test_a_team_needs_an_agent() -> None:
    with pytest.raises(ValueError, match="at least one agent"):
        Team("t", [])
