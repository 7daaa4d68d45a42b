"""What the team task graph runner costs per task, and whether that cost grows with the plan.

Run: ``python bench/scheduler.py [--quick]`` (``--quick``: 100 / 1,000 tasks only).

``OpenMultiAgent.run_tasks`` on a team of four agents on the offline ``echo`` provider (it
answers at once, so nearly all the time is oma's), for three plan shapes:

- independent: no dependencies (``max_concurrency`` tasks in flight all along);
- chain: each task depends on the one before (one task in flight);
- wide fan-in: every task but the last feeds the last one (its prompt carries them all).

Goals: at most 100 µs per task at 10,000 tasks for every shape, and a flat per-task cost: the
figure at the largest size at most 1.5x the figure at 100 tasks. ``check_plan`` alone is
timed on the same plans (goal: at most 10 µs per task, as flat). For scale, a bare
``run_agent`` call on the same provider is printed too (not a goal): the difference is
what scheduling adds.

Each figure is the best of several rounds (fewer for the big plans), wall clock, in one
process; the machine's load can only make a figure worse.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable

from oma_core import AgentConfig, OpenMultiAgent, PluginHost, TaskSpec, Team
from oma_core.teams import check_plan

TASK_GOAL_US = 100.0
PLAN_GOAL_US = 10.0
GROWTH_GOAL = 1.5
SIZES = (100, 1_000, 10_000)
QUICK_SIZES = (100, 1_000)


def independent(n: int) -> list[TaskSpec]:
    return [TaskSpec(f"task {i}", f"Do part {i}.") for i in range(n)]


def chain(n: int) -> list[TaskSpec]:
    tasks = [TaskSpec("task 0", "Start.")]
    tasks += [
        TaskSpec(f"task {i}", f"Go on {i}.", depends_on=(f"task {i - 1}",)) for i in range(1, n)
    ]
    return tasks


def fan_in(n: int) -> list[TaskSpec]:
    parts = [TaskSpec(f"task {i}", f"Do part {i}.") for i in range(n - 1)]
    return [*parts, TaskSpec("merge", "Merge the parts.", depends_on=[t.title for t in parts])]


SHAPES: dict[str, Callable[[int], list[TaskSpec]]] = {
    "independent": independent,
    "chain": chain,
    "wide fan-in": fan_in,
}


def rounds(n: int) -> int:
    return 5 if n <= 1_000 else 2


async def best_us(repeats: int, count: int, body: Callable[[], Awaitable[object]]) -> float:
    """The best mean µs per item over ``repeats`` rounds of ``body`` (which handles ``count``)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        await body()
        best = min(best, (time.perf_counter() - started) / count)
    return best * 1e6


def verdict(ok: bool) -> str:
    return "OK" if ok else "MISSED"


async def main(sizes: tuple[int, ...]) -> int:
    oma = OpenMultiAgent(plugins=PluginHost(load_entrypoints=False))
    team = Team("bench", [AgentConfig(f"agent {i}") for i in range(4)])  # the echo provider

    async def bare_runs() -> None:
        for _ in range(1_000):
            await oma.run_agent(team.agents[0], "Do part 1.")

    await bare_runs()  # warm up: plugin host, imports
    bare = await best_us(5, 1_000, bare_runs)
    print(f"run_agent alone (for scale)          {bare:8.1f} µs per call")
    print(f"run_tasks, team of {len(team.agents)}, max_concurrency {team.max_concurrency}:")

    ok = True
    largest = sizes[-1]
    for shape, build in SHAPES.items():
        per_task: dict[int, float] = {}
        for n in sizes:
            tasks = build(n)

            async def run(tasks: list[TaskSpec] = tasks) -> None:
                outcome = await oma.run_tasks(team, tasks)
                assert outcome.success, "the benchmark plan failed"

            per_task[n] = await best_us(rounds(n), n, run)
            goal = f"   goal <= {TASK_GOAL_US:.0f} µs  {verdict(per_task[n] <= TASK_GOAL_US)}"
            shown = goal if n == 10_000 else ""
            ok = ok and (n != 10_000 or per_task[n] <= TASK_GOAL_US)
            print(
                f"  {shape:<12} {n:>6,} tasks {per_task[n]:8.1f} µs per task"
                f"  (scheduling ~{per_task[n] - bare:6.1f}){shown}"
            )
        growth = per_task[largest] / per_task[sizes[0]]
        ok = ok and growth <= GROWTH_GOAL
        print(
            f"  {shape:<12} growth {largest:,} vs {sizes[0]}: {growth:6.2f}x"
            f"   goal <= {GROWTH_GOAL:.1f}x  {verdict(growth <= GROWTH_GOAL)}"
        )

    print("check_plan alone:")
    for shape, build in SHAPES.items():
        per_task = {}
        for n in sizes:
            tasks = build(n)

            async def check(tasks: list[TaskSpec] = tasks) -> None:
                check_plan(team, tasks)

            per_task[n] = await best_us(rounds(n) * 2, n, check)
            good = per_task[n] <= PLAN_GOAL_US
            ok = ok and good
            print(
                f"  {shape:<12} {n:>6,} tasks {per_task[n]:8.2f} µs per task"
                f"   goal <= {PLAN_GOAL_US:.0f} µs  {verdict(good)}"
            )
        growth = per_task[largest] / per_task[sizes[0]]
        ok = ok and growth <= GROWTH_GOAL
        print(
            f"  {shape:<12} growth {largest:,} vs {sizes[0]}: {growth:6.2f}x"
            f"   goal <= {GROWTH_GOAL:.1f}x  {verdict(growth <= GROWTH_GOAL)}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 tasks only")
    arguments = parser.parse_args()
    sys.exit(asyncio.run(main(QUICK_SIZES if arguments.quick else SIZES)))
