"""Instructions per run, counted by valgrind: a figure that does not move with the machine's load.

Run: ``python bench/instructions.py [runs]`` (needs ``valgrind`` on the PATH; about a minute);
``python bench/instructions.py --chunk`` counts only case 4, with the installed plugins and with
none (a ``PluginHost`` that loads no entry points): a few seconds.

Timings on a shared machine swing by 2x; callgrind counts the instructions the interpreter
executes, which are the same run after run. Each case is counted twice, with 0 and with ``runs``
runs after the same warm-up, and the difference divided by ``runs``: start-up and imports
cancel out. The cases are those of ``agent_overhead.py`` and ``orchestrator_overhead.py``:

1. ``Agent.run("hello")`` on one agent, a provider that answers at once, with the installed
   plugins registered (in the dev environment: the middleware distributions ``oma-cachecalls``
   and ``oma-logcalls`` and ``oma-testplugin``'s ``before_run``); goal (issue 21): at most
   160,000, the figure before the run-pipeline redesign;
2. ``OpenMultiAgent().run_agent(config, "hello")``, nothing configured (the instructions it
   adds over case 1; the goal is in µs, in ``orchestrator_overhead.py``);
3. the same with a progress observer and online evaluation at ``sample=1.0``
   (goal: at most 1.10x case 2);
4. ``Agent.stream("hello")`` of 1,000 one-character chunks, less the provider's own stream of
   them, per chunk: the core's cost per streamed chunk, in instructions.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from _callgrind import count

GOAL_RATIO = 1.10
GOAL_AGENT_RUN = 160_000
_WARM_UP = 50
#: Chunks per streamed run of the per-chunk count.
_CHUNKS = 1000


def _case(mode: str, runs: int) -> None:
    """One process's work: ``runs`` runs of ``mode`` after the warm-up (the counted part)."""
    from oma_core import (
        Agent,
        AgentConfig,
        LLMMessage,
        OnlineEvaluationConfig,
        OpenMultiAgent,
        PluginHost,
        TextBlock,
    )
    from oma_core.providers import (
        ProviderRequest,
        ProviderResponse,
        ResponseComplete,
        TextDelta,
        Usage,
    )

    class Instant:
        name = "instant"
        display_name = "Instant"

        def __init__(self) -> None:
            self.response = ProviderResponse(
                LLMMessage("assistant", (TextBlock("ok"),)), Usage(3, 1), "end_turn"
            )

        async def complete(self, request: ProviderRequest) -> ProviderResponse:
            return self.response

        async def stream(self, request: ProviderRequest) -> AsyncIterator[object]:
            delta = TextDelta("x")
            for _ in range(_CHUNKS):
                yield delta
            yield ResponseComplete(self.response)

    config = AgentConfig("bench", provider=Instant())

    async def main() -> None:
        if mode in ("stream", "stream-bare", "provider-stream"):
            await _streams(mode, runs)
            return
        if mode == "agent":
            agent = Agent(config)
            run = lambda: agent.run("hello")  # noqa: E731
        else:
            options = {}
            if mode == "observed":
                options = {
                    "on_progress": lambda event: None,
                    "evaluation": OnlineEvaluationConfig(
                        scorers=[lambda case: float(len(case.output))], sample=1.0
                    ),
                }
            oma = OpenMultiAgent(**options)  # type: ignore[arg-type]
            run = lambda: oma.run_agent(config, "hello")  # noqa: E731
        for _ in range(_WARM_UP + runs):
            result = await run()
            assert result.success, f"a measured run failed: {result.status}"
            await asyncio.sleep(0)  # background scoring runs here, and is counted

    async def _streams(mode: str, runs: int) -> None:
        """``agent.stream`` (plugins as installed) or the provider's own ``stream``."""
        provider = Instant()
        plugins = PluginHost(load_entrypoints=False) if mode == "stream-bare" else None
        agent = Agent(AgentConfig("bench", provider=provider), plugins=plugins)
        request = agent.build_request("hello")
        for _ in range(2 + runs):
            chunks = 0
            if mode == "provider-stream":
                async for event in provider.stream(request):
                    chunks += type(event) is TextDelta
                continue
            async for streamed in agent.stream("hello"):
                chunks += streamed.type == "text"
                last = streamed
            assert chunks == _CHUNKS and last.type == "done" and last.data.success, last

    asyncio.run(main())


def _count(mode: str, runs: int) -> int:
    return count(str(Path(__file__).resolve()), mode, runs)


def _per_run(mode: str, runs: int) -> float:
    return (_count(mode, runs) - _count(mode, 0)) / runs


def _chunk_only() -> None:
    """Case 4 alone: the core's instructions per streamed chunk, plugins installed and none."""
    own = _per_run("provider-stream", 5)
    for mode, label in (("stream", "installed plugins"), ("stream-bare", "no plugins")):
        chunk = (_per_run(mode, 5) - own) / _CHUNKS
        print(f"Agent.stream, core per chunk, {label:<18} {chunk:8,.0f} instructions/chunk")


def main(runs: int) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    streams = max(1, runs // 200)
    chunk = (_per_run("stream", streams) - _per_run("provider-stream", streams)) / _CHUNKS
    agent, bare, observed = (_per_run(mode, runs) for mode in ("agent", "bare", "observed"))
    added = bare - agent
    ratio = observed / bare
    print(f"runs per count                    {runs}")
    print(
        f"Agent.run                         {agent:10,.0f} instructions/run"
        f"   goal <= {GOAL_AGENT_RUN:,}   {'OK' if agent <= GOAL_AGENT_RUN else 'MISSED'}"
    )
    print(
        f"Agent.stream, core per chunk      {chunk:10,.0f} instructions/chunk"
        "   (over the provider's own stream; the goal, 1 us, is timed: agent_overhead.py)"
    )
    print(f"run_agent, nothing configured     {bare:10,.0f} instructions/run")
    print(f"  added over Agent.run            {added:10,.0f} instructions ({bare / agent:.2f}x)")
    print(f"run_agent, observer + evaluation  {observed:10,.0f} instructions/run")
    print(
        f"  ratio to nothing configured     {ratio:10.3f}        goal <= {GOAL_RATIO:.2f}"
        f"   {'OK' if ratio <= GOAL_RATIO else 'MISSED'}"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        _case(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--chunk":
        _chunk_only()
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
