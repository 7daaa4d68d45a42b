"""``oma runs``: the durable runs a run store keeps, and the decisions they wait for.

- ``oma runs [--json]``: every run (id, kind, status, age, cost, pending approvals), most
  recently updated first;
- ``oma runs show ID [--json]``: one run: its status, turns, output and the calls it waits for,
  with their arguments and any decision stored;
- ``oma runs approve ID CALL_ID`` / ``oma runs deny ID CALL_ID [--reason TEXT]``: store a
  decision (the first stored wins); the run goes on at the next ``resume``;
- ``oma runs resume ID``: continue the run from its checkpoint. The config is rebuilt from the
  checkpoint, which works for a run whose provider is a registered name and that used no
  tools, provider options or output type; otherwise the error names what is missing (resume
  it from code, ``OpenMultiAgent.resume(run_id, config=...)``). A team run started by ``oma
  tasks`` or ``oma team`` is rebuilt from the files its command read.

A team run's tasks are runs of their own (``<team run id>/<task>``): the list shows the team
run alone, ``show`` its tasks.

``--store`` takes what ``OpenMultiAgent(store=...)`` takes: ``sqlite`` (the oma home's
``runs.db``, the default), ``sqlite:PATH`` or a store URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ._exits import FAILED, reported
from ._live import printable

if TYPE_CHECKING:
    from .._durable import OpenedRun
    from .._run_store import RunStore, StoredRun
    from .._team_durable import OpenedTeamRun
    from ..teams import TeamRunResult

T = TypeVar("T")

_STORE_HELP = "The run store: sqlite (the oma home's runs.db), sqlite:PATH or a store URL."


def _with_store(given: str | None, work: Callable[[RunStore], Awaitable[T]]) -> T:
    """``work`` done on the store ``given`` names (closed after), oma's errors reported."""
    from ..stores import open_store

    async def main() -> T:
        store = open_store(given or "sqlite")
        assert store is not None
        try:
            return await work(store)
        finally:
            await store.aclose()

    with reported():
        return asyncio.run(main())
    raise AssertionError("unreachable")  # reported() exits on every error


def _age(seconds: float) -> str:
    """``seconds`` said shortly: 42s, 5m, 3h, 2d."""
    seconds = max(0.0, seconds)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _cost(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.4f}"


def _listed(run: StoredRun, now: float) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "kind": run.kind,
        "status": run.status,
        "created": run.created,
        "updated": run.updated,
        "age": max(0.0, now - run.updated),
        "cost": run.cost,
        "pending": run.pending,
    }


@click.group("runs", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON.")
@click.option("--store", "store", default=None, metavar="STORE", help=_STORE_HELP)
@click.pass_context
def runs(ctx: click.Context, as_json: bool, store: str | None) -> None:
    """List the durable runs a run store keeps; show, approve, deny or resume one."""
    ctx.obj = {"store": store}
    if ctx.invoked_subcommand is not None:
        return

    async def work(found: RunStore) -> list[StoredRun]:
        kept = await found.runs()
        teams = {run.run_id for run in kept if run.kind in ("tasks", "team")}
        return [run for run in kept if run.run_id.rpartition("/")[0] not in teams]

    kept = _with_store(store, work)
    now = time.time()
    rows = [_listed(run, now) for run in kept]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("no durable runs")
        return
    header = ("ID", "KIND", "STATUS", "AGE", "COST", "PENDING")
    table = [header] + [
        (
            row["run_id"],
            row["kind"],
            row["status"],
            _age(row["age"]),
            _cost(row["cost"]),
            str(row["pending"]),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )


def _store_of(ctx: click.Context, given: str | None) -> str | None:
    """The store named after the subcommand, else before it (``oma runs --store X show``)."""
    if given is not None:
        return given
    parent = ctx.find_object(dict)
    return None if parent is None else parent.get("store")


async def _team_run(store: RunStore, run_id: str) -> OpenedTeamRun | None:
    """The team run ``run_id`` read back and checked, or None when it is not a team run."""
    from .._team_durable import TEAM_KINDS, open_team_run, run_kind

    record = await store.load(run_id)
    if record is None or record.kind not in TEAM_KINDS:
        return None
    _, state = await run_kind(store, run_id)
    return await open_team_run(store, run_id, state)


async def _opened(store: RunStore, run_id: str) -> tuple[StoredRun, OpenedRun]:
    """The record and the checked checkpoint of ``run_id`` (``UnknownRunError`` if none)."""
    from .._durable import open_run
    from ..errors import UnknownRunError

    record = await store.load(run_id)
    if record is None:
        raise UnknownRunError(run_id)
    return record, await open_run(store, run_id)


def _shown(record: StoredRun, opened: OpenedRun, decisions: Mapping[str, Any]) -> dict[str, Any]:
    """What ``oma runs show`` prints of a run, as JSON data."""
    state = opened.state
    agent = state["agent"]
    pending = []
    for request in opened.pending():
        data = request.to_json()
        kept = decisions.get(request.call_id)
        data["decision"] = (
            None if kept is None else {"approve": kept.get("approve"), "reason": kept.get("reason")}
        )
        pending.append(data)
    return {
        "run_id": record.run_id,
        "kind": record.kind,
        "status": state["status"],
        "created": record.created,
        "updated": record.updated,
        "cost": record.cost,
        "agent": {
            "name": agent.get("name"),
            "provider": agent.get("provider"),
            "model": agent.get("model"),
            "tools": list(agent.get("tools", ())),
        },
        "turns": state.get("turns"),
        "tool_calls": state.get("tool_calls"),
        "usage": dict(state["usage"]),
        "output": state.get("output"),
        "pending": pending,
    }


async def _team_shown(store: RunStore, record: StoredRun) -> dict[str, Any]:
    """What ``oma runs show`` prints of a team run: its tasks, their runs, what they wait for."""
    from .._checkpoints import decode

    state = decode(record.run_id, record.checkpoint)
    pending = []
    for data in state.get("pending", ()):
        kept = (await store.decisions(data["run_id"])).get(data["call_id"])
        decision = (
            None if kept is None else {"approve": kept.get("approve"), "reason": kept.get("reason")}
        )
        pending.append({**data, "decision": decision})
    tasks = {
        title: {
            "status": task["status"],
            "assignee": task["assignee"],
            "attempts": task["attempts"],
            "run_id": task["run"],
        }
        for title, task in dict(state.get("tasks", {})).items()
    }
    return {
        "run_id": record.run_id,
        "kind": record.kind,
        "status": state["status"],
        "created": record.created,
        "updated": record.updated,
        "cost": record.cost,
        "team": state["team"]["name"],
        "goal": state.get("goal"),
        "tasks": tasks,
        "usage": dict(state["usage"]),
        "output": state.get("output"),
        "pending": pending,
    }


def _echo_team(data: Mapping[str, Any]) -> None:
    click.echo(f"team: {printable(data['team'])}")
    if data["goal"] is not None:
        click.echo(f"goal: {printable(data['goal'])}")
    click.echo(f"cost: {_cost(data['cost'])}")
    if data["tasks"]:
        click.echo("tasks:")
    for title, task in data["tasks"].items():
        run = f"  run {task['run_id']}" if task["run_id"] else ""
        click.echo(
            f"  {printable(title)}  {task['status']}  ({printable(task['assignee'] or '-')}, "
            f"{task['attempts']} attempt{'s' if task['attempts'] != 1 else ''}){run}"
        )
    if data["output"]:
        click.echo(f"output: {data['output']}")
    _echo_pending(data["pending"])


def _echo_pending(pending: list[Mapping[str, Any]]) -> None:
    if pending:
        click.echo("pending approvals:")
    for request in pending:
        arguments = json.dumps(request["arguments"], ensure_ascii=False, sort_keys=True)
        click.echo(
            f"  {request['call_id']}  {request['tool']}  {printable(arguments)}  "
            f"[{_decision_text(request['decision'])}]"
        )


def _decision_text(decision: Mapping[str, Any] | None) -> str:
    if decision is None:
        return "waiting"
    if decision.get("approve"):
        return "approved"
    reason = decision.get("reason")
    return "denied" + (f" ({reason})" if reason else "")


@runs.command("show")
@click.argument("run_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@click.option("--store", "store", default=None, metavar="STORE", help=_STORE_HELP)
@click.pass_context
def show(ctx: click.Context, run_id: str, as_json: bool, store: str | None) -> None:
    """One run: its status, turns, output and the calls it waits for, with their arguments."""

    async def work(found: RunStore) -> dict[str, Any]:
        from ..errors import CheckpointError

        record = await found.load(run_id)
        if record is not None and record.kind in ("tasks", "team"):
            with contextlib.suppress(CheckpointError):  # unreadable: its record is shown
                return await _team_shown(found, record)
        if record is not None and record.kind != "agent":  # not a run to resume: its record
            listed = _listed(record, time.time())
            return {**listed, "agent": None, "pending": [], "pending_count": listed["pending"]}
        record, opened = await _opened(found, run_id)
        return _shown(record, opened, await found.decisions(run_id))

    data = _with_store(_store_of(ctx, store), work)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"run {data['run_id']}")
    click.echo(f"kind: {data['kind']}")
    click.echo(f"status: {data['status']}")
    if "tasks" in data:
        _echo_team(data)
        return
    agent = data["agent"]
    if agent is None:
        click.echo(f"cost: {_cost(data['cost'])}, pending approvals: {data['pending_count']}")
        return
    model = ":".join(part for part in (agent["provider"], agent["model"]) if part)
    click.echo(f"agent: {agent['name']} ({model or '-'})")
    click.echo(f"turns: {data['turns']}, tool calls: {data['tool_calls']}")
    click.echo(f"cost: {_cost(data['cost'])}")
    if data["output"]:
        click.echo(f"output: {data['output']}")
    _echo_pending(data["pending"])


def _decide(
    ctx: click.Context,
    run_id: str,
    call_id: str,
    approve: bool,
    reason: str | None,
    store: str | None,
) -> None:
    """Store a decision on ``call_id`` of ``run_id`` and say which decision is kept."""
    from .._approvals import Approval

    async def work(found: RunStore) -> Mapping[str, Any] | None:
        decision = {call_id: Approval(approve, reason=reason)}
        team = await _team_run(found, run_id)
        if team is not None:  # stored with the task run that asked
            await team.decide(found, decision)
            runs = [r.run_id for r in team.pending() if r.call_id == call_id] or [run_id]
            return (await found.decisions(runs[0])).get(call_id)
        _, opened = await _opened(found, run_id)
        await opened.decide(found, decision)
        return (await found.decisions(run_id)).get(call_id)

    kept = _with_store(_store_of(ctx, store), work)
    said = _decision_text(kept)
    if kept is not None and bool(kept.get("approve")) != approve:
        click.echo(f"call {call_id} of run {run_id} was {said} already (the first decision wins)")
        return
    click.echo(
        f"call {call_id} of run {run_id}: {said}; continue it with: oma runs resume {run_id}"
    )


@runs.command("approve")
@click.argument("run_id", metavar="ID")
@click.argument("call_id", metavar="CALL_ID")
@click.option("--store", "store", default=None, metavar="STORE", help=_STORE_HELP)
@click.pass_context
def approve(ctx: click.Context, run_id: str, call_id: str, store: str | None) -> None:
    """Approve a call the run waits for; it runs at the next `oma runs resume`."""
    _decide(ctx, run_id, call_id, True, None, store)


@runs.command("deny")
@click.argument("run_id", metavar="ID")
@click.argument("call_id", metavar="CALL_ID")
@click.option("--reason", default=None, metavar="TEXT", help="Why: the model is told it.")
@click.option("--store", "store", default=None, metavar="STORE", help=_STORE_HELP)
@click.pass_context
def deny(
    ctx: click.Context, run_id: str, call_id: str, reason: str | None, store: str | None
) -> None:
    """Deny a call the run waits for; the model gets an error result giving the reason."""
    _decide(ctx, run_id, call_id, False, reason, store)


@runs.command("resume")
@click.argument("run_id", metavar="ID")
@click.option("--store", "store", default=None, metavar="STORE", help=_STORE_HELP)
@click.pass_context
def resume(ctx: click.Context, run_id: str, store: str | None) -> None:
    """Continue a run from its last checkpoint with the decisions stored; print its output.

    The agent is rebuilt from the checkpoint: a run that used tools, provider options or an
    output type is resumed from code (`OpenMultiAgent.resume(run_id, config=...)`), and the
    error says what is missing.
    """
    from ..orchestrator import OpenMultiAgent
    from ..teams import TeamRunResult

    async def work(found: RunStore) -> Any:
        if await _team_run(found, run_id) is not None:
            from ._tasks import rebuilt

            made = await rebuilt(found, run_id)
            if made is None:  # started from code: rebuilt from its checkpoint, if it can be
                return await OpenMultiAgent(store=found).resume(run_id)
            return await made.resume(found, run_id)
        await _opened(found, run_id)  # an unknown id is said before anything starts
        return await OpenMultiAgent(store=found).resume(run_id)

    result = _with_store(_store_of(ctx, store), work)
    if isinstance(result, TeamRunResult):
        _team_resumed(run_id, result)
        return
    if result.output:
        click.echo(result.output)
    code = result.status.code
    for request in result.pending:
        arguments = json.dumps(dict(request.arguments), ensure_ascii=False, sort_keys=True)
        click.echo(f"waiting: {request.call_id}  {request.tool}  {arguments}", err=True)
    if code not in ("ok", "suspended"):
        error = result.status.error
        click.echo(f"error: run {run_id} ended {code}" + (f": {error}" if error else ""), err=True)
        raise SystemExit(FAILED)


def _team_resumed(run_id: str, result: TeamRunResult) -> None:
    """A resumed team run's outcome: its answer (``oma team``) or each task's state and the
    outputs of the tasks nothing depends on (``oma tasks``); exit 1 when it failed."""
    if result.output:
        click.echo(result.output)
    else:
        needed = {dep for task in result.plan or () for dep in task.depends_on}
        for title, record in result.tasks.items():
            if title not in needed and record.status == "completed":
                click.echo(f"\n## {printable(title)}\n{record.output}")
    for request in result.pending:
        arguments = json.dumps(dict(request.arguments), ensure_ascii=False, sort_keys=True)
        click.echo(f"waiting: {request.call_id}  {request.tool}  {printable(arguments)}", err=True)
    if result.success or result.pending:
        return
    failed = [title for title, record in result.tasks.items() if record.status == "failed"]
    reason = f"tasks failed: {', '.join(failed)}" if failed else str(result.error or "it failed")
    click.echo(f"error: team run {run_id}: {printable(reason)}", err=True)
    raise SystemExit(FAILED)
