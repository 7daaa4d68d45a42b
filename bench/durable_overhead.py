"""What a durable run costs: per checkpoint with the SQLite store, and nothing without a store.

Run: ``python bench/durable_overhead.py``. A ``run_agent`` run of ``TURNS`` tool turns (one
tool call each) and a last text turn against a provider that answers at once; with a store it
saves a checkpoint at its start, after every model turn and tool result, and at its end
(counted by the store). The cost per checkpoint is (run with the SQLite store - run without a
store) / checkpoints. Goals: <= 1.5 ms per checkpoint; without a store, the durable path adds
what it costs to find out there is no recorder (a ContextVar read and a dict lookup per run,
one attribute test per turn and per tool call), shown in ns per run. Each figure is the best
of 5 rounds; every measured run is checked.

A team run (``run_tasks``) of ``TASKS`` such tasks, two at a time, the last depending on the
others, is measured the same way: its checkpoints are the team run's own (a task starting,
a task ending, the end) and every task run's; the cost per checkpoint has the same goal.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from oma_core import AgentConfig, OpenMultiAgent, tool
from oma_core._durable import RECORDER, taken
from oma_core.capabilities import Capabilities
from oma_core.messages import LLMMessage, TextBlock, ToolUseBlock
from oma_core.providers import ProviderRequest, ProviderResponse, Usage
from oma_core.stores import MemoryRunStore, SQLiteRunStore, StoredRun
from oma_core.teams import TaskSpec, Team

CHECKPOINT_GOAL_MS = 1.5
TURNS = 5
RUNS = 40
TASKS = 4
TEAM_RUNS = 10


class InstantTools:
    """Asks for one tool call per turn for ``TURNS`` turns, then answers; at once."""

    capabilities = Capabilities.everything()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        turn = sum(1 for message in request.messages if message.role == "assistant")
        if turn < TURNS:
            block = ToolUseBlock(f"call-{turn}", "note", {"text": "x" * 200})
            return ProviderResponse(LLMMessage("assistant", (block,)), Usage(50, 10))
        return ProviderResponse(LLMMessage("assistant", (TextBlock("done"),)), Usage(50, 2))


async def note(text: str) -> str:
    """Keep a note."""
    return f"noted {len(text)} characters"


class CountingSQLite(SQLiteRunStore):
    """The SQLite store, counting its saves (the checkpoints)."""

    saves = 0

    async def save(self, run: StoredRun) -> None:
        CountingSQLite.saves += 1
        await super().save(run)


async def best_of(repeats: int, count: int, body: Callable[[], Awaitable[object]]) -> float:
    """The best mean seconds per call over ``repeats`` rounds of ``count`` calls."""
    await body()  # once before it counts (each call checks its own result)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(count):
            await body()
        best = min(best, (time.perf_counter() - started) / count)
    return best


def runner(oma: OpenMultiAgent, config: AgentConfig) -> Callable[[], Awaitable[object]]:
    async def run() -> object:
        result = await oma.run_agent(config, "take five notes")
        assert result.success and result.output == "done", result.status
        assert len(result.messages) == 2 * TURNS + 1
        return result

    return run


def team_runner(oma: OpenMultiAgent, team: Team) -> Callable[[], Awaitable[object]]:
    plan = [TaskSpec(f"t{i}", f"take five notes ({i})") for i in range(TASKS - 1)]
    plan.append(TaskSpec("last", "take five notes", depends_on=[t.title for t in plan]))

    async def run() -> object:
        result = await oma.run_tasks(team, plan)
        assert result.success, [(t.title, t.status) for t in result.tasks.values()]
        assert all(t.output == "done" for t in result.tasks.values())
        return result

    return run


async def team_figures(config: AgentConfig) -> tuple[float, float, int]:
    """A team run without a store and with SQLite (seconds), and its checkpoints."""
    team = Team("bench", [config], max_concurrency=2)
    plain = await best_of(5, TEAM_RUNS, team_runner(OpenMultiAgent(), team))
    with tempfile.TemporaryDirectory() as folder:
        store = CountingSQLite(Path(folder) / "runs.db")
        try:
            before = CountingSQLite.saves
            await team_runner(OpenMultiAgent(store=store), team)()
            checkpoints = CountingSQLite.saves - before
            # each task run's, and the team run's: its start, each task's start and end, its end
            assert checkpoints == TASKS * (2 * TURNS + 3) + 2 * TASKS + 2, checkpoints
            sqlite = await best_of(5, TEAM_RUNS, team_runner(OpenMultiAgent(store=store), team))
        finally:
            await store.aclose()
    return plain, sqlite, checkpoints


async def main() -> None:
    config = AgentConfig(
        name="bench", provider=InstantTools(), tools=[tool(note)], max_turns=TURNS + 1
    )
    plain = await best_of(5, RUNS, runner(OpenMultiAgent(), config))
    memory = await best_of(5, RUNS, runner(OpenMultiAgent(store=MemoryRunStore()), config))
    with tempfile.TemporaryDirectory() as folder:
        store = CountingSQLite(Path(folder) / "runs.db")
        try:
            before = CountingSQLite.saves
            await runner(OpenMultiAgent(store=store), config)()
            checkpoints = CountingSQLite.saves - before
            assert checkpoints == 2 * TURNS + 3, checkpoints  # start, turns, results, end
            sqlite = await best_of(5, RUNS, runner(OpenMultiAgent(store=store), config))
            assert len(await store.runs()) == 2 + 5 * RUNS  # every run kept
        finally:
            await store.aclose()
    per_checkpoint = (sqlite - plain) / checkpoints
    state: dict[str, object] = {}
    probe = 100_000
    started = time.perf_counter()
    for _ in range(probe):
        taken()
        state.get(RECORDER)
    absent_ns = (time.perf_counter() - started) / probe * 1e9

    print(f"run of {TURNS} tool turns, no store:   {plain * 1e3:8.3f} ms")
    print(f"                      memory store: {memory * 1e3:8.3f} ms")
    print(f"                      SQLite store: {sqlite * 1e3:8.3f} ms ({checkpoints} checkpoints)")
    verdict = "ok" if per_checkpoint * 1e3 <= CHECKPOINT_GOAL_MS else "OVER"
    print(
        f"per checkpoint (SQLite):  {per_checkpoint * 1e3:.3f} ms   goal <= "
        f"{CHECKPOINT_GOAL_MS} ms   {verdict}"
    )
    print(f"without a store, finding no recorder: {absent_ns:.0f} ns per run   goal: ~0")

    team_plain, team_sqlite, team_checkpoints = await team_figures(config)
    team_per = (team_sqlite - team_plain) / team_checkpoints
    print(f"team run of {TASKS} such tasks, no store: {team_plain * 1e3:8.3f} ms")
    print(
        f"                     SQLite store: {team_sqlite * 1e3:8.3f} ms "
        f"({team_checkpoints} checkpoints)"
    )
    verdict = "ok" if team_per * 1e3 <= CHECKPOINT_GOAL_MS else "OVER"
    print(
        f"per team-run checkpoint (SQLite):  {team_per * 1e3:.3f} ms   goal <= "
        f"{CHECKPOINT_GOAL_MS} ms   {verdict}"
    )


if __name__ == "__main__":
    asyncio.run(main())
