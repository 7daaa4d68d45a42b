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
  it from code, ``OpenMultiAgent.resume(run_id, config=...)``).

``--store`` takes what ``OpenMultiAgent(store=...)`` takes: ``sqlite`` (the oma home's
``runs.db``, the default), ``sqlite:PATH`` or a store URL.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ._exits import FAILED, reported

if TYPE_CHECKING:
    from .._durable import OpenedRun
    from .._run_store import RunStore, StoredRun

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
        return await found.runs()

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
        record = await found.load(run_id)
        if record is not None and record.kind != "agent":  # not resumable yet: its record only
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
    if data["pending"]:
        click.echo("pending approvals:")
    for request in data["pending"]:
        arguments = json.dumps(request["arguments"], ensure_ascii=False, sort_keys=True)
        click.echo(
            f"  {request['call_id']}  {request['tool']}  {arguments}  "
            f"[{_decision_text(request['decision'])}]"
        )


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
        _, opened = await _opened(found, run_id)
        await opened.decide(found, {call_id: Approval(approve, reason=reason)})
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

    async def work(found: RunStore) -> Any:
        await _opened(found, run_id)  # an unknown id is said before anything starts
        return await OpenMultiAgent(store=found).resume(run_id)

    result = _with_store(_store_of(ctx, store), work)
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
