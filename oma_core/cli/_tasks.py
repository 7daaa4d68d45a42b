"""``oma tasks`` and ``oma team``: a task graph from a file, or a coordinator's plan, run with
a live view of every task (``_live``), its result printed or given as JSON.

A command reads its files (``_plans``), checks the plan and the agents before anything runs,
then runs the team in one ``asyncio.run``: Ctrl-C cancels that run (the core cancels every
task in flight) and the command reports what finished. Exit statuses: 0 every task
completed, 1 a task (or the team) failed, 2 a usage or configuration error, 130 interrupted.

A team run is durable: it checkpoints into the oma home's ``runs.db`` (``SQLiteRunStore``)
beside a record of the command that started it (``<run id>/command``: the files' paths, the
goal, the executor's name, the prices; never a file's content, which may hold a key), so
``oma runs resume ID`` rebuilds the team from its files after Ctrl-C or a crash
(``rebuilt``), its budget going on from what was spent.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import click

from ..budgets import Price
from ..errors import OmaError
from ..providers import Usage
from ._hosts import Reach, explained_by, host_of_plugins, hosts_named, reaches
from ._live import RunView, TaskBoard, printable, printable_json, usage_json
from ._plans import (
    agent_config,
    check_agents,
    load_team,
    read_json_or_refuse,
    refuse,
    stem,
    task_spec,
    team_file,
    with_keys,
)

if TYPE_CHECKING:
    from .._config import AgentConfig
    from .._run_store import RunStore
    from ..orchestrator import OpenMultiAgent
    from ..teams import TaskSpec, Team, TeamRunResult

__all__ = ["COMMAND", "Rebuilt", "print_outcome", "rebuilt", "result_json", "tasks", "team"]

#: The suffix of the record a command keeps beside its team run: ``<run id>/command``.
COMMAND = "command"

F = TypeVar("F", bound=Callable[..., Any])

#: Exit statuses besides ``USAGE``: a failed task or team, Ctrl-C.
FAILED, INTERRUPTED = 1, 130

# -- the orchestrator --------------------------------------------------------------------------


def _value(text: str) -> Any:
    """An option's value: JSON when it parses (``2``, ``true``, ``{...}``), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _orchestrator(
    settings: RunOptions,
    view: RunView | None,
    hosts: Mapping[str, Reach] | None = None,
    store: RunStore | None = None,
) -> OpenMultiAgent:
    from ..orchestrator import OpenMultiAgent

    kwargs: dict[str, Any] = {"store": store}
    if view is not None:
        kwargs["on_progress"] = hosts_named(view, hosts or {})
    if settings.prices is not None:
        kwargs["estimate_cost"] = settings.prices
    if settings.executor is not None or settings.executor_options:
        kwargs["executor"] = settings.executor or "local"
        kwargs["executor_options"] = dict(settings.executor_options)
    try:
        return OpenMultiAgent(**kwargs)
    except (OmaError, TypeError, ValueError) as error:
        refuse(str(error))


def _interruptible(check: Coroutine[Any, Any, None]) -> None:
    try:
        asyncio.run(check)
    except KeyboardInterrupt:
        click.echo("interrupted; nothing ran", err=True)
        raise SystemExit(INTERRUPTED) from None


# -- the durable record of a command ---------------------------------------------------------


def _store() -> RunStore:
    """The oma home's run store (``runs.db``), where the command checkpoints its team runs."""
    from ..stores import SQLiteRunStore, default_sqlite_path

    return SQLiteRunStore(default_sqlite_path())


async def _keep_command(store: RunStore, run_id: str, command: Mapping[str, Any]) -> None:
    """Keep what rebuilds the team run ``run_id``: ``command`` (paths, goal, executor)."""
    import time

    from .._checkpoints import encode
    from ..stores import StoredRun

    now = time.time()
    data = encode({"kind": COMMAND, **command})
    await store.save(StoredRun(f"{run_id}/{COMMAND}", COMMAND, "ok", data, now, now))


class Rebuilt:
    """A team run's team, plan and coordinator made again from the files its command read."""

    def __init__(
        self,
        command: Mapping[str, Any],
        team: Team,
        specs: tuple[TaskSpec, ...] | None,
        coordinator: AgentConfig | None,
    ) -> None:
        self.command = command
        self.team = team
        self.specs = specs
        self.coordinator = coordinator

    @property
    def prices(self) -> Price | None:
        """The prices the command was given (``--price``, ``--cache-price``), if any."""
        kept = self.command.get("price")  # .get: records kept before prices were
        return None if kept is None else Price(**kept)

    def orchestrator(self, store: RunStore, view: RunView | None = None) -> OpenMultiAgent:
        """An ``OpenMultiAgent`` on ``store`` with the executor the command ran on and its
        prices, its progress shown by ``view``."""
        from ..orchestrator import OpenMultiAgent

        executor = self.command.get("executor") or "local"
        try:
            observer = None if view is None else hosts_named(view, {})
            return OpenMultiAgent(
                observer, store=store, executor=executor, estimate_cost=self.prices
            )
        except (OmaError, TypeError, ValueError) as error:
            refuse(str(error))

    async def resume(self, store: RunStore, run_id: str) -> TeamRunResult:
        """Continue the team run ``run_id`` with the live view: its finished tasks shown as
        they ended (they are read back, not run), the rest as they run now; the team's
        budget (``--max-token-budget``, ``--max-cost-budget``) goes on from what was spent."""
        from .._team_durable import open_team_run, run_kind

        _, state = await run_kind(store, run_id)
        budget = await (await open_team_run(store, run_id, state)).budget(store, None)
        coordinator = None
        if self.command["command"] == "team":
            coordinator = self.coordinator.name if self.coordinator else "coordinator"
        board = TaskBoard(
            self.team.name, coordinator=coordinator, prices=self.prices, budget=budget
        )
        for title, task in dict(state.get("tasks", {})).items():
            row = board.add(title, task["assignee"])
            if task["status"] in ("completed", "failed", "skipped", "waiting"):
                row.state, row.attempts = task["status"], int(task["attempts"])
                row.usage = Usage(**task["usage"])
        view = _view(board, False)
        oma = self.orchestrator(store, view)
        async with oma, view:
            return await oma.resume(
                run_id, team=self.team, tasks=self.specs, config=self.coordinator, budget=budget
            )


async def rebuilt(store: RunStore, run_id: str) -> Rebuilt | None:
    """The team run ``run_id`` as its command started it, from the files it read (None when
    no command started it: a team run started from code is resumed from code)."""
    from .._checkpoints import decode

    record = await store.load(f"{run_id}/{COMMAND}")
    if record is None:
        return None
    command = decode(record.run_id, record.checkpoint)
    source = team_file(command["team_file"], ("tasks",) if command["team_file_plan"] else ())
    team = load_team(source, command["team_file"], stem(command["team_file"]))
    specs = None
    if command["command"] == "tasks":
        plan = team_file(command["plan_file"], ("tasks",))
        specs = tuple(
            task_spec(item, f"{command['plan_file']}: tasks[{i}]")
            for i, item in enumerate(plan.get("tasks") or ())
        )
    coordinator = None
    if command.get("coordinator_file"):
        path = command["coordinator_file"]
        coordinator = agent_config(read_json_or_refuse(path), path)
    elif command["command"] == "team" and "coordinator" in source:
        coordinator = agent_config(source["coordinator"], f"{command['team_file']}: coordinator")
    team, coordinator = with_keys(team, coordinator)
    return Rebuilt(command, team, specs, coordinator)


# -- the commands ------------------------------------------------------------------------------


class RunOptions:
    """What ``tasks`` and ``team`` share: the executor, the team's budget, prices, ``--json``.

    The budgets are one ``Budget`` shared by every run of the team run (``budget=``), so
    ``--max-token-budget`` caps the whole graph, as a person reading it would expect."""

    def __init__(
        self,
        executor: str | None,
        executor_options: Sequence[tuple[str, str]],
        as_json: bool,
        token_budget: int | None,
        cost_budget: float | None,
        price: tuple[float, float] | None,
        cache_price: tuple[float, float] | None = None,
    ) -> None:
        self.executor = executor
        self.executor_options = {key: _value(value) for key, value in executor_options}
        self.as_json = as_json
        self.prices = Price(*price, *(cache_price or (None, None))) if price else None
        self.budget = None
        if cache_price is not None and price is None:
            refuse("--cache-price needs --price IN OUT (USD per million tokens)")
        if cost_budget is not None and self.prices is None:
            refuse("--max-cost-budget needs --price IN OUT (USD per million tokens) to price calls")
        if token_budget is not None or cost_budget is not None:
            from ..budgets import Budget

            self.budget = Budget(max_tokens=token_budget, max_cost=cost_budget)

    def price_json(self) -> dict[str, float | None] | None:
        """The prices as the command's record keeps them (a resume prices calls with them)."""
        return None if self.prices is None else attrs.asdict(self.prices)


def run_options(function: F) -> F:
    options = [
        click.option(
            "--executor",
            default=None,
            metavar="NAME",
            help="Run the tasks on this executor (local, ray, ...).",
        ),
        click.option(
            "--executor-option",
            "executor_options",
            nargs=2,
            multiple=True,
            metavar="KEY VALUE",
            help="An option for the executor (VALUE read as JSON when it parses; repeatable).",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the result as JSON."),
        click.option(
            "--max-token-budget",
            "token_budget",
            type=click.IntRange(min=0),
            default=None,
            metavar="N",
            help="At most N tokens for the whole team run (shared by its tasks).",
        ),
        click.option(
            "--max-cost-budget",
            "cost_budget",
            type=click.FloatRange(min=0),
            default=None,
            metavar="USD",
            help="At most this cost (USD) for the whole team run (needs --price).",
        ),
        click.option(
            "--price",
            nargs=2,
            type=click.FloatRange(min=0),
            default=None,
            metavar="IN OUT",
            help="USD per million input and output tokens, to show and cap costs.",
        ),
        click.option(
            "--cache-price",
            nargs=2,
            type=click.FloatRange(min=0),
            default=None,
            metavar="READ WRITE",
            help="USD per million input tokens read from and written to the prompt cache "
            "(priced as input when not given).",
        ),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def _view(board: TaskBoard, as_json: bool) -> RunView:
    # With --json stdout carries the result alone, so the view goes to stderr. A terminal
    # that cannot move its cursor (TERM=dumb: an editor's shell, some CI logs) gets lines.
    stream = sys.stderr if as_json else sys.stdout
    live = stream.isatty() and os.environ.get("TERM", "") not in ("dumb", "unknown")
    return RunView(board, stream, live=live)


def _execute(view: RunView, run: Callable[[], Any], kept: str | None = None) -> TeamRunResult:
    """Run to the end; on Ctrl-C the run is cancelled (its tasks with it), the view shows what
    finished, says how to continue the run when it was ``kept`` (checkpointed under that id),
    and the command exits 130. An error that escapes the run (an executor that cannot start,
    say) is one line: status 2 for a usage or configuration error, else 1."""
    from ..errors import UsageError

    try:
        result: TeamRunResult = asyncio.run(run())
    except KeyboardInterrupt:
        view.stop()
        click.echo("interrupted; the run was cancelled", err=True)
        for line in view.board.summary():
            click.echo(f"  {printable(line)}", err=True)
        if kept is not None:
            click.echo(f"continue it with: oma runs resume {kept}", err=True)
        raise SystemExit(INTERRUPTED) from None
    except UsageError as error:
        view.stop()
        refuse(_one_line(error))
    except Exception as error:
        view.stop()
        click.echo(f"error: the run failed: {type(error).__name__}: {_one_line(error)}", err=True)
        raise SystemExit(FAILED) from None
    return result


def _new_run_id() -> str:
    from .._settings import new_run_id

    return new_run_id()


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def print_outcome(
    outcome: TeamRunResult,
    board: TaskBoard,
    options: RunOptions,
    answer: bool,
    hosts: Mapping[str, Reach] | None = None,
) -> None:
    """How ``oma tasks`` and ``oma team`` end: the result (``answer``: the team's answer,
    else the outputs of the tasks nothing depends on; JSON with ``--json``), then on stderr
    the calls a suspended run waits for and how to go on, or why it failed (exit 1)."""
    if options.as_json:
        shown = result_json(outcome, board, hosts)
        click.echo(printable_json(json.dumps(shown, ensure_ascii=False, indent=2)))
    elif answer:
        if outcome.output:
            click.echo(outcome.output)
    else:
        _echo_results(outcome)
    if outcome.success:
        return
    for request in outcome.pending:
        arguments = json.dumps(dict(request.arguments), ensure_ascii=False, sort_keys=True)
        click.echo(
            f"waiting: {request.call_id}  {request.tool}  {printable(arguments)}"
            f"  (task {printable(request.task or '-')})",
            err=True,
        )
    if outcome.pending:  # suspended, not failed: approve or deny, then resume
        click.echo(
            f"approve or deny (oma runs approve|deny {outcome.run_id} CALL_ID), then: "
            f"oma runs resume {outcome.run_id}",
            err=True,
        )
        return
    failed = [record.title for record in outcome.tasks.values() if record.status == "failed"]
    if failed:
        reason = f"{len(failed)} task{'s' if len(failed) > 1 else ''} failed: {', '.join(failed)}"
    else:
        reason = str(outcome.error or "the team run failed")
    click.echo(f"error: {printable(reason)}", err=True)
    raise SystemExit(FAILED)


def _echo_results(outcome: TeamRunResult) -> None:
    """The outputs of the tasks no other task depends on: the graph's results."""
    plan = outcome.plan or ()
    needed = {dep for task in plan for dep in task.depends_on}
    for task in plan:
        record = outcome.tasks[task.title]
        if task.title not in needed and record.status == "completed":
            click.echo(f"\n## {printable(task.title)}\n{record.output}")


def result_json(
    outcome: TeamRunResult, board: TaskBoard, hosts: Mapping[str, Reach] | None = None
) -> dict[str, Any]:
    """The ``TeamRunResult`` as JSON: each task's status, output, attempts, usage and error
    (explained for its agent, from ``hosts``: the host of a connection error, the advice
    for a refused key)."""
    hosts = hosts or {}

    def price(value: Usage) -> float | None:
        return None if board.prices is None else board.prices(value)

    tasks = {
        title: {
            "status": record.status,
            "assignee": record.assignee,
            "attempts": record.attempts,
            "output": record.output,
            "error": None
            if record.error is None
            else explained_by(hosts, record.error, record.assignee),
            "usage": usage_json(record.usage),
            "cost": price(record.usage),
        }
        for title, record in outcome.tasks.items()
    }
    plan = None
    if outcome.plan is not None:
        plan = [
            {
                "title": task.title,
                "description": task.description,
                "assignee": task.assignee,
                "depends_on": list(task.depends_on),
                "max_retries": task.max_retries,
            }
            for task in outcome.plan
        ]
    return {
        "success": outcome.success,
        "tasks": tasks,
        "plan": plan,
        "output": outcome.output,
        "usage": usage_json(outcome.usage),
        "cost": price(outcome.usage),
        "error": None if outcome.error is None else str(outcome.error),
        "pending": [request.to_json() for request in outcome.pending],
    }


def _board(team: Team, settings: RunOptions, coordinator: str | None = None) -> TaskBoard:
    return TaskBoard(
        team.name,
        coordinator=coordinator,
        prices=settings.prices,
        budget=settings.budget,
    )


@click.command()
@click.argument("plan_file", metavar="PLAN.json")
@click.option(
    "--agents",
    "agents_file",
    default=None,
    metavar="AGENTS.json",
    help="Take the team (name, max_concurrency, agents) from this file instead.",
)
@run_options
def tasks(plan_file: str, agents_file: str | None, **given: Any) -> None:
    """Run the task graph in PLAN.json (agents, tasks, dependencies) with a live view."""
    from ..errors import PlanError
    from ..teams import check_plan

    settings = RunOptions(**given)
    plan = team_file(plan_file, ("tasks",))
    team_source = team_file(agents_file) if agents_file is not None else plan
    team = load_team(team_source, agents_file or plan_file, stem(plan_file))
    listed = plan.get("tasks")
    if not isinstance(listed, list) or not listed:
        refuse(f"{plan_file}: tasks must be a non-empty list of tasks")
    specs = [task_spec(item, f"{plan_file}: tasks[{i}]") for i, item in enumerate(listed)]
    try:
        checked = check_plan(team, specs)
    except PlanError as error:
        refuse(f"{plan_file}: {error}")
    board = _board(team, settings)
    for index, spec in enumerate(checked):
        board.add(spec.title, spec.assignee or team.agents[index % len(team.agents)].name)
    team, _ = with_keys(team, None)
    _interruptible(check_agents(team.agents))
    hosts = reaches(team.agents, host_of_plugins())
    view = _view(board, settings.as_json)
    store = _store()
    oma = _orchestrator(settings, view, hosts, store)
    command = {
        "command": "tasks",
        "plan_file": os.path.abspath(plan_file),
        "team_file": os.path.abspath(agents_file or plan_file),
        "team_file_plan": agents_file is None,
        "executor": settings.executor,
        "price": settings.price_json(),
    }

    run_id = _new_run_id()

    async def run() -> TeamRunResult:
        try:
            await _keep_command(store, run_id, command)
            async with oma, view:
                return await oma.run_tasks(team, checked, budget=settings.budget, run_id=run_id)
        finally:
            await store.aclose()

    print_outcome(_execute(view, run, run_id), board, settings, answer=False, hosts=hosts)


@click.command()
@click.argument("goal")
@click.option(
    "--agents",
    "agents_file",
    required=True,
    metavar="AGENTS.json",
    help="The team: name, max_concurrency, agents (and a coordinator).",
)
@click.option(
    "--coordinator",
    "coordinator_file",
    default=None,
    metavar="AGENT.json",
    help="The coordinator's AgentConfig (default: the agents file's, else one on the first "
    "agent's provider and model).",
)
@click.option("--plan-only", is_flag=True, help="Print the coordinator's plan; run nothing.")
@run_options
def team(
    goal: str, agents_file: str, coordinator_file: str | None, plan_only: bool, **given: Any
) -> None:
    """Let a coordinator plan GOAL for the team in AGENTS.json, run the plan, and answer."""
    settings = RunOptions(**given)
    source = team_file(agents_file)
    team = load_team(source, agents_file, stem(agents_file))
    coordinator = None
    if coordinator_file is not None:
        coordinator = agent_config(read_json_or_refuse(coordinator_file), coordinator_file)
    elif "coordinator" in source:
        coordinator = agent_config(source["coordinator"], f"{agents_file}: coordinator")
    team, coordinator = with_keys(team, coordinator)
    _interruptible(check_agents([*team.agents, *([coordinator] if coordinator else [])]))
    board = _board(team, settings, coordinator.name if coordinator else "coordinator")
    hosts = reaches([*team.agents, coordinator], host_of_plugins())
    view = _view(board, settings.as_json)
    store = None if plan_only else _store()  # a plan only keeps nothing
    oma = _orchestrator(settings, view, hosts, store)
    command = {
        "command": "team",
        "goal": goal,
        "team_file": os.path.abspath(agents_file),
        "team_file_plan": False,
        "coordinator_file": None if coordinator_file is None else os.path.abspath(coordinator_file),
        "executor": settings.executor,
        "price": settings.price_json(),
    }

    run_id = _new_run_id()

    async def run() -> TeamRunResult:
        try:
            if store is not None:
                await _keep_command(store, run_id, command)
            async with oma, view:
                return await oma.run_team(
                    team,
                    goal,
                    coordinator=coordinator,
                    plan_only=plan_only,
                    budget=settings.budget,
                    run_id=run_id,
                )
        finally:
            if store is not None:
                await store.aclose()

    outcome = _execute(view, run, None if store is None else run_id)
    if plan_only and not settings.as_json and outcome.plan is not None:
        for task in outcome.plan:
            after = f" (after {', '.join(task.depends_on)})" if task.depends_on else ""
            line = f"- {task.title} [{task.assignee or 'anyone'}]{after}: {task.description}"
            click.echo(printable(line))
    print_outcome(outcome, board, settings, answer=not plan_only, hosts=hosts)
