"""Shared builders: a backend driving tests/acp_agent.py, and event collection.

Two checks apply to every test here: an async test fails if it leaves an async generator to
the garbage collector (``oma_core.testing.closed_generators``), and ``make_backend`` fails a
test that leaves a task running once its backends are closed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from oma_acp import AcpBackend

from oma_core.toolkit import BackendEvent, BackendRequest

pytest_plugins = [
    "oma_core.testing.hypothesis_timing",
    "oma_core.testing.pytest_plugin",
    "oma_core.testing.closed_generators",
]  # subreaper, group_gone


AGENT = str(Path(__file__).with_name("acp_agent.py"))


@pytest.fixture(scope="session", autouse=True)
def _every_test_as_subreaper(subreaper: bool) -> None:
    """Every test runs as subreaper, so the backend's group shutdown reaps killed grandchildren."""


@pytest.fixture
async def make_backend(tmp_path: Path) -> AsyncIterator[Callable[..., AcpBackend]]:
    """``make_backend(permission="allow")``: a backend for the test agent, cwd ``tmp_path``;
    every backend made is closed after the test, even a failed one."""
    made: list[AcpBackend] = []

    def make(**options: Any) -> AcpBackend:
        options.setdefault("cwd", str(tmp_path))
        options.setdefault("kill_grace", 5.0)  # generous: a loaded machine is slow
        backend = AcpBackend({"command": sys.executable, "args": [AGENT], **options})
        made.append(backend)
        return backend

    yield make
    for backend in made:
        await backend.aclose()
    await _no_task_left()


async def _no_task_left() -> None:
    """Fail unless every task but this one has ended (within a generous bound)."""
    current = asyncio.current_task()
    for _ in range(1500):  # up to 30 s on a loaded machine
        left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if not left:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"tasks still running after every backend was closed: {left}")


async def _collect(backend: AcpBackend, prompt: str, **request: Any) -> list[BackendEvent]:
    return [event async for event in backend.run(BackendRequest(prompt, **request))]


@pytest.fixture
def collect() -> Callable[..., Any]:
    """``await collect(backend, "prompt", system_prompt=...)``: every event of one run."""
    return _collect
