"""Waiting in a test for a condition to hold, never for a length of time: a sleep that is
"long enough" on a quiet machine is too short on a loaded one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def until(condition: Callable[[], object], *, within: float = 30.0) -> None:
    """Return once ``condition()`` is true; fail the test if ``within`` seconds pass first
    (a bound on a hang, which a passing test never approaches)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"still false after {within:g} s: {condition}")
        await asyncio.sleep(0.005)
