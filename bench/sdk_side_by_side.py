"""The real plugins beside their bare SDKs and raw aiohttp, in one process (issue 31, item 3).

Run: ``python bench/sdk_side_by_side.py [anthropic|openai] [--quick]``.

Each provider's fake server (the plugin's ``tests/fake_*.py``) runs on 127.0.0.1 in a child
process, so the server's work does not share this process's GIL; the paths measured below
share this one process and event loop, and are interleaved round by round (a load spike on the
shared machine then hits both sides of a comparison alike). Four rows:

- ``anthropic sdk``: ``Agent`` on ``transport="httpx"`` (the SDK) against the bare
  ``anthropic`` SDK;
- ``anthropic direct``: ``Agent`` on ``transport="direct"`` against raw aiohttp (one
  ``ClientSession`` posting the same bytes and, streaming, reading the SSE lines and decoding
  each event's JSON: the ceiling);
- ``openai sdk`` and ``openai direct``: the same for Chat Completions.

Per row: time per streamed chunk on a 200-chunk reply (the stream's whole time over its chunks;
goal: at most the bare SDK's own + 3 us), one small call at a time (goal <= 1.05x the
baseline), and calls/s at 100 in flight (goal >= 0.95x the SDK; direct >= 0.6x raw aiohttp).
Every call is checked to have succeeded with the server's reply before it counts. Beside the
time per chunk, the CPU time this process's thread spent per chunk (``time.thread_time``: the
client's own work, which a loaded machine inflates far less than the wall time).

Where the 20 us per chunk went (``--profile anthropic httpx``: cProfile over 20 streams of 200
chunks, 2026-12-06, loaded machine; cProfile inflates each call, read the shares): not in the
plugin's mapping (``StreamAssembler._delta`` ~3 us profiled per chunk, ``feed`` less) but in the
read guard the plugin puts under the SDK (``oma_core/http/_bounded.py``, via ``guard_hooks``),
which the bare SDK does not have: per chunk a new ``asyncio.timeout`` (~10 us profiled),
``EventBytes.add``'s regex scan (~4 us) and ``_count``'s UTF-8 decode (~7 us). Now one
``IdleTimer`` per stream, ``rfind`` for an LF-only boundary, ASCII pieces not decoded: the guard
alone went from 64,574 to 16,037 instructions per chunk (``bench/read_guard.py``); in the
profile its functions are now ~7 us of ~17 us profiled oma time per chunk, beside the core's
hops (``_runner.Run._call``, ``_model_run``, ``AgentStream``) and the plugin's mapping. The
openai chat mapping takes the common chunk (one choice, text alone) before the general one.

Figures, 2026-12-06, on 2 cores shared by 8 helpers and loaded (load average 4 to 14: the
bare SDK's own time per chunk swung from 62 to 316 us between runs, so the wall times below say
little); each the median of 3 runs, goal beside it. Before = the branch point (82ed496),
after = the guard and mapping changes. Added per chunk, CPU time (``--quick`` runs, old and new
code alternated):

=================  ===========  ==========  ===========================
row                before       after       goal
=================  ===========  ==========  ===========================
anthropic sdk      +41.0 us     +27.9 us    <= SDK's own + 3 us: MISSED
openai sdk         +30.2 us     +20.9 us    <= SDK's own + 3 us: MISSED
anthropic direct   +5.9 us      +6.6 us     (raw aiohttp: the ceiling)
openai direct      +18.4 us     +14.1 us    (raw aiohttp: the ceiling)
=================  ===========  ==========  ===========================

Full runs (wall time), before / after: per call anthropic sdk 1.18x / 1.15x (goal <= 1.05x),
openai sdk 1.06x / 1.05x (ok at the edge); calls/s at 100 in flight anthropic sdk 0.94x / 0.93x
(goal >= 0.95x), openai sdk 1.28x / 1.03x (ok), anthropic direct 0.45x / 0.48x and openai
direct 0.57x / 0.54x of raw aiohttp (goal >= 0.6x). The guard is not what is left: per call and
in flight the costs are per request (the run, the SDK client's options), and the direct
transports' reply path (``aio_body``) still makes one timer per chunk until it keeps one
``IdleTimer`` (a change to ``oma_core/http/_client.py``, proposed).

Later the same day: under an SDK on httpx2 (its default transport) the guard no longer runs an
``IdleTimer`` (the read timeout keeps the idle timeout: ``bench/read_guard.py``, 16,740 ->
11,821 instructions per chunk), and the core's per-chunk cost fell (``agent_overhead.py``).
CPU time per chunk over the bare SDK, 30 interleaved streams each, old and new code one after
the other at load ~5: anthropic +13.5 -> +12.4 us, openai +11.4 -> +11.9 us: within the noise
of this machine (the difference is ~1 us of CPU per chunk by the instruction counts); the goal
(+3 us) stays missed. ``--profile anthropic httpx`` after (cProfile, 20 streams of 200 chunks,
own time per chunk, profiled us): no ``IdleTimer`` any more; the guard's ``EventBytes.add`` 1.8
and ``_count`` 1.3, the core's ``Run._call`` 1.5 and ``AgentStream.__anext__`` 1.3, the plugin's
``provider.stream`` 1.3 and ``streaming._delta`` 2.5 (with its callees): what oma adds is now
spread thin over about eight frames per chunk.

On a quiet machine (load < 1, 2026-12-07 00:00), full runs, f38f24a then this code: per chunk
over the SDK anthropic +14.7 -> +11.4 / +13.0 us, openai +12.9 -> +11.0 / +10.9 us; per call
anthropic 1.18x -> 1.16x, openai 1.03x -> 1.02x; calls/s at 100 in flight anthropic sdk
0.75x -> 0.73x / 0.74x, openai sdk 0.82x -> 0.87x / 0.93x, direct 0.38x -> 0.41x (anthropic)
and 0.45x -> 0.43x (openai) of raw aiohttp. The loaded figures above (0.93x for anthropic in
flight) flattered oma: a loaded machine slows the bare SDK too. What is left in flight is per
request, not per chunk: the run itself (``Agent.run``'s input check, settings, hooks, the
result) at about 20 us, and on anthropic a per-call cost in the plugin of ~150 us beyond
openai's that no profile here has pinned down yet.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from providers import TARGETS, Target

CHUNKS = 200
CHUNK = 4  # characters per streamed delta
STREAM_TEXT = "abcd" * CHUNKS
REPLY = "Hello from the bench."
ROUNDS = 40  # small calls, one at a time, per path
STREAM_ROUNDS = 12
IN_FLIGHT = 100
CALLS = 500  # per round at 100 in flight
FLIGHT_ROUNDS = 3

GOAL_CHUNK_US = 3.0
GOAL_CALL = 1.05
GOAL_SDK_RATE = 0.95
GOAL_RAW_RATE = 0.6


# --------------------------------------------------------------------------- raw aiohttp


def _raw_stream_count(provider: str) -> Callable[[dict[str, Any]], int]:
    """How many text chunks one decoded SSE event holds, on ``provider``'s wire."""
    if provider == "anthropic":

        def anthropic_text(data: dict[str, Any]) -> int:
            if data.get("type") == "content_block_delta":
                return data["delta"].get("type") == "text_delta"
            return 0

        return anthropic_text

    def openai_text(data: dict[str, Any]) -> int:
        choices = data.get("choices")
        return bool(choices and choices[0]["delta"].get("content"))

    return openai_text


class Raw:
    """The ceiling: one aiohttp session posting the bytes the direct transport would."""

    def __init__(self, target: Target, url: str) -> None:
        import aiohttp

        self.url, self.headers, body = target.raw_request(url)
        self.body = body
        payload = json.loads(body)
        payload["stream"] = True
        if target.name == "openai":
            payload["stream_options"] = {"include_usage": True}
        self.stream_body = json.dumps(payload).encode()
        self.text_count = _raw_stream_count(target.name)
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=IN_FLIGHT))

    async def call(self) -> None:
        async with self.session.post(self.url, data=self.body, headers=self.headers) as reply:
            assert reply.status == 200, reply.status
            data = json.loads(await reply.read())
            assert REPLY in json.dumps(data), "raw aiohttp got another reply"

    async def stream(self) -> int:
        count = 0
        async with self.session.post(
            self.url, data=self.stream_body, headers=self.headers
        ) as reply:
            assert reply.status == 200, reply.status
            async for line in reply.content:
                if line.startswith(b"data:"):
                    payload = line[5:].strip()
                    if payload and payload != b"[DONE]":
                        count += self.text_count(json.loads(payload))
        return count

    async def aclose(self) -> None:
        await self.session.close()


# --------------------------------------------------------------------------- measures


async def _checked(run: Awaitable[Any], reply: str) -> None:
    result = await run
    assert result.success, f"a measured call failed: {result.status}: {result.error!r}"
    assert result.output == reply, f"a measured call returned {result.output[:80]!r}"


#: CPU seconds of this process's one thread per call of each path (by ``_pair``): the
#: servers run in child processes, so this is the client's own work, which a loaded machine
#: inflates much less than the wall time (that also counts waiting for a core).
CPU: dict[int, float] = {}


async def _pair(
    rounds: int, ours: Callable[[], Awaitable[Any]], theirs: Callable[[], Awaitable[Any]]
) -> tuple[float, float]:
    """Median seconds per call of each path, interleaved, after a warm-up call each (and
    their median CPU seconds in ``CPU``)."""
    await ours()
    await theirs()
    times: dict[int, list[float]] = {0: [], 1: []}
    cpu: dict[int, list[float]] = {0: [], 1: []}
    paths = (ours, theirs)
    for i in range(rounds):
        for which in (0, 1) if i % 2 == 0 else (1, 0):
            start, start_cpu = time.perf_counter(), time.thread_time()
            await paths[which]()
            times[which].append(time.perf_counter() - start)
            cpu[which].append(time.thread_time() - start_cpu)
    CPU.update({which: statistics.median(cpu[which]) for which in (0, 1)})
    return statistics.median(times[0]), statistics.median(times[1])


async def _in_flight(call: Callable[[], Awaitable[Any]]) -> float:
    """Seconds for ``CALLS`` calls with at most ``IN_FLIGHT`` at once."""
    semaphore = asyncio.Semaphore(IN_FLIGHT)

    async def bounded() -> None:
        async with semaphore:
            await call()

    start = time.perf_counter()
    await asyncio.gather(*(bounded() for _ in range(CALLS)))
    return time.perf_counter() - start


async def _rates(
    ours: Callable[[], Awaitable[Any]], theirs: Callable[[], Awaitable[Any]]
) -> tuple[float, float]:
    """Best calls/s of each path at ``IN_FLIGHT``, rounds interleaved, after a warm-up."""
    await _in_flight(ours)
    await _in_flight(theirs)
    best = [float("inf"), float("inf")]
    for i in range(FLIGHT_ROUNDS):
        for which in (0, 1) if i % 2 == 0 else (1, 0):
            best[which] = min(best[which], await _in_flight((ours, theirs)[which]))
    return CALLS / best[0], CALLS / best[1]


def _line(label: str, figure: str, goal: str, ok: bool | None) -> None:
    verdict = "" if ok is None else ("ok" if ok else "MISSED")
    print(f"  {label:<22} {figure:<46} goal {goal:<22} {verdict}")


async def _row(target: Target, transport: str, url: str, sdk_chunk_us: list[float]) -> None:
    """One row: the plugin on ``transport`` against its baseline (bare SDK or raw aiohttp)."""
    from oma_core import Agent

    direct = transport == "direct"
    base = "raw aiohttp" if direct else "SDK"
    print(f"{target.name} {'direct' if direct else 'sdk'} (vs {base}):")
    raw = Raw(target, url)
    sdk = target.sdk_client(url)
    agent = Agent(target.agent_config(url, transport))

    async def base_call() -> None:
        if direct:
            await raw.call()
        else:
            reply = await target.sdk_complete(sdk, "hi", None)
            assert REPLY in reply.model_dump_json(), "the SDK got another reply"

    async def base_stream() -> None:
        count = await (raw.stream() if direct else target.sdk_stream(sdk, "go"))
        assert count == CHUNKS, f"the baseline streamed {count} chunks"

    async def plugin_stream() -> None:
        chunks = 0
        async with agent.stream("go") as events:
            async for event in events:
                chunks += event.type == "text"
                last = event
        assert chunks == CHUNKS and last.type == "done" and last.data.success, last

    try:
        with target.server(STREAM_TEXT, CHUNK) as stream_url:
            # the stream measure needs the 200-chunk server: its own agent and clients
            await agent.aclose()
            await raw.aclose()
            await sdk.close()
            raw = Raw(target, stream_url)
            sdk = target.sdk_client(stream_url)
            agent = Agent(target.agent_config(stream_url, transport))
            ours, theirs = await _pair(STREAM_ROUNDS, plugin_stream, base_stream)
            ours_us, theirs_us = ours / CHUNKS * 1e6, theirs / CHUNKS * 1e6
            if not direct:
                sdk_chunk_us.append(theirs_us)
            sdk_own = sdk_chunk_us[-1] if sdk_chunk_us else theirs_us
            _line(
                f"per chunk ({CHUNKS})",
                f"{ours_us:.1f} us vs {base} {theirs_us:.1f} (+{ours_us - theirs_us:.1f})",
                f"<= SDK's {sdk_own:.1f} + {GOAL_CHUNK_US:.0f} us",
                ours_us <= sdk_own + GOAL_CHUNK_US,
            )
            ours_cpu, theirs_cpu = CPU[0] / CHUNKS * 1e6, CPU[1] / CHUNKS * 1e6
            _line(
                "  its CPU time",
                f"{ours_cpu:.1f} us vs {base} {theirs_cpu:.1f} (+{ours_cpu - theirs_cpu:.1f})",
                "(the client's own work)",
                None,
            )
        await agent.aclose()
        await raw.aclose()
        await sdk.close()
        raw = Raw(target, url)
        sdk = target.sdk_client(url)
        agent = Agent(target.agent_config(url, transport))

        async def plugin_call() -> None:
            await _checked(agent.run("hi"), REPLY)

        ours, theirs = await _pair(ROUNDS, plugin_call, base_call)
        _line(
            "per call",
            f"{ours * 1e3:.3f} ms vs {base} {theirs * 1e3:.3f} ms ({ours / theirs:.3f}x)",
            f"<= {GOAL_CALL:.2f}x" if not direct else "(the ceiling: none)",
            ours / theirs <= GOAL_CALL if not direct else None,
        )
        ours_rate, theirs_rate = await _rates(plugin_call, base_call)
        goal = GOAL_RAW_RATE if direct else GOAL_SDK_RATE
        _line(
            f"calls/s, {IN_FLIGHT} in flight",
            f"{ours_rate:.0f}/s vs {base} {theirs_rate:.0f}/s ({ours_rate / theirs_rate:.2f}x)",
            f">= {goal:.2f}x",
            ours_rate / theirs_rate >= goal,
        )
    finally:
        await agent.aclose()
        await raw.aclose()
        await sdk.close()


async def _provider(name: str) -> None:
    target = TARGETS[name]()
    sdk_chunk_us: list[float] = []
    with target.server(REPLY, 64) as url:
        for transport in ("httpx", "direct"):
            await _row(target, transport, url, sdk_chunk_us)


# --------------------------------------------------------------------------- profile


async def _profiled(name: str, transport: str, streams: int) -> None:
    """cProfile of ``streams`` plugin streams of ``CHUNKS`` chunks, top functions by own time."""
    import cProfile
    import pstats

    from oma_core import Agent

    target = TARGETS[name]()
    with target.server(STREAM_TEXT, CHUNK) as url:
        async with Agent(target.agent_config(url, transport)) as agent:

            async def one() -> None:
                async with agent.stream("go") as events:
                    async for _ in events:
                        pass

            await one()
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(streams):
                await one()
            profile.disable()
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(25)


def main(argv: list[str]) -> None:
    global ROUNDS, STREAM_ROUNDS, FLIGHT_ROUNDS, CALLS
    if "--quick" in argv:
        ROUNDS, STREAM_ROUNDS, FLIGHT_ROUNDS, CALLS = 10, 4, 1, 200
    if "--profile" in argv:
        rest = [a for a in argv if not a.startswith("--")]
        asyncio.run(_profiled(rest[0], rest[1] if len(rest) > 1 else "httpx", 20))
        return
    names = [a for a in argv if not a.startswith("--")] or ["anthropic", "openai"]
    start = time.perf_counter()
    for name in names:
        asyncio.run(_provider(name))
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
