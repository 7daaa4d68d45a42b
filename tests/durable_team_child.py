"""A durable team run in a process of its own, stopped with tasks in flight and left to be
killed (tests/test_durable_team_kills.py kills it with SIGKILL, then resumes the team run in
its own process).

``python durable_team_child.py DB RUN_ID LOG KIND STOP`` runs the team of ``make_team(LOG,
STOP)`` on a SQLite store in DB: ``KIND`` "tasks" runs ``PLAN`` (``run_tasks``), "team" asks
a coordinator for it (``run_team``, goal ``GOAL``). Task "first" finishes; task "second" stops
at STOP: "model" — in its second model call, after its tool ran; "tool" — inside its tool
call, before the side effect. The child prints ``first completed`` once the team checkpoint
holds task "first" completed, and ``second stopped`` when "second" reaches STOP (in either
order), then waits forever. Not collected by pytest (no ``test_`` prefix); the tests import
``make_team``, ``PLAN`` and ``GOAL`` from it, so both processes run the same team.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from durable_child import ForwardingStore

from oma_core import AgentConfig, OpenMultiAgent, load_messages, tool
from oma_core._checkpoints import decode
from oma_core._tool_context import current_tool_call
from oma_core.capabilities import Capabilities
from oma_core.providers import ProviderRequest, ProviderResponse, Usage
from oma_core.stores import SQLiteRunStore, StoredRun
from oma_core.teams import TaskSpec, Team

GOAL = "add 1 and 2"
PLAN = (
    TaskSpec("first", "first", "adder"),
    TaskSpec("second", "second", "adder"),
    TaskSpec("sum", "sum", "writer", depends_on=("first", "second")),
)


def _call(call_id: str, n: int) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": call_id, "name": "bump", "input": {"n": n}}]
    return {"role": "assistant", "content": content}


def _text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


_PLAN_JSON = {
    "tasks": [
        {
            "title": t.title,
            "description": t.description,
            "assignee": t.assignee,
            "depends_on": list(t.depends_on),
        }
        for t in PLAN
    ]
}

#: Each run's turns by what it was asked (see ``_asked``), by how many turns it has had.
SCRIPTS: dict[str, list[Any]] = {
    "first": [_call("c1", 1), _text("first added 1")],
    "second": [_call("c2", 2), _text("second added 2")],
    "sum": [_text("the total is 3")],
    "plan": [_text(json.dumps(_PLAN_JSON))],
    "final": [_text("the team says 3")],
}


def _asked(request: ProviderRequest) -> str:
    """Which run a request is: the first line of its first user message, the coordinator's
    two runs told apart by their prompts."""
    first = request.messages[0]
    text = "".join(getattr(block, "text", "") for block in first.content)
    if text.endswith("Write the final answer to the goal."):
        return "final"
    if text.startswith("Goal:"):
        return "plan"
    return text.splitlines()[0]


class ScriptedByRun:
    """Answers each request with its run's script at the run's turn: the same answers in
    every process, whichever life asks. Each call is logged (``model NAME TURN``) to
    ``calls``; ``stop``: "model" never answers task "second"'s second call."""

    capabilities = Capabilities.everything()

    def __init__(self, calls: Path, stop: str | None) -> None:
        self.calls = calls
        self.stop = stop

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        name = _asked(request)
        turn = sum(1 for message in request.messages if message.role == "assistant")
        _append(self.calls, f"model {name} {turn}")
        if self.stop == "model" and name == "second" and turn == 1:
            _say("second stopped")
            await asyncio.Event().wait()
        (message,) = load_messages([SCRIPTS[name][turn]])
        return ProviderResponse(message, Usage(100 + turn, 10 + turn), "end_turn")


def make_team(log: Path, stop: str | None = None) -> Team:
    """Agents "adder" (``bump(n)``: appends ``start ID`` then ``done ID`` to ``log``, ``done``
    once per call id) and "writer"; model calls are logged to ``log`` + ``.calls``."""

    async def bump(n: int) -> str:
        """Add n to the total."""
        call = current_tool_call()
        assert call is not None
        _append(log, f"start {call.id}")
        if stop == "tool" and call.id == "c2":
            _say("second stopped")
            await asyncio.Event().wait()
        _append(log, f"done {call.id}", once=True)  # idempotent by call id
        return f"added {n}"

    provider = ScriptedByRun(log.with_suffix(".calls"), stop)
    adder = AgentConfig(name="adder", provider=provider, tools=[tool(bump)])
    writer = AgentConfig(name="writer", provider=provider)
    return Team("adders", [adder, writer], max_concurrency=3)


def _append(log: Path, line: str, *, once: bool = False) -> None:
    if once and log.exists() and line in log.read_text().splitlines():
        return
    with log.open("a") as out:
        out.write(line + "\n")


class _SayWhenFirstCompleted(ForwardingStore):
    """A SQLite store that prints ``first completed`` once a team checkpoint holds it."""

    def __init__(self, inner: SQLiteRunStore, run_id: str) -> None:
        super().__init__(inner)
        self.run_id = run_id
        self.said = False

    async def save(self, run: StoredRun) -> None:
        await self.inner.save(run)
        if run.run_id == self.run_id and not self.said:
            task = decode(run.run_id, run.checkpoint)["tasks"].get("first")
            if task is not None and task["status"] == "completed":
                self.said = True
                _say("first completed")


def _say(line: str) -> None:
    print(line, flush=True)


async def _main(db: str, run_id: str, log: str, kind: str, stop: str) -> None:
    store = _SayWhenFirstCompleted(SQLiteRunStore(Path(db)), run_id)
    oma = OpenMultiAgent(store=store)
    team = make_team(Path(log), stop)
    if kind == "tasks":
        result = await oma.run_tasks(team, PLAN, run_id=run_id)
    else:
        result = await oma.run_team(team, GOAL, run_id=run_id)
    _say(f"finished {result.success}")


if __name__ == "__main__":
    asyncio.run(_main(*sys.argv[1:6]))
