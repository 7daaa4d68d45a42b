"""What the team task graph runner costs per task, and whether that cost grows with the plan.

Run: ``python bench/scheduler.py [--quick] [--no-ray]`` (``--quick``: 100 / 1,000 tasks only;
``--no-ray``: skip the Ray part).

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

With oma-ray installed, the same 1,000 independent tasks then run on a local Ray cluster
(2 CPUs, no dashboard, on 127.0.0.1) through ``executor="ray"``, and the per-task cost is
split into where it goes: Ray's own floor (a trivial task, then a streaming task yielding the
two batches an attempt streams: its start event, then its usage, end event and result), the
worker's side (building the worker's orchestrator and the run, timed in-process), and the
rest (the driver's session: putting the config once, delivering events, the budget sync).
Goal: at most ``RAY_GOAL_MS`` ms per task at 1,000 tasks — small beside an agent run of seconds.

Each figure is the best of several rounds (fewer for the big plans), wall clock, in one
process; the machine's load can only make a figure worse.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Iterator

from oma_core import AgentConfig, Budget, OpenMultiAgent, PluginHost, TaskSpec, Team
from oma_core.teams import check_plan

TASK_GOAL_US = 100.0
PLAN_GOAL_US = 10.0
GROWTH_GOAL = 1.5
RAY_GOAL_MS = 5.0
RAY_TASKS = 1_000
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


def _start_ray() -> object:
    import os

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray
    import ray._private.services as services

    services.resolve_ip_for_localhost = lambda host: host  # keep the cluster on 127.0.0.1
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    return ray


def _floor_task() -> int:
    return 1


def _floor_stream() -> Iterator[int]:
    yield 0  # Ray needs a generator object (``yield from`` a range is not one)
    yield 1


async def ray_section() -> int:
    """The same 1,000 tasks on Ray: per-task cost against local, and where it goes."""
    try:
        import oma_ray  # noqa: F401
        import ray
    except ImportError:
        print("ray: oma-ray is not installed; skipped")
        return 0
    started = time.perf_counter()
    ray = _start_ray()
    init_s = time.perf_counter() - started
    remote: object = ray.remote  # type: ignore[attr-defined]
    task = remote(_floor_task).options(max_retries=0)  # type: ignore[operator]
    stream = remote(_floor_stream).options(num_returns="streaming", max_retries=0)  # type: ignore[operator]
    n = RAY_TASKS
    team = Team("bench", [AgentConfig(f"agent {i}") for i in range(4)])
    tasks = independent(n)
    try:
        local = OpenMultiAgent(plugins=PluginHost(load_entrypoints=False))
        on_ray = OpenMultiAgent(plugins=PluginHost(), executor="ray")
        await on_ray.run_tasks(team, tasks[:40])  # warm up: workers started, imports done
        local_us = await best_us(3, n, lambda: local.run_tasks(team, tasks))

        async def run_on_ray() -> None:
            outcome = await on_ray.run_tasks(team, tasks)
            assert outcome.success, "the benchmark plan failed on Ray"

        ray_us = await best_us(2, n, run_on_ray)

        async def run_on_ray_with_budget() -> None:
            budget = Budget(max_tokens=10**12)  # shared by every task, never reached
            outcome = await on_ray.run_tasks(team, tasks, budget=budget)
            assert outcome.success and budget.used_tokens > 0

        budget_us = await best_us(1, n, run_on_ray_with_budget)

        async def floor(kind: str) -> None:
            # as many in flight as the team allows, like the scheduler
            pending: set[asyncio.Future[object]] = set()
            for _ in range(n):
                if len(pending) >= team.max_concurrency:
                    _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                if kind == "task":
                    pending.add(asyncio.ensure_future(_await(task.remote())))  # type: ignore[attr-defined]
                else:
                    pending.add(asyncio.ensure_future(_drain(stream.remote())))  # type: ignore[attr-defined]
            await asyncio.gather(*pending)

        task_us = await best_us(2, n, lambda: floor("task"))
        stream_us = await best_us(2, n, lambda: floor("stream"))

        async def worker_side() -> None:
            # what a worker does per attempt, in-process: its own orchestrator, then the run
            for i in range(n):
                worker = OpenMultiAgent(plugins=local._host())
                await worker.run_agent(team.agents[i % 4], tasks[i].description)
                await worker.aclose()

        worker_us = await best_us(2, n, worker_side)
    finally:
        ray.shutdown()  # type: ignore[attr-defined]
    overhead = ray_us - local_us
    rest = ray_us - stream_us - worker_us / team.max_concurrency
    good = ray_us / 1000 <= RAY_GOAL_MS
    print(f"ray (local cluster, 2 CPUs; ray.init took {init_s:.1f} s, not counted):")
    print(f"  {n:,} independent tasks, local executor {local_us:9.1f} µs per task")
    print(
        f"  {n:,} independent tasks, ray executor   {ray_us:9.1f} µs per task"
        f"   goal <= {RAY_GOAL_MS:.0f} ms  {verdict(good)}"
    )
    print(f"  ray's overhead over local               {overhead:9.1f} µs per task")
    print(
        f"  ray executor, one Budget shared by all  {budget_us:9.1f} µs per task"
        f"  (the budget actor: ~{budget_us - ray_us:.1f})"
    )
    print("  where a task's time on ray goes (wall per task, 4 in flight):")
    print(f"    a trivial Ray task                    {task_us:9.1f} µs")
    print(f"    a Ray generator task of two items     {stream_us:9.1f} µs")
    print(
        f"    the worker's orchestrator and run     {worker_us:9.1f} µs in one process"
        f" (~{worker_us / team.max_concurrency:.1f} per task with 4 in flight)"
    )
    print(f"    the rest: driver session, event delivery ~{rest:7.1f} µs")
    return 0 if good else 1


async def _await(ref: object) -> object:
    return await ref  # type: ignore[misc]


async def _drain(refs: object) -> None:
    async for ref in refs:  # type: ignore[attr-defined]
        await ref


async def everything(sizes: tuple[int, ...], with_ray: bool) -> int:
    status = await main(sizes)
    if with_ray:
        status = max(status, await ray_section())
    return status


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 tasks only")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray part")
    arguments = parser.parse_args()
    sizes = QUICK_SIZES if arguments.quick else SIZES
    sys.exit(asyncio.run(everything(sizes, not arguments.no_ray)))
