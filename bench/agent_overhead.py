"""What the agent adds on top of a provider: per run, and per streamed chunk.

Run: ``python bench/agent_overhead.py``. The provider answers at once (no I/O), so the
difference between ``Agent.run`` and the provider's own ``complete()`` is the agent's
overhead: validation of the string input, hooks lookup, capabilities check, the request,
retry bookkeeping and the result. Goals: <= 100 us per small text run, <= 1 us per chunk
(issue 21: the core's cost per streamed chunk before the redesign was 0.81 us). Timings on a
shared machine are noisy: each figure is the best of 5 rounds.

Figures (2026-12-06, 2 shared cores, load average ~5; three runs each, old and new code
alternated): added per chunk 1.57 / 0.93 / 0.87 us before (f38f24a), 0.76 us after
(``StreamEvent`` setting its slots directly; the SDK's socket read enforcing the idle
timeout). In instructions, which the load does not move (``python bench/instructions.py
--chunk``): 10,358 -> 9,158 per chunk with no plugins, 10,387 -> 9,434 with the dev
environment's installed ones. (Reading asyncio's private task table instead of calling
``asyncio.current_task`` on 3.11 saved another ~420 instructions; not taken: it reaches into
asyncio's private names.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from oma_core import Agent, AgentConfig, PluginHost
from oma_core.messages import LLMMessage, TextBlock
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ResponseComplete,
    TextDelta,
    Usage,
)

RUN_GOAL_US = 100.0
CHUNK_GOAL_US = 1.0
CHUNKS = 1000


class InstantProvider:
    """Answers at once; streams ``CHUNKS`` one-character deltas."""

    name = display_name = "instant"

    def __init__(self) -> None:
        message = LLMMessage("assistant", (TextBlock("x" * CHUNKS),))
        self.response = ProviderResponse(message, Usage(3, 3))
        self.delta = TextDelta("x")

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self.response

    async def stream(self, request: ProviderRequest) -> AsyncIterator[object]:
        delta = self.delta
        for _ in range(CHUNKS):
            yield delta
        yield ResponseComplete(self.response)


async def best_of(repeats: int, count: int, body: Callable[[], Awaitable[object]]) -> float:
    """The best mean seconds per call over ``repeats`` rounds of ``count`` calls."""
    first = await body()  # checked once before it counts: a failed run is not a fast one
    assert getattr(first, "success", True), f"the measured call failed: {first!r}"
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(count):
            await body()
        best = min(best, (time.perf_counter() - started) / count)
    return best


async def main() -> None:
    provider = InstantProvider()
    agent = Agent(
        AgentConfig(name="bench", provider=provider), plugins=PluginHost(load_entrypoints=False)
    )
    request = agent.build_request("hi")

    async def direct_call() -> object:
        return await provider.complete(request)

    async def agent_run() -> object:
        result = await agent.run("hi")
        assert result.success, result.status
        return result

    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "Keep answers short."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Understood."}]},
        {"role": "user", "content": [{"type": "text", "text": "What is shown?"}]},
    ]

    async def agent_run_messages() -> object:
        result = await agent.run(conversation)
        assert result.success, result.status
        return result

    async def direct_stream() -> object:
        chunks = 0
        async for event in provider.stream(request):
            chunks += type(event) is TextDelta
        assert chunks == CHUNKS
        return None

    async def agent_stream() -> object:
        last = None
        async for event in agent.stream("hi"):
            last = event
        assert last is not None and last.type == "done" and last.data.success, last
        assert last.data.output == "x" * CHUNKS, "the streamed run lost chunks"
        return last.data

    await best_of(1, 200, agent_run)  # warm up (plugin host, imports)
    direct = await best_of(5, 2000, direct_call)
    run = await best_of(5, 2000, agent_run)
    run_messages = await best_of(5, 2000, agent_run_messages)
    direct_s = await best_of(5, 20, direct_stream)
    stream = await best_of(5, 20, agent_stream)

    run_added = (run - direct) * 1e6
    chunk_added = (stream - direct_s) / CHUNKS * 1e6
    print(f"provider.complete() direct    {direct * 1e6:8.1f} us/call")
    print(f"Agent.run(str)                {run * 1e6:8.1f} us/call")
    print(
        f"  added per run               {run_added:8.1f} us   (goal <= {RUN_GOAL_US:.0f} us)"
        f"  {'ok' if run_added <= RUN_GOAL_US else 'MISSED'}"
    )
    print(f"Agent.run(3 dict messages)    {run_messages * 1e6:8.1f} us/call   (with validation)")
    print(f"provider.stream() direct      {direct_s / CHUNKS * 1e6:8.2f} us/chunk")
    print(f"Agent.stream(str)             {stream / CHUNKS * 1e6:8.2f} us/chunk")
    print(
        f"  added per chunk             {chunk_added:8.2f} us   (goal <= {CHUNK_GOAL_US:.1f} us)"
        f"  {'ok' if chunk_added <= CHUNK_GOAL_US else 'MISSED'}"
    )


if __name__ == "__main__":
    asyncio.run(main())
