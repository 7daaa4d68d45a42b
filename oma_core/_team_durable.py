"""Durable team runs: the journal ``run_tasks``/``run_team`` keep with a run store, and what
``resume`` reads back of a team run.

A team run's checkpoint (kind "tasks" or "team", under the team run's id) holds the team
(each agent's ``config_head``), the plan, the goal and coordinator of ``run_team``, and every
task's state: its status, the attempt under way, the usage of its finished attempts and its
error. Each agent run of the team run is a durable run of its own, the team run's child,
under ``<team run id>/<key>``: ``<position>`` for a task's first attempt (from 1, in plan
order), ``<position>.<attempt>`` for a retry, ``plan`` and ``final`` for the coordinator's.
A finished child is read back and never run again; a child in flight (or suspended) resumes
from its own checkpoint through the agent run's ``Recorder``, so a checkpointed tool result
is never run again either. A run on another executor than the local one (Ray), or on an
external agent, is kept when it returns: finished tasks are not rerun, a task in flight is
run again. A shared ``Budget`` goes on from the largest spend the team run's checkpoints and
those of its children under way recorded (``OpenedTeamRun.budget``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, NoReturn

import attrs

from ._approvals import ApprovalRequest
from ._checkpoints import encode
from ._durable import (
    FINISHED,
    Recorder,
    budget_json,
    config_from,
    config_head,
    continued_budget,
    handing,
    open_run,
    read_state,
    recorded_usage,
)
from ._run_store import StoredRun
from .errors import CheckpointError, ResumeMissingError, RunError, UnknownApprovalError
from .providers import Usage
from .redaction import redact_error

if TYPE_CHECKING:
    from ._config import AgentConfig
    from ._results import RunResult
    from ._run_store import RunStore
    from .budgets import Budget
    from .teams import TaskResult, TaskSpec, Team, TeamRunResult

__all__ = [
    "TEAM_KINDS",
    "OpenedTeamRun",
    "TeamRecorder",
    "child_run_id",
    "child_spent",
    "open_team_run",
    "run_kind",
    "team_head",
]

#: The kinds of a team run's checkpoint: ``run_tasks``'s and ``run_team``'s.
TEAM_KINDS = ("tasks", "team")

_child: ContextVar[tuple[str, Usage | None] | None] = ContextVar("oma_team_child", default=None)


def child_run_id() -> str | None:
    """The id the agent run starting now has in a durable team run (None outside one)."""
    child = _child.get()
    return None if child is None else child[0]


def child_spent() -> Usage | None:
    """What the earlier lives of the agent run resumed now spent (None: a fresh run)."""
    child = _child.get()
    return None if child is None else child[1]


def team_head(team: Team) -> dict[str, Any]:
    """The plain part of ``team`` a checkpoint holds: its name, concurrency and agents."""
    return {
        "name": team.name,
        "max_concurrency": team.max_concurrency,
        "agents": [config_head(config) for config in team.agents],
    }


def _spec_json(task: TaskSpec) -> dict[str, Any]:
    return {
        "title": task.title,
        "description": task.description,
        "assignee": task.assignee,
        "depends_on": list(task.depends_on),
        "max_retries": task.max_retries,
        "output_type": task.output_type is not None,
        "prompt": task.prompt is not None,
    }


def _usage(data: Mapping[str, Any]) -> Usage:
    return Usage(**{field: int(data.get(field, 0)) for field in attrs.fields_dict(Usage)})


def _plain_error(error: BaseException | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {"type": type(error).__name__, "message": str(redact_error(error))}


class TeamRecorder:
    """The journal of one durable team run (``oma_core.teams.TeamJournal``): each change
    of its tasks is one checkpoint, and each agent run a durable child run.

    ``restored`` is the earlier life's state when the run is resumed; ``local``: the tasks
    run on this event loop (the local executor), so their runs checkpoint as they go.
    """

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        kind: str,
        head: Mapping[str, Any],
        *,
        local: bool,
        restored: Mapping[str, Any] | None = None,
        info: Mapping[str, Any] | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.kind = kind
        self.head = dict(head)
        self.local = local
        self.restored = restored
        self.records: list[TaskResult] = []
        self.plan: tuple[TaskSpec, ...] | None = None
        self.planning = Usage()
        self.requested: list[str] = [] if restored is None else list(restored["requested"])
        self._created = time.time() if restored is None else float(restored["created"])
        self._lock = asyncio.Lock()
        #: What else the checkpoint holds as given: ``run_team``'s goal and coordinator, the
        #: executor's name.
        self.info = dict(info or {})
        #: The ``Budget`` shared by the team run's agent runs: every checkpoint (the team
        #: run's and its children's) holds what was spent against it.
        self.budget = budget
        #: The child run of each agent run by its key (``attempt``).
        self._runs: dict[str, str] = {}
        if restored is not None and restored.get("plan") is not None:
            self.planning = _usage(restored["planning"])

    # -- what the team engine reports (``TeamJournal``) ----------------------------------------

    async def restore(self, records: list[TaskResult], plan: tuple[TaskSpec, ...]) -> None:
        """Keep ``records`` (saved from now on) and put the earlier life's task states in."""
        self.records, self.plan = records, plan
        tasks = {} if self.restored is None else self.restored["tasks"]
        specs = {task.title: task for task in plan}
        for index, record in enumerate(records):
            kept = tasks.get(record.title)
            if kept is None:
                continue
            if kept["run"] is not None:
                self._runs[_key(index, int(kept["attempts"]))] = kept["run"]
            record.attempts = int(kept["attempts"])
            record.usage = _usage(kept["usage"])
            status = kept["status"]
            if status in ("completed", "failed", "skipped"):
                record.status = status
                if kept["run"] is not None:
                    output_type = specs[record.title].output_type
                    opened = await open_run(self.store, kept["run"])
                    record.result = await opened.result(self.store, output_type)
                if kept["error"] is not None:
                    error = kept["error"]
                    record.error = RunError(f"{error['type']}: {error['message']}")
        await self.save()

    async def attempt(
        self, key: str, config: AgentConfig, run: Callable[[], Awaitable[RunResult]]
    ) -> RunResult:
        """The agent run ``key``: read back when its store holds it finished, resumed from
        its checkpoint when it holds it under way, else started (``run()``)."""
        child = f"{self.run_id}/{key}"
        self._runs[key] = child
        opened = None
        # only a resumed team run has children to read back (a fresh run given an id used
        # before starts afresh, as a run_agent run does)
        if self.restored is not None and await self.store.load(child) is not None:
            opened = await open_run(self.store, child)
            if opened.finished:
                return await opened.result(self.store, config.output_type)
        await self.save()  # the attempt is under way
        local = (self.local or key in ("plan", "final")) and config.backend is None
        if not local:  # it runs elsewhere: kept once it returns
            result = await run()
            kept = Recorder(self.store, child, config_head(config), budget=self.budget)
            await kept.finish(result)
            return attrs.evolve(result, run_id=child)
        restored = decisions = spent = None
        if opened is not None:
            config_from(child, opened.state["agent"], config, "team")
            restored, decisions = opened.state, await self.store.decisions(child)
            spent = recorded_usage(opened.state)
        recorder = Recorder(
            self.store,
            child,
            config_head(config),
            restored=restored,
            decisions=decisions,
            budget=self.budget,
        )
        token = _child.set((child, spent))
        try:
            with handing(recorder):
                result = await run()
        finally:
            _child.reset(token)
        await recorder.finish(result)
        return attrs.evolve(result, run_id=child)

    def planned(self) -> tuple[tuple[TaskSpec, ...], Usage] | None:
        state = self.restored
        if state is None or state.get("plan") is None:
            return None
        return _specs(self.run_id, state["plan"], None), self.planning

    async def keep_plan(self, plan: tuple[TaskSpec, ...], usage: Usage) -> None:
        self.plan, self.planning = plan, usage
        await self.save()

    async def save(self, status: str = "running", extra: Mapping[str, Any] | None = None) -> None:
        """One checkpoint of the team run as it stands, replacing the last (atomically;
        saves are taken one at a time, so a later state is never overwritten by an
        earlier one)."""
        async with self._lock:
            state = self._state(status, extra)
            data = encode(state)
            pending = len(state["pending"])
            stored = StoredRun(
                self.run_id, self.kind, status, data, self._created, time.time(), None, pending
            )
            await self.store.save(stored)

    async def finish(self, result: TeamRunResult) -> TeamRunResult:
        """The team run ended (or suspended) with ``result``: its last checkpoint."""
        status = "suspended" if result.pending else ("ok" if result.success else "error")
        self.requested += [r.call_id for r in result.pending if r.call_id not in self.requested]
        extra = {
            "output": result.output,
            "success": result.success,
            "error": _plain_error(result.error),
            "usage": attrs.asdict(result.usage),
            "pending": [request.to_json() for request in result.pending],
        }
        await self.save(status, extra)
        return attrs.evolve(result, run_id=self.run_id)

    def _state(self, status: str, extra: Mapping[str, Any] | None) -> dict[str, Any]:
        tasks: dict[str, Any] = {}
        usage = self.planning
        pending: list[dict[str, Any]] = []
        for index, record in enumerate(self.records):
            key = _key(index, record.attempts)
            finished = record.status in ("completed", "failed", "waiting")
            tasks[record.title] = {
                "status": record.status,
                "assignee": record.assignee,
                "attempts": record.attempts,
                # a task under way counts the attempts it finished; its run counts its own
                "usage": attrs.asdict(_finished_usage(record)),
                "run": self._runs.get(key) if finished else None,
                "error": _plain_error(record.error) if record.status == "failed" else None,
            }
            usage = usage + record.usage
            if record.status == "waiting" and record.result is not None:
                pending += [request.to_json() for request in record.result.pending]
        plan = None if self.plan is None else [_spec_json(task) for task in self.plan]
        return {
            "kind": self.kind,
            "status": status,
            "created": self._created,
            "team": self.head,
            **self.info,
            "plan": plan,
            "planning": attrs.asdict(self.planning),
            "tasks": tasks,
            "requested": self.requested,
            "pending": pending,
            "usage": attrs.asdict(usage),
            "budget": budget_json(self.budget),
            "output": "",
            "success": False,
            "error": None,
            **(extra or {}),
        }


def _finished_usage(record: TaskResult) -> Usage:
    """What ``record``'s finished attempts cost: a waiting task's suspended attempt is left
    out (its run, resumed, counts both its lives)."""
    if record.status != "waiting" or record.result is None:
        return record.usage
    spent, suspended = attrs.asdict(record.usage), attrs.asdict(record.result.usage)
    return Usage(**{field: spent[field] - suspended[field] for field in spent})


def _key(index: int, attempt: int) -> str:
    """The key of the agent run of attempt ``attempt`` of the task at ``index``."""
    return str(index + 1) + (f".{attempt}" if attempt > 1 else "")


def _plain_specs(data: Iterable[Mapping[str, Any]]) -> tuple[TaskSpec, ...]:
    """A checkpoint's plan as ``TaskSpec``s, without what it cannot hold."""
    from .teams import TaskSpec

    return tuple(
        TaskSpec(
            item["title"],
            item["description"],
            item["assignee"],
            tuple(item["depends_on"]),
            item["max_retries"],
        )
        for item in data
    )


def _never(run_id: str, held: list[str]) -> NoReturn:
    raise ResumeMissingError(
        run_id,
        f"the plan's tasks {held!r}, which have output types or prompt builders (tasks=...)",
    )


def _specs(
    run_id: str, data: Iterable[Mapping[str, Any]], given: Iterable[TaskSpec] | None
) -> tuple[TaskSpec, ...]:
    """The plan a checkpoint holds, as ``TaskSpec``s: ``given`` again when a task had an
    output type or a prompt builder (a checkpoint cannot hold them), checked to be that
    plan."""
    data = list(data)
    kept = _plain_specs(data)
    held = [item["title"] for item in data if item["output_type"] or item["prompt"]]
    if given is None:
        if held:
            _never(run_id, held)
        return tuple(kept)
    plan = tuple(given)
    shape = [(t.title, t.description, t.assignee, t.depends_on) for t in plan]
    if shape != [(t.title, t.description, t.assignee, t.depends_on) for t in kept]:
        raise CheckpointError(run_id, "the tasks given are not the plan it ran")
    return plan


# -- reading a team run back -------------------------------------------------------------------


@attrs.frozen
class OpenedTeamRun:
    """A durable team run read back from its store and checked: its ``state``."""

    run_id: str
    state: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.state["kind"])

    @property
    def finished(self) -> bool:
        return self.state["status"] in FINISHED

    def pending(self) -> tuple[ApprovalRequest, ...]:
        return tuple(ApprovalRequest.from_json(data) for data in self.state["pending"])

    async def result(self, store: RunStore, tasks: Iterable[TaskSpec] | None) -> TeamRunResult:
        """The stored result of a finished team run, read back without its team: each
        task's result from its own run (``structured`` validated again against the output
        types of ``tasks`` when given, else None)."""
        from .teams import TaskResult, TeamRunResult

        state = self.state
        given = {task.title: task for task in tasks or ()}
        records: dict[str, TaskResult] = {}
        for title, kept in dict(state["tasks"]).items():
            record = TaskResult(title, kept["status"], kept["assignee"], int(kept["attempts"]))
            record.usage = _usage(kept["usage"])
            if kept["run"] is not None:
                output_type = given[title].output_type if title in given else None
                opened = await open_run(store, kept["run"])
                record.result = await opened.result(store, output_type)
            if kept["error"] is not None:
                record.error = RunError(f"{kept['error']['type']}: {kept['error']['message']}")
            records[title] = record
        plan = None
        if state["plan"] is not None:
            plan = tuple(given.values()) if given else _plain_specs(state["plan"])
        error = state.get("error")
        return TeamRunResult(
            bool(state.get("success")),
            records,
            plan,
            str(state.get("output") or ""),
            _usage(state["usage"]),
            None if error is None else RunError(f"{error['type']}: {error['message']}"),
            run_id=self.run_id,
        )

    def team(self, given: Team | None) -> Team:
        """The team to go on with: ``given`` (which must have every agent the run used,
        with their tools), or one rebuilt from the checkpoint when it held all of it."""
        from .teams import Team

        head = self.state["team"]
        agents = head["agents"]
        if given is not None:
            names = {config.name for config in given.agents}
            missing = [agent["name"] for agent in agents if agent["name"] not in names]
            if missing:
                raise ResumeMissingError(self.run_id, f"the team's agents {missing!r} (team=...)")
            for agent in agents:
                config_from(self.run_id, agent, given.agent(agent["name"]), "team")
            return given
        configs = [config_from(self.run_id, agent, None, "team=Team(...)") for agent in agents]
        return Team(head["name"], tuple(configs), head["max_concurrency"])

    def plan(self, given: Iterable[TaskSpec] | None) -> tuple[TaskSpec, ...]:
        """The plan of a ``run_tasks`` run (see ``_specs``)."""
        return _specs(self.run_id, self.state["plan"], given)

    def coordinator(self, given: AgentConfig | None) -> AgentConfig | None:
        """The coordinator of a ``run_team`` run: ``given``, else the one it ran with
        (None: the team's default coordinator)."""
        head = self.state.get("coordinator")
        if head is None:
            return given
        return config_from(self.run_id, head, given, "config")

    async def budget(self, store: RunStore, given: Budget | None) -> Budget | None:
        """The shared ``Budget`` the resumed team run goes on with (``continued_budget``):
        charged with the most its checkpoints say was spent against it — the team run's own
        and those of its agent runs that were under way, which checkpoint after every model
        turn (a ledger only grows: the largest figure is the latest)."""
        saved = self.state.get("budget")  # .get: checkpoints written before it was kept
        if saved is None:
            return given
        latest = dict(saved)
        for child in self._under_way():
            if await store.load(child) is None:
                continue
            kept = (await read_state(store, child)).get("budget")
            if kept is None:
                continue
            latest["used_tokens"] = max(int(latest["used_tokens"]), int(kept["used_tokens"]))
            if latest["used_cost"] is not None:
                cost = kept["used_cost"]
                latest["used_cost"] = None if cost is None else max(latest["used_cost"], cost)
        return continued_budget(latest, given)

    def _under_way(self) -> list[str]:
        """The ids of the agent runs the checkpoint says were under way (or may have been):
        the running tasks' attempts and the coordinator's runs."""
        state = self.state
        titles = [item["title"] for item in state["plan"] or ()]
        keys = ["plan", "final"]
        for index, title in enumerate(titles):
            kept = state["tasks"].get(title)
            if kept is not None and kept["status"] == "running":
                keys.append(_key(index, max(1, int(kept["attempts"]))))
        return [f"{self.run_id}/{key}" for key in keys]

    async def decide(self, store: RunStore, approvals: Mapping[str, Any] | None) -> None:
        """Store the decisions of ``approvals`` with the task runs that asked for them (the
        first stored wins; each task run's own checks apply)."""
        if not approvals:
            return
        by_run: dict[str, dict[str, Any]] = {}
        requests = self.pending()
        requested = set(self.state["requested"])
        for call_id, decision in approvals.items():
            runs = [request.run_id for request in requests if request.call_id == call_id]
            if not runs and call_id not in requested:
                raise UnknownApprovalError(self.run_id, call_id)
            for run in runs:
                by_run.setdefault(run, {})[call_id] = decision
        for run, decisions in by_run.items():
            await (await open_run(store, run)).decide(store, decisions)


async def open_team_run(store: RunStore, run_id: str, state: Mapping[str, Any]) -> OpenedTeamRun:
    """The team run ``run_id`` whose checked checkpoint state is ``state``;
    ``CheckpointError`` when it lacks part of a team run's state."""
    needed = ("status", "team", "plan", "tasks", "requested", "pending", "usage")
    if any(key not in state for key in needed):
        raise CheckpointError(run_id, "it lacks part of a team run's state")
    return OpenedTeamRun(run_id, state)


async def run_kind(store: RunStore, run_id: str) -> tuple[str, dict[str, Any]]:
    """The kind of the stored run ``run_id`` ("agent", "tasks", "team") and its state."""
    state = await read_state(store, run_id)
    return str(state.get("kind")), state
