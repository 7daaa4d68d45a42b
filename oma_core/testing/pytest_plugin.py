"""An opt-in pytest plugin with fixtures for testing provider and backend plugins.

Enable it in a ``conftest.py``::

    pytest_plugins = ["oma_core.testing.pytest_plugin"]

``fake_server_factory(ServerClass, **kwargs)`` starts a fake server (a ``FakeServer``
subclass) and returns it; every server it started is closed when the test ends, and a test
whose server's handler raised (a bug in the fake server, answered with a 500) fails.

For backends that run child processes: ``subreaper`` (session scope) makes the test process
a child subreaper on Linux, as a proper init would be, and says whether that worked;
``group_gone(pgid, leader=None)`` asserts that a process group is gone. A backend's tests
usually request ``subreaper`` from an autouse fixture of their own, so every test runs as
subreaper, not only those that check a group.

To fail every async test that leaves an async generator to the garbage collector (asyncio
closes it late, in a task of its own: a connection stays open, a cancel is sent after the
caller was told the work stopped), enable ``oma_core.testing.closed_generators`` too;
``generators_closed()`` here is the same check as a context manager. The generators of httpx
and httpcore are exempt (an early-closed httpx stream leaves its own to the collector by
design).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from .fake_server import FakeServer

__all__ = [
    "fake_server_factory",
    "generators_closed",
    "group_gone",
    "subreaper",
]

S = TypeVar("S", bound=FakeServer)


@pytest.fixture
def fake_server_factory() -> Iterator[Callable[..., Any]]:
    """Start fake servers for one test; closes them all afterwards."""
    started: list[FakeServer] = []

    def start(server_class: type[S], /, **kwargs: Any) -> S:
        server = server_class(**kwargs)
        server.start()
        started.append(server)
        return server

    yield start
    errors = [e for s in started for e in s.handler_errors]
    for server in started:
        server.close()
    if errors:
        pytest.fail(f"a fake server's handler raised: {errors[0]!r}", pytrace=False)


def _become_subreaper() -> bool:
    """Make this test process a child subreaper (Linux), as a proper init would be; True if
    that worked. Never raises: without it the group checks wait for init instead."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return int(libc.prctl(36, 1, 0, 0, 0)) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


@pytest.fixture(scope="session")
def subreaper() -> bool:
    """Whether this process reaps orphans itself (then the backend's group shutdown reaps the
    group's killed grandchildren, and a group check needs no waiting)."""
    return _become_subreaper()


def _group_members(pgid: int) -> dict[int, str]:
    """The processes of group ``pgid`` with their state letter (Linux /proc; {} elsewhere)."""
    members = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            members[int(entry.parent.name)] = fields[0]
    return members


@pytest.fixture
def group_gone(subreaper: bool) -> Callable[..., None]:
    """``group_gone(pgid, leader=None)`` asserts that no process of the group is alive and
    that ``leader`` (our child) was reaped. As subreaper, the group must be gone at once;
    otherwise killed grandchildren are init's to reap: wait for it a while, and if this init
    does not reap, accept only dead (zombie) members."""

    def check(pgid: int, leader: int | None = None) -> None:
        if leader is not None:
            with pytest.raises(ChildProcessError):  # our child was reaped: no zombie of ours
                os.waitpid(leader, os.WNOHANG)
        deadline = time.monotonic() + (0.0 if subreaper else 10.0)
        while True:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        members = _group_members(pgid)
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        assert not subreaper, f"process group {pgid} still exists: {members}"
        alive = {pid: state for pid, state in members.items() if state != "Z"}
        assert members and not alive, f"process group {pgid} has live members: {alive}"

    return check


#: Libraries whose async generators an early close leaves to the collector by design.
_EXEMPT = re.compile(r"[/\\](httpx|httpcore)[/\\]")


@contextlib.contextmanager
def generators_closed(exempt: re.Pattern[str] = _EXEMPT) -> Iterator[None]:
    """Fail if an async generator first iterated inside the block is left to the garbage
    collector instead of being closed (the finalizer hook of ``sys.set_asyncgen_hooks`` is
    called for exactly those)."""
    hooks = sys.get_asyncgen_hooks()
    leaked: list[str] = []

    def finalizer(generator: Any) -> None:
        if not exempt.search(generator.ag_code.co_filename):
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
