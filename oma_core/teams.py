"""Teams: several agents working through a plan of tasks with dependencies.

``run_tasks`` runs a caller's plan; ``run_team`` first asks a coordinator agent for the plan,
runs it, then asks the coordinator for the final answer. Each task is one ``run_agent`` call on
its assignee, so progress, budgets, retries, tracing and evaluation apply to every task. Task
descriptions and team goals are text.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import attrs

from .errors import PlanError
from .providers import Usage

if TYPE_CHECKING:
    from .agent import Agent, AgentConfig, RunResult

__all__ = ["TaskResult", "TaskSpec", "TaskStatus", "Team", "TeamRunResult", "parse_plan"]

TaskStatus: TypeAlias = Literal["pending", "running", "completed", "failed", "skipped"]

#: ``run_agent(config, prompt, task_title)``: how the team runs one agent turn.
RunAgent: TypeAlias = Callable[["AgentConfig", str, str | None], Awaitable["RunResult"]]
#: ``emit(event_type, agent_name, task_title, data)``: how the team reports progress.
Emit: TypeAlias = Callable[[str, str | None, str | None, dict[str, Any]], Awaitable[None]]


def _check_team(team: Team, attribute: object, agents: tuple[AgentConfig, ...]) -> None:
    if not agents:
        raise ValueError("a team needs at least one agent")
    names = [a.name for a in agents]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"agent names in a team must be unique; repeated: {duplicates}")


def _configs(agents: Iterable[AgentConfig | Agent]) -> tuple[AgentConfig, ...]:
    """The team's configs; an ``Agent`` stands for its config (each task is a fresh run)."""
    from .agent import Agent, AgentConfig

    configs = []
    for item in agents:
        config = item.config if isinstance(item, Agent) else item
        if not isinstance(config, AgentConfig):
            raise TypeError(f"team agents must be AgentConfigs, got {type(item).__name__}")
        configs.append(config)
    return tuple(configs)


@attrs.frozen
class Team:
    """Named agents (``AgentConfig``s) that run tasks, at most ``max_concurrency`` at once."""

    name: str
    agents: tuple[AgentConfig, ...] = attrs.field(converter=_configs, validator=_check_team)
    max_concurrency: int = attrs.field(default=4, validator=attrs.validators.ge(1))

    def agent(self, name: str) -> AgentConfig:
        for config in self.agents:
            if config.name == name:
                return config
        raise KeyError(name)


def _titles(value: Iterable[str] | str) -> tuple[str, ...]:
    # A lone title is one dependency, not one per character.
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen
class TaskSpec:
    """One task: text for its assignee, the titles it waits for, and how often to retry it.

    Descriptions are text (``TypeError`` otherwise). With ``assignee=None`` the team's agents
    take unassigned tasks in turn. ``max_retries`` re-runs a failed task as a whole.
    """

    title: str = attrs.field(validator=attrs.validators.instance_of(str))
    description: str = attrs.field(validator=attrs.validators.instance_of(str))
    assignee: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(str))
    )
    depends_on: tuple[str, ...] = attrs.field(
        default=(),
        converter=_titles,
        validator=attrs.validators.deep_iterable(attrs.validators.instance_of(str)),
    )
    max_retries: int = attrs.field(
        default=0, validator=[attrs.validators.instance_of(int), attrs.validators.ge(0)]
    )


@attrs.define
class TaskResult:
    """Where one task stands; ``result`` is its last run's ``RunResult``."""

    title: str
    status: TaskStatus = "pending"
    assignee: str | None = None
    attempts: int = 0
    result: RunResult | None = None
    error: BaseException | None = None

    @property
    def output(self) -> str:
        return self.result.output if self.result is not None else ""


@attrs.frozen
class TeamRunResult:
    """The outcome of ``run_tasks`` or ``run_team``.

    ``success`` is True only when every task completed (and, for ``run_team``, the final
    answer succeeded). ``plan`` is the coordinator's plan; ``output`` its final answer.
    """

    success: bool
    tasks: Mapping[str, TaskResult]
    plan: tuple[TaskSpec, ...] | None = None
    output: str = ""
    usage: Usage = Usage()
    error: BaseException | None = None


def check_plan(team: Team, tasks: Iterable[TaskSpec]) -> tuple[TaskSpec, ...]:
    """Return the plan as a tuple, or raise ``PlanError`` naming what cannot run."""
    plan = tuple(tasks)
    titles: dict[str, TaskSpec] = {}
    agent_names = {a.name for a in team.agents}
    for task in plan:
        if not isinstance(task, TaskSpec):
            raise PlanError(f"a task must be a TaskSpec, got {type(task).__name__}")
        if not task.title:
            raise PlanError("a task has an empty title")
        if task.title in titles:
            raise PlanError(f"two tasks are titled {task.title!r}")
        titles[task.title] = task
        if task.assignee is not None and task.assignee not in agent_names:
            raise PlanError(
                f"task {task.title!r} is assigned to {task.assignee!r}, "
                f"who is not in team {team.name!r} ({', '.join(sorted(agent_names))})"
            )
    for task in plan:
        for dep in task.depends_on:
            if dep not in titles:
                raise PlanError(f"task {task.title!r} depends on unknown task {dep!r}")
    # Kahn's algorithm: whatever cannot be ordered sits on a cycle.
    waiting = {t.title: set(t.depends_on) for t in plan}
    ready = [title for title, deps in waiting.items() if not deps]
    ordered = 0
    while ready:
        done = ready.pop()
        ordered += 1
        for title, deps in waiting.items():
            if done in deps:
                deps.discard(done)
                if not deps:
                    ready.append(title)
    if ordered != len(plan):
        cyclic = sorted(title for title, deps in waiting.items() if deps)
        raise PlanError(f"the dependencies of {cyclic} form a cycle")
    return plan


def _task_prompt(task: TaskSpec, results: Mapping[str, TaskResult]) -> str:
    if not task.depends_on:
        return task.description
    parts = [task.description, "", "Results of the tasks this one depends on:"]
    for dep in task.depends_on:
        parts += ["", f"## {dep}", results[dep].output]
    return "\n".join(parts)


async def run_tasks(
    team: Team, tasks: Iterable[TaskSpec], *, run_agent: RunAgent, emit: Emit
) -> TeamRunResult:
    """Run ``tasks`` on ``team``'s agents, respecting dependencies and ``max_concurrency``.

    A task whose dependency failed or was skipped is skipped. Cancelling the caller cancels
    every running task and propagates ``CancelledError``.
    """
    plan = check_plan(team, tasks)
    results: dict[str, TaskResult] = {}
    for index, task in enumerate(plan):
        assignee = task.assignee or team.agents[index % len(team.agents)].name
        results[task.title] = TaskResult(task.title, assignee=assignee)
    by_title = {t.title: t for t in plan}
    running: dict[asyncio.Task[None], str] = {}

    async def attempt_all(task: TaskSpec) -> None:
        record = results[task.title]
        config = team.agent(record.assignee or "")
        prompt = _task_prompt(task, results)
        for attempt in range(task.max_retries + 1):
            record.attempts = attempt + 1
            if attempt:
                await emit("task_retry", config.name, task.title, {"attempt": attempt + 1})
            record.result = await run_agent(config, prompt, task.title)
            if record.result.success:
                record.status = "completed"
                await emit("task_complete", config.name, task.title, {"output": record.output})
                return
        record.status = "failed"
        record.error = record.result.status.error if record.result else None
        await emit("task_failed", config.name, task.title, {"error": record.error})

    try:
        while True:
            for title, record in results.items():
                if record.status != "pending":
                    continue
                deps = [results[d].status for d in by_title[title].depends_on]
                if any(s in ("failed", "skipped") for s in deps):
                    record.status = "skipped"
                    await emit("task_skipped", record.assignee, title, {})
                elif all(s == "completed" for s in deps) and len(running) < team.max_concurrency:
                    record.status = "running"
                    await emit("task_start", record.assignee, title, {})
                    running[asyncio.ensure_future(attempt_all(by_title[title]))] = title
            if not running:
                break
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for finished in done:
                title = running.pop(finished)
                error = finished.exception()
                if error is not None:  # run_agent never raises for run failures; bugs do
                    results[title].status = "failed"
                    results[title].error = error
                    await emit("task_failed", results[title].assignee, title, {"error": error})
    finally:
        for pending in running:
            pending.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    usage = Usage()
    for record in results.values():
        if record.result is not None:
            usage = usage + record.result.usage
    success = all(r.status == "completed" for r in results.values())
    return TeamRunResult(success=success, tasks=results, plan=plan, usage=usage)


# -- planning with a coordinator -------------------------------------------------------------

COORDINATOR_PROMPT = """\
You coordinate a team of agents. Split the goal into tasks for the team's agents.
Answer with JSON only, in this shape:
{"tasks": [{"title": "short unique title", "description": "what to do, self-contained",
            "assignee": "an agent's name or null", "depends_on": ["titles of earlier tasks"]}]}"""

_FENCED = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


def parse_plan(text: str) -> tuple[TaskSpec, ...]:
    """Read a coordinator's plan: bare JSON or the first fenced block holding JSON (failing
    both, the first JSON object in the text that has a "tasks" key)."""
    data: Any = None
    for candidate in (text.strip(), *(m.group(1) for m in _FENCED.finditer(text))):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        break
    else:
        data = _embedded_plan(text)
        if data is None:
            raise PlanError("the coordinator's answer holds no JSON plan")
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise PlanError('the plan must be a JSON object with a "tasks" list')
    plan = []
    for index, item in enumerate(data["tasks"]):
        where = f"tasks[{index}]"
        if not isinstance(item, dict):
            raise PlanError(f"{where} must be an object")
        title, description = item.get("title"), item.get("description")
        assignee, depends_on = item.get("assignee"), item.get("depends_on", [])
        if not isinstance(title, str) or not isinstance(description, str):
            raise PlanError(f"{where} needs a string title and description")
        if assignee is not None and not isinstance(assignee, str):
            raise PlanError(f"{where}.assignee must be a string or null")
        if not isinstance(depends_on, list) or not all(isinstance(d, str) for d in depends_on):
            raise PlanError(f"{where}.depends_on must be a list of titles")
        plan.append(TaskSpec(title, description, assignee, tuple(depends_on)))
    return tuple(plan)


def _embedded_plan(text: str) -> Any:
    """The first JSON object with a "tasks" key inside prose, or None."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            data, _ = decoder.raw_decode(text, start)
        except ValueError:
            data = None
        if isinstance(data, dict) and "tasks" in data:
            return data
        start = text.find("{", start + 1)
    return None


def _default_coordinator(team: Team) -> AgentConfig:
    first = team.agents[0]
    return attrs.evolve(
        first,
        name="coordinator",
        system_prompt=COORDINATOR_PROMPT,
        description="plans the team's work and writes the final answer",
        tools=(),
        history=(),
        before_run=None,
    )


def _planning_prompt(team: Team, goal: str) -> str:
    lines = [f"Goal: {goal}", "", f"Team {team.name!r}:"]
    for config in team.agents:
        lines.append(f"- {config.name}: {config.description or 'no description'}")
    return "\n".join(lines)


def _final_prompt(goal: str, outcome: TeamRunResult) -> str:
    lines = [f"Goal: {goal}", "", "The team's results:"]
    for record in outcome.tasks.values():
        lines += ["", f"## {record.title} ({record.status})", record.output]
    lines += ["", "Write the final answer to the goal."]
    return "\n".join(lines)


async def run_team(
    team: Team,
    goal: str,
    *,
    coordinator: AgentConfig | None,
    plan_only: bool,
    run_agent: RunAgent,
    emit: Emit,
) -> TeamRunResult:
    """Plan with the coordinator, run the plan, then ask the coordinator for the answer."""
    if not isinstance(goal, str):
        raise TypeError(f"a team goal is text, got {type(goal).__name__}")
    coordinator = coordinator or _default_coordinator(team)
    planned = await run_agent(coordinator, _planning_prompt(team, goal), None)
    usage = planned.usage
    if not planned.success:
        return TeamRunResult(False, {}, usage=usage, error=planned.status.error)
    try:
        plan = check_plan(team, parse_plan(planned.output))
    except PlanError as error:
        await emit("error", coordinator.name, None, {"error": error})
        return TeamRunResult(False, {}, usage=usage, error=error)
    if plan_only:
        pending = {t.title: TaskResult(t.title, assignee=t.assignee) for t in plan}
        return TeamRunResult(True, pending, plan=plan, usage=usage)
    outcome = await run_tasks(team, plan, run_agent=run_agent, emit=emit)
    final = await run_agent(coordinator, _final_prompt(goal, outcome), None)
    return TeamRunResult(
        success=outcome.success and final.success,
        tasks=outcome.tasks,
        plan=plan,
        output=final.output,
        usage=usage + outcome.usage + final.usage,
        error=final.status.error if not final.success else None,
    )
