"""Shared builders: a backend driving tests/acp_agent.py, and event collection."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from oma_acp import AcpBackend

from oma_core.backends import BackendEvent, BackendRequest

AGENT = str(Path(__file__).with_name("acp_agent.py"))


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


@pytest.fixture(scope="session", autouse=True)
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
