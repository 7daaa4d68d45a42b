"""Shared builders: a backend that runs tests/fake_cli.py in some mode, and event collection.

Two checks apply to every test here: an async test fails if it leaves an async generator to
the garbage collector (``_generators_closed``), and ``make_backend`` fails a test that leaves a
task running once its backends are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import inspect
import sys
from collections.abc import AsyncIterator, Callable, Iterator
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
    await _no_task_left()


async def _no_task_left() -> None:
    """Fail unless every task but this one has ended (within a generous bound)."""
    current = asyncio.current_task()
    for _ in range(500):
        left = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if not left:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"tasks still running after every backend was closed: {left}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Run every async test inside ``_generators_closed``."""
    test = getattr(item, "obj", None)
    if not inspect.iscoroutinefunction(test):
        return (yield)

    @functools.wraps(test)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        with _generators_closed():
            return await test(*args, **kwargs)

    item.obj = checked  # type: ignore[attr-defined]
    try:
        return (yield)
    finally:
        item.obj = test  # type: ignore[attr-defined]


@contextlib.contextmanager
def _generators_closed() -> Iterator[None]:
    """Fail if an async generator first iterated inside the block is left to the garbage
    collector instead of being closed.

    asyncio then closes it late, in a task of its own: the cleanup it was promised (a stopped
    process, a sent cancel) happens after the caller was told the work had stopped. The
    finalizer hook (``sys.set_asyncgen_hooks``) is called for exactly those generators.
    """
    hooks = sys.get_asyncgen_hooks()
    leaked: list[str] = []

    def finalizer(generator: Any) -> None:
        leaked.append(generator.__qualname__)
        if hooks.finalizer is not None:
            hooks.finalizer(generator)

    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalizer)
    try:
        yield
        gc.collect()
    finally:
        sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=hooks.finalizer)
    assert not leaked, f"async generators left to the garbage collector: {leaked}"


async def _collect(backend: ProcessBackend, prompt: str = "", **request: Any) -> list[BackendEvent]:
    return [event async for event in backend.run(BackendRequest(prompt, **request))]


@pytest.fixture
def collect() -> Callable[..., Any]:
    """``await collect(backend, "prompt", system_prompt=...)``: every event of one run."""
    return _collect
