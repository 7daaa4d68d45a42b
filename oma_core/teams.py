"""Teams: several agents working through a plan of tasks with dependencies.

``run_tasks`` runs a caller's plan; ``run_team`` first asks a coordinator agent for the plan,
runs it, then asks the coordinator for the final answer. Each task is one ``run_agent`` call on
its assignee, so progress, budgets, retries, tracing and evaluation apply to every task. Task
descriptions and team goals are text.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import attrs

from ._executors import TaskRun
from .errors import OmaError, PlanError
from .providers import Usage

if TYPE_CHECKING:
    from ._approvals import ApprovalRequest
    from ._config import AgentConfig
    from ._executors import TaskRunner
    from ._results import RunResult
    from .agent import Agent

__all__ = [
    "COORDINATOR_PROMPT",
    "Plan",
    "PlannedTask",
    "PromptBuilder",
    "TaskResult",
    "TaskSpec",
    "TaskStatus",
    "Team",
    "TeamRunResult",
    "check_plan",
    "parse_plan",
]

#: ``waiting``: the task's run is suspended, waiting for approval decisions (a durable team
#: run); what depends on it waits too, and the team run ends suspended.
TaskStatus: TypeAlias = Literal["pending", "running", "completed", "failed", "skipped", "waiting"]

#: ``run_agent(config, prompt, task_title)``: how the team runs one agent turn.
RunAgent: TypeAlias = Callable[["AgentConfig", str, str | None], Awaitable["RunResult"]]
#: ``prompt(dependencies) -> str``: builds a task's prompt from the results of the tasks it
#: depends on (title -> ``TaskResult``, in ``depends_on`` order; ``.structured`` is the
#: validated object of a dependency with an ``output_type``, ``.output`` its text).
PromptBuilder: TypeAlias = Callable[[Mapping[str, "TaskResult"]], str]
#: ``emit(event_type, agent_name, task_title, data)``: how the team reports progress.
Emit: TypeAlias = Callable[[str, str | None, str | None, dict[str, Any]], Awaitable[None]]


class TeamJournal(Protocol):
    """Where a durable team run keeps its state (``oma_core._team_durable``): the engine
    hands it the task records once made, has it run each agent run (``attempt``: a run its
    store holds finished is read back, one in flight resumed), and saves after each change."""

    async def restore(self, records: list[TaskResult], plan: tuple[TaskSpec, ...]) -> None:
        """Put an earlier life's task states into ``records`` (a fresh run: nothing)."""

    async def attempt(
        self, key: str, config: AgentConfig, run: Callable[[], Awaitable[RunResult]]
    ) -> RunResult:
        """The result of the agent run ``key`` of the team run (``run()`` starts it)."""

    async def save(self) -> None:
        """One checkpoint of the team run as it stands."""

    def planned(self) -> tuple[tuple[TaskSpec, ...], Usage] | None:
        """The coordinator's plan an earlier life saved, and what planning it cost."""

    async def keep_plan(self, plan: tuple[TaskSpec, ...], usage: Usage) -> None:
        """The coordinator's plan, saved so a resume does not plan again."""


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
    # A lone title is one dependency, not one per character; a title listed twice is one
    # dependency too (its output is given to the task once), first mention first.
    return (value,) if isinstance(value, str) else tuple(dict.fromkeys(value))


def _task_output_type(_inst: object, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None:
        from ._output import output_spec

        output_spec(value)


@attrs.frozen
class TaskSpec:
    """One task: text for its assignee, the titles it waits for, and how often to retry it.

    Descriptions are text (``TypeError`` otherwise). With ``assignee=None`` the team's agents
    take unassigned tasks in turn. ``depends_on`` keeps each title once, in the order first
    given (``["a", "a"]`` is ``("a",)``): a dependency's output reaches the task once.
    ``max_retries`` re-runs a failed task as a whole, but only when the run's error is
    retryable (``OmaError.retryable``, the ladder's rule): a 400, a block the provider cannot
    carry or a spent budget fails the same way every time.

    What the assignee is asked: by default the description, then each dependency's output
    (its validated output as JSON when it has an ``output_type``, else its text). With
    ``prompt`` (a ``PromptBuilder``), the prompt is what it returns when the task starts,
    given the dependencies' ``TaskResult``s by title, so it can use their structured objects
    directly; the description is then only the task's label (progress, plans, the CLI). A
    builder that raises, or returns anything but a ``str``, fails the task.
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
    #: The output type the task's agent runs with (as ``AgentConfig.output_type``, checked
    #: now); a dependent task receives the validated output as JSON in its prompt.
    output_type: Any = attrs.field(default=None, validator=_task_output_type, kw_only=True)
    #: Builds the task's prompt from its dependencies' results, in place of the default.
    prompt: PromptBuilder | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.is_callable()),
        kw_only=True,
        eq=False,
    )


@attrs.define
class TaskResult:
    """Where one task stands; ``result`` is its last run's ``RunResult``.

    ``usage`` sums every attempt's tokens, failed attempts included (``result.usage`` is the
    last attempt's alone).
    """

    title: str
    status: TaskStatus = "pending"
    assignee: str | None = None
    attempts: int = 0
    result: RunResult | None = None
    error: BaseException | None = None
    usage: Usage = Usage()

    @property
    def output(self) -> str:
        return self.result.output if self.result is not None else ""

    @property
    def structured(self) -> Any:
        """The task's validated output (``TaskSpec.output_type``), or None."""
        return self.result.structured if self.result is not None else None


@attrs.frozen
class TeamRunResult:
    """The outcome of ``run_tasks`` or ``run_team``.

    ``success`` is True only when every task completed (and, for ``run_team``, the final
    answer succeeded). ``plan`` is the coordinator's plan; ``output`` its final answer.
    ``usage`` sums every call made: every attempt of every task (and the coordinator's).
    """

    success: bool
    tasks: Mapping[str, TaskResult]
    plan: tuple[TaskSpec, ...] | None = None
    output: str = ""
    usage: Usage = Usage()
    error: BaseException | None = None
    #: The team run's id (what ``OpenMultiAgent.resume`` takes) with a run store, else None.
    run_id: str | None = None
    #: The approval requests the team run's waiting tasks wait for (it ended suspended).
    pending: tuple[ApprovalRequest, ...] = ()

    @property
    def suspended(self) -> bool:
        """Some task waits for approval decisions: ``resume(run_id, approvals=...)``."""
        return bool(self.pending)


def check_plan(team: Team, tasks: Iterable[TaskSpec]) -> tuple[TaskSpec, ...]:
    """Return the plan as a tuple, or raise ``PlanError`` naming what cannot run.

    Linear in tasks + dependencies: titles are indexed once and a cycle is found with Kahn's
    algorithm on dependency counts; the error names the tasks of one cycle.
    """
    return _Graph.of(team, tasks).plan


@attrs.define
class _Graph:
    """A checked plan as indices: who waits for whom, and how many each still waits for."""

    plan: tuple[TaskSpec, ...]
    #: ``dependents[i]``: the positions of the tasks that depend on task ``i``, one per edge.
    dependents: list[list[int]]
    #: ``waiting[i]``: how many dependency edges of task ``i`` have not completed.
    waiting: list[int]

    @classmethod
    def of(cls, team: Team, tasks: Iterable[TaskSpec]) -> _Graph:
        plan = tuple(tasks)
        agent_names = {a.name for a in team.agents}
        position: dict[str, int] = {}
        for index, task in enumerate(plan):
            if not isinstance(task, TaskSpec):
                raise PlanError(f"a task must be a TaskSpec, got {type(task).__name__}")
            if not task.title:
                raise PlanError("a task has an empty title")
            if task.title in position:
                raise PlanError(f"two tasks are titled {task.title!r}")
            position[task.title] = index
            if task.assignee is not None and task.assignee not in agent_names:
                raise PlanError(
                    f"task {task.title!r} is assigned to {task.assignee!r}, "
                    f"who is not in team {team.name!r} ({', '.join(sorted(agent_names))})"
                )
        dependents: list[list[int]] = [[] for _ in plan]
        waiting = [0] * len(plan)
        for index, task in enumerate(plan):
            if not task.depends_on:
                continue
            waiting[index] = len(task.depends_on)
            for dep in task.depends_on:
                source = position.get(dep)
                if source is None:
                    raise PlanError(f"task {task.title!r} depends on unknown task {dep!r}")
                dependents[source].append(index)
        graph = cls(plan, dependents, waiting)
        graph._check_acyclic(position)
        return graph

    def _check_acyclic(self, position: Mapping[str, int]) -> None:
        # Kahn's algorithm: whatever cannot be ordered sits on a cycle or waits for one.
        left = self.waiting.copy()
        ready = [index for index, count in enumerate(left) if not count]
        ordered = 0
        while ready:
            done = ready.pop()
            ordered += 1
            for dependent in self.dependents[done]:
                left[dependent] -= 1
                if not left[dependent]:
                    ready.append(dependent)
        if ordered == len(self.plan):
            return
        cycle = self._a_cycle(left, position)
        first = cycle.index(min(cycle))  # read it from the task listed first
        cycle = cycle[first:] + cycle[:first]
        stuck = len(self.plan) - ordered - len(cycle)
        names = [self.plan[i].title for i in cycle]
        if len(names) <= _CYCLE_SHOWN:
            listed = f"[{', '.join(map(_shown, sorted(names)))}]"
            path = [_shown(name) for name in [*names, names[0]]]
        else:  # a bounded line: the first tasks of the path, how many more, back to the start
            listed = f"{len(names):,} tasks"
            more = len(names) - _CYCLE_SHOWN
            path = [*map(_shown, names[:_CYCLE_SHOWN]), f"({more:,} more)", _shown(names[0])]
        reason = f"the dependencies of {listed} form a cycle"
        reason += f" ({' -> '.join(path)}: each waits for the next)"
        if stuck:
            reason += f"; {stuck} other task{'s' if stuck > 1 else ''} cannot run either"
        raise PlanError(reason)

    def _a_cycle(self, left: list[int], position: Mapping[str, int]) -> list[int]:
        """One cycle among the tasks Kahn's algorithm could not order, in dependency order.

        Each such task waits for at least one other such task, so walking from one to a
        waited-for one must come back to a task already seen; each task is walked once.
        """
        current = next(index for index, count in enumerate(left) if count)
        seen: dict[int, int] = {}
        path: list[int] = []
        while current not in seen:
            seen[current] = len(path)
            path.append(current)
            current = next(
                position[dep] for dep in self.plan[current].depends_on if left[position[dep]]
            )
        return path[seen[current] :]


#: The most tasks of a cycle a ``PlanError`` names, and the longest title it shows whole.
_CYCLE_SHOWN, _TITLE_SHOWN = 10, 40


def _shown(title: str) -> str:
    """A title as an error shows it: quoted, escapes visible, at most ``_TITLE_SHOWN`` long."""
    if len(title) > _TITLE_SHOWN:
        title = title[: _TITLE_SHOWN - 3] + "..."
    return repr(title)


def _task_prompt(task: TaskSpec, records: Mapping[str, TaskResult]) -> str:
    """What the task's assignee is asked: the ``prompt`` builder's text, else the task's
    description, then the output of each task it depends on (only those)."""
    if task.prompt is not None:
        dependencies = MappingProxyType({dep: records[dep] for dep in task.depends_on})
        text = task.prompt(dependencies)
        if not isinstance(text, str):
            raise TypeError(
                f"the prompt builder of task {task.title!r} must return a str, "
                f"got {type(text).__name__}"
            )
        return text
    if not task.depends_on:
        return task.description
    parts = [task.description, "", "Results of the tasks this one depends on:"]
    for dep in task.depends_on:
        structured = records[dep].structured
        if structured is None:
            parts += ["", f"## {dep}", records[dep].output]
        else:  # validated output: handed on as JSON, not as the reply's prose
            from ._output import output_json

            parts += ["", f"## {dep}", output_json(structured)]
    return "\n".join(parts)


def _retryable(result: RunResult) -> bool:
    """Whether a failed task may run again: the ladder's rule, applied to the run's error."""
    error = result.status.error
    return isinstance(error, OmaError) and error.retryable is True


async def run_tasks(
    team: Team,
    tasks: Iterable[TaskSpec],
    *,
    run_agent: RunAgent | None = None,
    emit: Emit | None,
    run_task: TaskRunner | None = None,
    journal: TeamJournal | None = None,
) -> TeamRunResult:
    """Run ``tasks`` on ``team``'s agents, respecting dependencies and ``max_concurrency``.

    Each attempt of a task is ``run_task(TaskRun(...))`` (an executor's runner), or
    ``run_agent(config, prompt, title)``. ``emit`` reports the task events (None: nobody
    listens). A task whose dependency failed or was skipped is skipped. Cancelling the
    caller cancels every running task and propagates ``CancelledError``.
    """
    if run_task is None and run_agent is None:
        raise TypeError("run_tasks needs run_task or run_agent")
    graph = _Graph.of(team, tasks)
    return await _run_graph(
        team, graph, run_task=run_task, run_agent=run_agent, emit=emit, journal=journal
    )


async def _run_graph(
    team: Team,
    graph: _Graph,
    *,
    run_task: TaskRunner | None,
    run_agent: RunAgent | None,
    emit: Emit | None,
    journal: TeamJournal | None = None,
) -> TeamRunResult:
    """The scheduler's run of ``graph`` on ``team`` (see ``_Scheduler``)."""
    runner = _TaskAttempts(
        team, graph, run_task=run_task, run_agent=run_agent, emit=emit, journal=journal
    )
    scheduler = _Scheduler(team, graph, runner, emit, journal)
    if journal is not None:
        await scheduler.restore(journal)
    return await scheduler.run()


class _TaskAttempts:
    """One task, attempt after attempt: each attempt's run, the record's usage summed, and
    the ``task_retry``/``task_complete``/``task_failed`` events. A failed attempt is tried
    again while the task's ``max_retries`` allow and its error is retryable."""

    def __init__(
        self,
        team: Team,
        graph: _Graph,
        *,
        run_task: TaskRunner | None,
        run_agent: RunAgent | None,
        emit: Emit | None,
        journal: TeamJournal | None = None,
    ) -> None:
        self._configs = {config.name: config for config in team.agents}
        self._run_task = run_task
        self._run_agent = run_agent
        self._emit = emit
        self._journal = journal
        self._positions = {task.title: index for index, task in enumerate(graph.plan)}
        #: Each task's record, by title (what a task's prompt reads its dependencies from).
        self.by_title: dict[str, TaskResult] = {}

    async def __call__(self, task: TaskSpec, record: TaskResult) -> None:
        config = self._configs[record.assignee or ""]
        if task.output_type is not None:
            config = attrs.evolve(config, output_type=task.output_type)
        prompt = _task_prompt(task, self.by_title)
        emit = self._emit
        # a resumed task goes on with the attempt its earlier life had under way
        for attempt in range(max(record.attempts, 1), task.max_retries + 2):
            record.attempts = attempt
            if attempt > 1 and emit is not None and record.result is not None:
                data = {"attempt": attempt, "error": record.result.status.error}
                await emit("task_retry", config.name, task.title, data)
            result = await self._attempt(config, prompt, task.title, attempt)
            record.result = result
            record.usage = record.usage + result.usage
            if result.status.code == "suspended":  # waits for decisions: not failed
                record.status = "waiting"
                return
            if result.success:
                record.status = "completed"
                if emit is not None:
                    await emit("task_complete", config.name, task.title, {"output": record.output})
                return
            if not _retryable(result):
                break
        record.status = "failed"
        record.error = record.result.status.error if record.result is not None else None
        if emit is not None:
            await emit("task_failed", config.name, task.title, {"error": record.error})

    async def _attempt(
        self, config: AgentConfig, prompt: str, title: str, attempt: int
    ) -> RunResult:
        if self._journal is not None:
            position = self._positions[title] + 1
            key = str(position) + (f".{attempt}" if attempt > 1 else "")
            return await self._journal.attempt(
                key, config, lambda: self._run(config, prompt, title, attempt)
            )
        return await self._run(config, prompt, title, attempt)

    async def _run(self, config: AgentConfig, prompt: str, title: str, attempt: int) -> RunResult:
        if self._run_task is not None:
            return await self._run_task(TaskRun(config, prompt, title, attempt))
        assert self._run_agent is not None
        return await self._run_agent(config, prompt, title)


class _Scheduler:
    """The scheduler: O(tasks + dependencies) bookkeeping, whatever the plan's shape.

    Ready tasks wait in a heap by plan position (so they start in plan order, as many as
    ``max_concurrency`` allows); a finished task only touches its own dependents, and wakes
    the loop through a done callback rather than a scan of what is running. A task that is
    the only one able to run (nothing running, nothing else ready: the others wait for it)
    runs in the scheduler's own task rather than a new one; nothing could run beside it.
    """

    def __init__(
        self,
        team: Team,
        graph: _Graph,
        attempts: _TaskAttempts,
        emit: Emit | None,
        journal: TeamJournal | None = None,
    ) -> None:
        agents = team.agents
        self._max_concurrency = team.max_concurrency
        self._plan, self._dependents, self._waiting = graph.plan, graph.dependents, graph.waiting
        self._records = [
            TaskResult(task.title, assignee=task.assignee or agents[index % len(agents)].name)
            for index, task in enumerate(self._plan)
        ]
        attempts.by_title.update((record.title, record) for record in self._records)
        self._by_title = attempts.by_title
        self._attempts = attempts
        self._emit = emit
        self._ready = [index for index, count in enumerate(self._waiting) if not count]  # a heap
        self._running: dict[asyncio.Task[None], int] = {}
        self._finished: list[asyncio.Task[None]] = []
        self._wake: list[asyncio.Future[None]] = []
        self._loop = asyncio.get_running_loop()
        self._journal = journal

    async def restore(self, journal: TeamJournal) -> None:
        """Take an earlier life's task states: finished tasks stay finished (their results
        read back), the rest wait for what they depend on that has not completed."""
        records = self._records
        await journal.restore(records, self._plan)
        position = {record.title: index for index, record in enumerate(records)}
        for index, task in enumerate(self._plan):
            if records[index].status != "pending":
                continue
            deps = [records[position[dep]].status for dep in task.depends_on]
            if any(status in ("failed", "skipped") for status in deps):
                records[index].status = "skipped"
            self._waiting[index] = sum(status != "completed" for status in deps)
        self._ready = [
            index
            for index, count in enumerate(self._waiting)
            if not count and records[index].status == "pending"
        ]

    async def run(self) -> TeamRunResult:
        """Run every task; cancelling the caller cancels the running ones."""
        running = self._running
        try:
            while True:
                await self._start_ready()
                if not running:
                    break
                await self._wait()
                done, self._finished[:] = self._finished[:], []
                for future in done:
                    # a CancelledError from inside propagates
                    await self._settle(running.pop(future), future.exception())
        finally:
            for pending in running:
                pending.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)
        records = self._records
        usage = sum((record.usage for record in records), Usage())
        success = all(record.status == "completed" for record in records)
        waiting = tuple(
            request
            for record in records
            if record.status == "waiting" and record.result is not None
            for request in record.result.pending
        )
        return TeamRunResult(
            success=success, tasks=self._by_title, plan=self._plan, usage=usage, pending=waiting
        )

    async def _start_ready(self) -> None:
        """Start ready tasks in plan order, while ``max_concurrency`` allows."""
        ready, running = self._ready, self._running
        while ready and len(running) < self._max_concurrency:
            index = heapq.heappop(ready)
            record = self._records[index]
            record.status = "running"
            if self._emit is not None:
                await self._emit("task_start", record.assignee, record.title, {})
            if not running and not ready:  # the only task that can run now: run it here
                await self._run_here(index)
                continue
            started = self._loop.create_task(self._attempts(self._plan[index], record))
            started.add_done_callback(self._on_done)
            running[started] = index

    async def _run_here(self, index: int) -> None:
        escaped: BaseException | None = None
        try:
            await self._attempts(self._plan[index], self._records[index])
        except Exception as error:  # a bug; CancelledError propagates
            escaped = error
        await self._settle(index, escaped)

    def _on_done(self, future: asyncio.Task[None]) -> None:
        self._finished.append(future)
        wake = self._wake
        if wake and not wake[0].done():
            wake[0].set_result(None)

    async def _wait(self) -> None:
        """Until a running task finished (at once if one has)."""
        if self._finished:
            return
        self._wake.append(self._loop.create_future())
        try:
            await self._wake[0]
        finally:
            self._wake.clear()

    async def _settle(self, index: int, error: BaseException | None) -> None:
        """A task ended: ``error`` is what escaped it (a bug: runs never raise for run
        failures); skip what waits for a task that did not complete, else free them."""
        record = self._records[index]
        if error is not None:
            record.status = "failed"
            record.error = error
            if self._emit is not None:
                await self._emit("task_failed", record.assignee, record.title, {"error": error})
        if record.status == "waiting":  # what depends on it waits with it
            await self._saved()
            return
        if record.status != "completed":
            await self._skip_after(index)
            await self._saved()
            return
        waiting = self._waiting
        for dependent in self._dependents[index]:
            waiting[dependent] -= 1
            if not waiting[dependent] and self._records[dependent].status == "pending":
                heapq.heappush(self._ready, dependent)
        await self._saved()

    async def _saved(self) -> None:
        if self._journal is not None:
            await self._journal.save()

    async def _skip_after(self, index: int) -> None:
        """Skip everything downstream of a failure, each task once, reported in plan order."""
        records = self._records
        skipped: list[int] = []
        stack = [index]
        while stack:
            for dependent in self._dependents[stack.pop()]:
                if records[dependent].status == "pending":
                    records[dependent].status = "skipped"
                    skipped.append(dependent)
                    stack.append(dependent)
        for dependent in sorted(skipped):
            record = records[dependent]
            if self._emit is not None:
                await self._emit("task_skipped", record.assignee, record.title, {})


# -- planning with a coordinator -------------------------------------------------------------

COORDINATOR_PROMPT = """\
You coordinate a team of agents. Split the goal into tasks for the team's agents.
Answer with JSON only, in this shape:
{"tasks": [{"title": "short unique title", "description": "what to do, self-contained",
            "assignee": "an agent's name or null", "depends_on": ["titles of earlier tasks"]}]}"""


@attrs.frozen
class PlannedTask:
    """One task as the coordinator plans it (see ``Plan``)."""

    title: str
    description: str
    #: An agent's name, or None to let the team's agents take it in turn.
    assignee: str | None = None
    #: The titles of the tasks it waits for (None or absent: none).
    depends_on: list[str] | None = None


@attrs.frozen
class Plan:
    """The coordinator's plan: the output type of its planning run.

    Its planning call runs with ``output_type=Plan``, so the plan comes through the
    structured-output machinery (the provider's native schema mode where it has one, else
    the schema in the instructions), not from JSON searched for in prose. The plan is one
    answer: a reply that does not validate is a ``PlanError``, with no corrective turn. The
    optional fields are nullable, so a strict schema (every property required) keeps them.
    """

    tasks: list[PlannedTask]

    def task_specs(self) -> tuple[TaskSpec, ...]:
        """The plan as ``TaskSpec``s (checked against a team by ``check_plan``)."""
        return tuple(
            TaskSpec(task.title, task.description, task.assignee, tuple(task.depends_on or ()))
            for task in self.tasks
        )


_FENCED = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)


def parse_plan(text: str) -> tuple[TaskSpec, ...]:
    """Read a plan written as text: bare JSON or the first fenced block holding JSON (failing
    both, the first JSON object in the text that has a "tasks" key).

    For plans kept as text (files, logs); ``run_team`` itself gets its plan as structured
    output (``Plan``), not through this function."""
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


class _PlanningFailed(Exception):
    """The planning run failed for another reason than its plan (a provider error...)."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error


def _planned_tasks(planned: RunResult) -> tuple[TaskSpec, ...]:
    """The tasks of a planning run's ``Plan``; ``PlanError`` when the coordinator's answer
    never validated as one (the corrective turns spent), ``_PlanningFailed`` when the run
    failed otherwise."""
    from .errors import OutputValidationError

    error = planned.status.error
    if isinstance(error, OutputValidationError):  # the message plans always failed with
        raise PlanError("the coordinator's answer holds no JSON plan")
    if not planned.success or not isinstance(planned.structured, Plan):
        raise _PlanningFailed(error)
    return planned.structured.task_specs()


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


async def _plan(
    team: Team,
    goal: str,
    coordinator: AgentConfig,
    run_agent: RunAgent,
    emit: Emit | None,
    journal: TeamJournal | None,
) -> tuple[_Graph, Usage] | TeamRunResult:
    """The coordinator's plan as a checked graph and what planning cost, or the failed team
    run's result when there is no plan (kept by ``journal``, when given, once made)."""
    # One answer, as the contract has it (DESIGN section 8): a reply that is not a plan
    # fails the team with PlanError, without a corrective turn.
    planner = attrs.evolve(coordinator, output_type=Plan, output_retries=0)
    prompt = _planning_prompt(team, goal)
    if journal is None:
        planned = await run_agent(planner, prompt, None)
    else:
        planned = await journal.attempt("plan", planner, lambda: run_agent(planner, prompt, None))
    usage = planned.usage
    try:
        graph = _Graph.of(team, _planned_tasks(planned))
    except PlanError as error:
        if emit is not None:
            await emit("error", coordinator.name, None, {"error": error})
        return TeamRunResult(False, {}, usage=usage, error=error)
    except _PlanningFailed as failed:
        return TeamRunResult(False, {}, usage=usage, error=failed.error)
    if journal is not None:
        await journal.keep_plan(graph.plan, usage)
    return graph, usage


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
    emit: Emit | None,
    run_task: TaskRunner | None = None,
    journal: TeamJournal | None = None,
) -> TeamRunResult:
    """Plan with the coordinator, run the plan, then ask the coordinator for the answer.

    The coordinator's two calls go through ``run_agent``; the tasks through ``run_task``
    when given (an executor's runner), else ``run_agent`` too. With a ``journal`` (a durable
    team run) the plan is saved once made, and a resume takes it instead of planning again.
    """
    if not isinstance(goal, str):
        raise TypeError(f"a team goal is text, got {type(goal).__name__}")
    coordinator = coordinator or _default_coordinator(team)
    kept = None if journal is None else journal.planned()
    if kept is not None:
        graph, usage = _Graph.of(team, kept[0]), kept[1]
    else:
        planning = await _plan(team, goal, coordinator, run_agent, emit, journal)
        if isinstance(planning, TeamRunResult):
            return planning
        graph, usage = planning
    plan = graph.plan
    if plan_only:
        pending = {t.title: TaskResult(t.title, assignee=t.assignee) for t in plan}
        return TeamRunResult(True, pending, plan=plan, usage=usage)
    outcome = await _run_graph(
        team, graph, run_task=run_task, run_agent=run_agent, emit=emit, journal=journal
    )
    if outcome.pending:  # suspended: the final answer waits for the waiting tasks
        return attrs.evolve(outcome, usage=usage + outcome.usage)
    prompt = _final_prompt(goal, outcome)
    if journal is None:
        final = await run_agent(coordinator, prompt, None)
    else:
        final = await journal.attempt(
            "final", coordinator, lambda: run_agent(coordinator, prompt, None)
        )
    return TeamRunResult(
        success=outcome.success and final.success,
        tasks=outcome.tasks,
        plan=plan,
        output=final.output,
        usage=usage + outcome.usage + final.usage,
        error=final.status.error if not final.success else None,
    )
