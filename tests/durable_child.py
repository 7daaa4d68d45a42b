"""A durable agent run in a process of its own, stopped at a chosen step and left to be killed
(tests/test_durable_runs.py kills it with SIGKILL, then resumes the run in its own process).

``python durable_child.py DB RUN_ID LOG STOP`` runs ``make_config(LOG, STOP)`` on a SQLite
store in DB. It prints one line, flushed, when it reaches STOP, then waits forever:
"model" — inside the second model call, after the first turn's tools ran; "checkpoint" —
right after the first tool result was checkpointed; "tool" — inside the second tool call,
before its side effect. Not collected by pytest (no ``test_`` prefix); the tests import
``make_config`` and ``RESPONSES`` from it, so both processes run the same agent.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oma_core import AgentConfig, OpenMultiAgent, load_messages, tool
from oma_core._checkpoints import decode
from oma_core._tool_context import current_tool_call
from oma_core.capabilities import Capabilities
from oma_core.providers import ProviderRequest, ProviderResponse, Usage
from oma_core.stores import RunStore, SQLiteRunStore, StoredRun


def _calls(*calls: tuple[str, int]) -> dict[str, Any]:
    content = [
        {"type": "tool_use", "id": call_id, "name": "bump", "input": {"n": n}}
        for call_id, n in calls
    ]
    return {"role": "assistant", "content": content}


#: The model's turns, by how many assistant turns the request holds already.
RESPONSES: list[Any] = [
    _calls(("c1", 1), ("c2", 2)),
    _calls(("c3", 3)),
    {"role": "assistant", "content": [{"type": "text", "text": "the total is 6"}]},
]


class TurnScripted:
    """Answers each request with ``RESPONSES[number of assistant turns in it]``: the same
    answers in every process, whichever life of the run asks. ``stop_at``: the call (0-based)
    that prints ``in model call N`` and never answers."""

    capabilities = Capabilities.everything()

    def __init__(self, stop_at: int | None = None) -> None:
        self.stop_at = stop_at
        self.calls = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        turn = sum(1 for message in request.messages if message.role == "assistant")
        self.calls += 1
        if turn == self.stop_at:
            _say(f"in model call {turn}")
            await asyncio.Event().wait()
        (message,) = load_messages([RESPONSES[turn]])
        return ProviderResponse(message, Usage(100 + turn, 10 + turn), "end_turn")


def make_config(log: Path, stop: str | None = None) -> AgentConfig:
    """The agent: ``bump(n)`` appends ``start ID`` then ``done ID`` to ``log`` (its side
    effect: ``done`` once per call id, however often it is started)."""

    def bump(n: int) -> str:
        """Add n to the total."""
        call = current_tool_call()
        assert call is not None
        with log.open("a") as out:
            out.write(f"start {call.id}\n")
        if stop == "tool" and call.id == "c2":
            _say("in tool c2")
            threading.Event().wait()
        done = log.read_text().splitlines()
        if f"done {call.id}" not in done:  # idempotent by call id
            with log.open("a") as out:
                out.write(f"done {call.id}\n")
        return f"added {n}"

    stop_at = 1 if stop == "model" else None
    return AgentConfig(name="adder", provider=TurnScripted(stop_at), tools=[tool(bump)])


class ForwardingStore(RunStore):
    """A store that hands every call to ``inner``: the stores of the child processes below
    override ``save`` to say where the run got to."""

    def __init__(self, inner: RunStore) -> None:
        self.inner = inner

    async def save(self, run: StoredRun) -> None:
        await self.inner.save(run)

    async def load(self, run_id: str) -> StoredRun | None:
        return await self.inner.load(run_id)

    async def runs(self, limit: int | None = None) -> list[StoredRun]:
        return await self.inner.runs(limit)

    async def put_media(self, sha256: str, data: bytes) -> None:
        await self.inner.put_media(sha256, data)

    async def get_media(self, sha256: str) -> bytes | None:
        return await self.inner.get_media(sha256)

    async def decide(
        self, run_id: str, call_id: str, decision: Mapping[str, Any]
    ) -> Mapping[str, Any]:
        return await self.inner.decide(run_id, call_id, decision)

    async def decisions(self, run_id: str) -> dict[str, Mapping[str, Any]]:
        return await self.inner.decisions(run_id)

    async def acquire(self, run_id: str, owner: str, seconds: float) -> None:
        await self.inner.acquire(run_id, owner, seconds)

    async def release(self, run_id: str, owner: str) -> None:
        await self.inner.release(run_id, owner)


class _StopAfterToolResult(ForwardingStore):
    """A SQLite store that stops the run for good once the first tool result is saved."""

    async def save(self, run: StoredRun) -> None:
        await self.inner.save(run)
        if decode(run.run_id, run.checkpoint)["round"]:
            _say("checkpointed a tool result")
            await asyncio.Event().wait()


def _say(line: str) -> None:
    print(line, flush=True)


async def _main(db: str, run_id: str, log: str, stop: str) -> None:
    sqlite = SQLiteRunStore(Path(db))
    store: RunStore = _StopAfterToolResult(sqlite) if stop == "checkpoint" else sqlite
    oma = OpenMultiAgent(store=store)
    result = await oma.run_agent(make_config(Path(log), stop), "add 1, 2 and 3", run_id=run_id)
    _say(f"finished {result.status.code}")


if __name__ == "__main__":
    asyncio.run(_main(*sys.argv[1:5]))
