"""How straight one run's path is: module transitions of a traced ``Agent.run`` and ``run_tasks``.

Run: ``python bench/transitions.py``

A ``sys.setprofile`` hook follows every Python call into ``oma_core`` code (C calls and other
packages are not counted). Each call that enters another ``oma_core`` module than the last one
entered is a *transition*; a transition into a module the run has been in and left before is a
*return to a module already left*. A run that
reads top to bottom goes down through its layers and comes back up the same way: it returns to
each layer once. Goals (issue 21): at most 15 returns for ``Agent.run``, at most 25 for
``run_tasks`` with one task. One warm-up run first, so imports and caches are not counted.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

GOALS = {"Agent.run": 15, "run_tasks (one task)": 25}


class _Tracer:
    def __init__(self) -> None:
        self.path: list[str] = []

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("oma_core"):
            return
        if not self.path or self.path[-1] != module:
            self.path.append(module)


def _figures(path: list[str]) -> tuple[int, int, int]:
    """(transitions, modules, returns to a module already left)."""
    seen: set[str] = set()
    returns = 0
    previous = None
    for module in path:
        if module in seen and module != previous:
            returns += 1
        seen.add(module)
        previous = module
    return max(0, len(path) - 1), len(seen), returns


async def _trace(run: Callable[[], Awaitable[Any]]) -> list[str]:
    _succeeded(await run())  # warm-up
    tracer = _Tracer()
    sys.setprofile(tracer)
    try:
        result = await run()
    finally:
        sys.setprofile(None)
    _succeeded(result)
    return tracer.path


def _succeeded(result: Any) -> None:
    """A run's result (or a team's): a failed run is no path to count."""
    assert result.success, f"the traced run failed: {result!r}"


async def main(verbose: bool) -> int:
    from oma_core import Agent, AgentConfig, LLMMessage, OpenMultiAgent, TaskSpec, Team, TextBlock
    from oma_core.providers import ProviderRequest, ProviderResponse, Usage

    class Instant:
        name = "instant"
        display_name = "Instant"

        def __init__(self) -> None:
            self.response = ProviderResponse(
                LLMMessage("assistant", (TextBlock("ok"),)), Usage(3, 1), "end_turn"
            )

        async def complete(self, request: ProviderRequest) -> ProviderResponse:
            return self.response

    config = AgentConfig("bench", provider=Instant())
    agent = Agent(config)
    oma = OpenMultiAgent()
    team = Team("t", [config])
    cases: dict[str, Callable[[], Awaitable[Any]]] = {
        "Agent.run": lambda: agent.run("hello"),
        "run_agent": lambda: oma.run_agent(config, "hello"),
        "run_tasks (one task)": lambda: oma.run_tasks(team, [TaskSpec("one", "hello", "bench")]),
    }
    missed = 0
    for name, run in cases.items():
        path = await _trace(run)
        transitions, modules, returns = _figures(path)
        goal = GOALS.get(name)
        verdict = ""
        if goal is not None:
            verdict = f"   goal <= {goal}  {'OK' if returns <= goal else 'MISSED'}"
            missed += returns > goal
        print(
            f"{name:22} {transitions:4} transitions, {modules:3} modules, "
            f"{returns:3} returns to a module already left{verdict}"
        )
        if verbose:
            print("   " + " > ".join(m.removeprefix("oma_core.") for m in path))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main("-v" in sys.argv)))
