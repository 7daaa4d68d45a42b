"""Shared builders: a backend driving tests/acp_agent.py, and event collection."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from oma_acp import AcpBackend

from oma_core.backends import BackendEvent, BackendRequest

AGENT = str(Path(__file__).with_name("acp_agent.py"))


@pytest.fixture(scope="session", autouse=True)
def _reap_orphans_like_init() -> None:
    """Make this test process a child subreaper (Linux), as a proper init would be.

    The sandbox's PID 1 does not reap orphans, so a killed grandchild would stay a zombie and
    keep its process group alive; as subreaper, the backend's group shutdown reaps it.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


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
