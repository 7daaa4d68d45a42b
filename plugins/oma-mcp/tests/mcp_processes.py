"""Processes for the oma-mcp tests: where the toy server is, and this process's live children
read from /proc (a leaked server is a child still alive)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

SERVER = Path(__file__).with_name("toy_server.py")
EXAMPLE = Path(__file__).parents[3] / "examples" / "mcp_server.py"


def descendants() -> set[int]:
    """Live (not zombie) processes below this one, read from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if fields[0] != "Z":
            parents[int(entry.name)] = int(fields[1])
    found: set[int] = set()
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
