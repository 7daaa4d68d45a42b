"""Shared builders: a backend that runs tests/fake_cli.py in some mode, and event collection."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from oma_process import ProcessBackend

from oma_core import BackendRequest
from oma_core.backends import BackendEvent

pytest_plugins = ["oma_core.testing.pytest_plugin"]  # subreaper, group_gone

FAKE_CLI = str(Path(__file__).with_name("fake_cli.py"))


@pytest.fixture(scope="session", autouse=True)
def _every_test_as_subreaper(subreaper: bool) -> None:
    """Every test runs as subreaper, so the backend's group shutdown reaps killed grandchildren."""


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
