"""Shared builders: a backend driving tests/acp_agent.py, and event collection."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from oma_acp import AcpBackend

from oma_core.backends import BackendEvent, BackendRequest

pytest_plugins = ["oma_core.testing.pytest_plugin"]  # subreaper, group_gone

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


async def _collect(backend: AcpBackend, prompt: str, **request: Any) -> list[BackendEvent]:
    return [event async for event in backend.run(BackendRequest(prompt, **request))]


@pytest.fixture
def collect() -> Callable[..., Any]:
    """``await collect(backend, "prompt", system_prompt=...)``: every event of one run."""
    return _collect
