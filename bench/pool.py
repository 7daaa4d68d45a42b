"""Calls past the connection pool queue, they do not fail: one agent, many calls in flight.

    python bench/pool.py                  # 500 calls, pool 100, a 2 s server, each transport
    python bench/pool.py 150 25 direct    # calls, seconds per reply, transport

Each call is one ``Agent.run`` on one shared agent (``provider="openai"``) against the
plugin's fake Chat Completions server, which answers every request after a delay, so the
calls past the pool wait for a connection longer than the 5 s connect timeout. Goal: every
call succeeds, on every transport (before the fix, the direct transport failed a third of
150 25-second calls with ConnectionTimeoutError).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins" / "oma-openai" / "tests"))

from fake_openai import FakeChatCompletions  # noqa: E402

from oma_core import Agent, AgentConfig  # noqa: E402


async def _run(calls: int, delay: float, transport: str) -> None:
    with FakeChatCompletions() as server:
        server.response_delay = delay
        config = AgentConfig(
            name="pool",
            provider="openai",
            base_url=server.base_url,  # type: ignore[attr-defined]
            api_key="test-key",
            max_retries=0,
            provider_options={"transport": transport},
        )
        started = time.perf_counter()
        async with Agent(config) as agent:
            results = await asyncio.gather(*(agent.run(f"call {i}") for i in range(calls)))
        elapsed = time.perf_counter() - started
        failed = [r for r in results if not r.success]
        errors = sorted({str(r.status.error)[:70] for r in failed})
        ok = not failed
        print(
            f"{transport:8} {calls} calls, {delay:g} s each: {calls - len(failed)}/{calls} ok "
            f"in {elapsed:.1f} s, at most {server.max_open_connections} connections "
            f"(goal: all ok) {'ok' if ok else 'MISSED'} {errors}"
        )


def main(argv: list[str]) -> None:
    calls = int(argv[0]) if argv else 500
    delay = float(argv[1]) if len(argv) > 1 else 2.0
    transports = argv[2:] or ["httpx", "aiohttp", "direct"]
    for transport in transports:
        asyncio.run(_run(calls, delay, transport))


if __name__ == "__main__":
    main(sys.argv[1:])
