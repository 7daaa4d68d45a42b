"""What the toolkit's read guard adds per streamed chunk (issue 31, item 3).

Run: ``python bench/read_guard.py [--instructions]``.

The guard (``oma_core/http/_bounded.py``: ``guard_hooks`` under an SDK's httpx client, the
same ``BodyReader`` under the direct transports) reads every chunk of a reply: the idle
timeout between chunks, the body and event limits, the UTF-8 check. Here an
``httpx.Response`` streams ``CHUNKS`` Chat Completions chunks from memory (no socket: only
the guard's own work differs), read bare and through ``guard_hooks``; the figure is the
difference per chunk. Goal: at most ``GOAL_US`` per chunk, a third of the 3 us a plugin may
add per chunk over its SDK. ``--instructions`` also counts the difference in instructions
with valgrind (the same run after run, whatever the machine's load).

Figures (2026-12-06, 2 cores shared by 8 helpers, loaded: load average 4 to 13; timings the
median of 3 runs, instructions one count): before (a new ``asyncio.timeout`` per chunk, a
regex scan of every piece, every piece UTF-8-decoded, a generator per chunk) 7.4 us and
64,574 instructions per chunk; after (one ``IdleTimer`` per stream, ``rfind`` for an LF-only
boundary, ASCII pieces not decoded, a one-piece chunk returned as it is) 1.9 us and 16,037.
Then (2026-12-06, later): on a reply httpcore reads (httpx's and httpx2's own transports, what
the SDKs use by default) the read timeout keeps the idle timeout and no ``IdleTimer`` runs:
16,740 -> 11,821 instructions per chunk (``--instructions``), and 11,287 with ``one_piece``
inline in the bounded stream (the timed figure swings 0.96 to 1.06 us at load ~5: at the goal).
An aiohttp-backed reply keeps the timer (the second instructions line: 16,296). What is left:
the bounded stream's own coroutine hop, the count and the event boundary.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from _callgrind import count

CHUNKS = 200
ROUNDS = 30
GOAL_US = 1.0
CHUNK = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,'
    b'"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"abcd"},'
    b'"finish_reason":null}]}\n\n'
)


async def _stream(guarded: bool, timed: bool = False) -> int:
    """One reply of ``CHUNKS`` chunks read through the response's stream (as the SDK reads
    it); the bytes read. The reply says it came through httpcore (``network_stream``, as on
    httpx's and httpx2's own transports, where the read timeout keeps the idle timeout),
    unless ``timed``: then, as from aiohttp under an SDK, an ``IdleTimer`` keeps it."""
    import httpx

    from oma_core.http import guard_hooks

    class Chunks(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for _ in range(CHUNKS):
                yield CHUNK

    request = httpx.Request("POST", "http://127.0.0.1/", extensions={"timeout": {"read": 120.0}})
    response = httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        stream=Chunks(),
        request=request,
        extensions={} if timed else {"network_stream": None},
    )
    if guarded:
        await guard_hooks("Bench")["response"][0](response)
    size = 0
    async for piece in response.aiter_raw():
        size += len(piece)
    assert size == CHUNKS * len(CHUNK), size
    return size


async def _timed() -> tuple[float, float]:
    """Median seconds per stream, bare and guarded, rounds interleaved."""
    times: dict[bool, list[float]] = {False: [], True: []}
    for guarded in (False, True):
        await _stream(guarded)
    for i in range(ROUNDS):
        for guarded in (False, True) if i % 2 else (True, False):
            start = time.perf_counter()
            await _stream(guarded)
            times[guarded].append(time.perf_counter() - start)
    return statistics.median(times[False]), statistics.median(times[True])


def _count(mode: str, streams: int) -> int:
    return count(str(Path(__file__).resolve()), mode, streams)


def _instructions(streams: int = 20) -> dict[str, float]:
    """Instructions the guard adds per chunk, on an httpcore reply and with a timer: each
    case counted with 0 and ``streams`` streams after the same warm-up, so start-up and
    imports cancel out."""
    per = {
        mode: (_count(mode, streams) - _count(mode, 0)) / streams / CHUNKS
        for mode in ("bare", "guarded", "timed")
    }
    return {mode: per[mode] - per["bare"] for mode in ("guarded", "timed")}


def _case(mode: str, streams: int) -> None:
    async def run() -> None:
        for _ in range(2 + streams):
            await _stream(mode != "bare", timed=mode == "timed")

    asyncio.run(run())


def main(argv: list[str]) -> None:
    bare, guarded = asyncio.run(_timed())
    added = (guarded - bare) / CHUNKS * 1e6
    print(f"chunks per stream                 {CHUNKS}")
    print(f"bare httpx stream                 {bare / CHUNKS * 1e6:8.2f} us/chunk")
    print(f"through guard_hooks               {guarded / CHUNKS * 1e6:8.2f} us/chunk")
    verdict = "ok" if added <= GOAL_US else "MISSED"
    print(f"  added per chunk                 {added:8.2f} us   goal <= {GOAL_US} us  {verdict}")
    if "--instructions" in argv:
        if shutil.which("valgrind") is None:
            raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
        added_by = _instructions()
        print(f"  added per chunk                 {added_by['guarded']:8,.0f} instructions")
        print(f"  with an IdleTimer (aiohttp)     {added_by['timed']:8,.0f} instructions")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--case":
        _case(sys.argv[2], int(sys.argv[3]))
    else:
        main(sys.argv[1:])
