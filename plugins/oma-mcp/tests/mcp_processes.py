"""Processes for the oma-mcp tests: where the toy server is, HTTP servers started for a test
(``served``), and this process's live children read from /proc (a leaked server is a child
still alive)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

SERVER = Path(__file__).with_name("toy_server.py")
EXAMPLE = Path(__file__).parents[3] / "examples" / "mcp_server.py"


def _stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first, then the parent),
    or None for a process that is gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields


def descendants() -> set[int]:
    """Live (not zombie) processes below this one, read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(entry.name)) is not None:
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def alive(pids: list[int]) -> set[int]:
    """Those of ``pids`` still running (not gone, not a zombie), wherever they are now (an
    orphan belongs to init, so it is no descendant)."""
    return {pid for pid in pids if _stat(pid) is not None}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def served(*command: str, path: str = "/mcp", port: int | None = None) -> Iterator[str]:
    """``python COMMAND... PORT`` on ``port`` (a free one by default), up to 60 s to take a
    connection, stopped after; its URL (``path`` on that port)."""
    port = port or free_port()
    process = subprocess.Popen(
        [sys.executable, *command, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{Path(command[0]).name} did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
