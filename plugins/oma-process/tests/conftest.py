"""Shared builders: a backend that runs tests/fake_cli.py in some mode, and event collection."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from oma_process import ProcessBackend

from oma_core import BackendRequest
from oma_core.backends import BackendEvent

FAKE_CLI = str(Path(__file__).with_name("fake_cli.py"))


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
async def make_backend() -> AsyncIterator[Callable[..., ProcessBackend]]:
    """``make_backend("echo", timeout=1)``: a backend running the fake CLI in that mode;
    every backend made is closed after the test, even a failed one."""
    made: list[ProcessBackend] = []

    def make(*mode: str, **options: Any) -> ProcessBackend:
        backend = ProcessBackend({"command": sys.executable, "args": [FAKE_CLI, *mode], **options})
        made.append(backend)
        return backend

    yield make
    for backend in made:
        await backend.aclose()


async def _collect(backend: ProcessBackend, prompt: str = "", **request: Any) -> list[BackendEvent]:
    return [event async for event in backend.run(BackendRequest(prompt, **request))]


@pytest.fixture
def collect() -> Callable[..., Any]:
    """``await collect(backend, "prompt", system_prompt=...)``: every event of one run."""
    return _collect
