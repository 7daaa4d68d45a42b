"""A tiny supervisor an MCP stdio server runs under on Linux: no descendant outlives it.

Run as ``python -I -S _supervise.py COMMAND ARGS...`` (the toolset does, in a new session of
its own). It becomes a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every process
the server starts stays below it even after ``setsid`` and a double fork, then runs the server
as its child on the same stdin, stdout and stderr (it keeps no end of the pipes itself). When
the server exits, every process left below gets SIGTERM, and SIGKILL if it is still there
1.5 s later; then the supervisor exits with the server's status (at once when nothing was
left). That exit is what the toolset watches. On SIGTERM (the
toolset's stop sends it to the process group) the descendants outside the group get SIGTERM
too, and whatever remains 1.5 s later is killed (before the toolset's own SIGKILL, 2 s on).

Limits: only Linux has subreapers (elsewhere the server runs directly, and what leaves its
process group escapes); a process started outside the tree (by systemd, at, a D-Bus service)
is not the server's; if the supervisor itself is killed with SIGKILL first (the oma process
killed hard, say), what it adopted goes to init — the server still sees its stdin end.
Standard library only, no ``site``: it starts in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from types import FrameType

_PR_SET_CHILD_SUBREAPER = 36
#: how long a SIGTERM leaves the descendants before the SIGKILL
TERM_GRACE = 1.5


def _descendants() -> list[int]:
    """Live processes below this one, from /proc (zombies included: they are reaped)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue
        parents[int(name)] = int(fields[1])
    found: list[int] = []
    frontier = {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - set(found)
        found.extend(frontier)
    return found


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def _end_all() -> None:
    """SIGTERM everything below, wait up to ``TERM_GRACE`` for it to go (reaping), then
    ``_kill_all``."""
    _signal(_descendants(), signal.SIGTERM)
    for _ in range(int(TERM_GRACE / 0.01)):
        _reap()
        if not _descendants():
            return
        time.sleep(0.01)
    _kill_all()


def _kill_all() -> None:
    """SIGKILL everything below, and reap it, until nothing is left (an orphan of a killed
    process is adopted here, so a later pass finds it); 5 s at most (an unkillable one)."""
    for _ in range(500):
        left = _descendants()
        if not left:
            return
        _signal(left, signal.SIGKILL)
        _reap()
        time.sleep(0.01)


def _reap() -> None:
    """Reap the children that have ended."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str]) -> int:
    if not argv:
        os.write(2, b"usage: _supervise.py COMMAND [ARGS...]\n")
        return 2
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the server still runs, unsupervised
        pass
    server = os.fork()
    if server == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as error:
            os.write(2, f"{argv[0]}: {error.strerror}\n".encode())
        os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the server's end of the pipes is the only one: its exit is their EOF
    os.dup2(null, 1)

    def on_term(_signum: int, _frame: FrameType | None) -> None:
        group = os.getpgid(0)
        outside = []
        for pid in _descendants():
            try:
                if os.getpgid(pid) != group:
                    outside.append(pid)
            except OSError:
                continue
        _signal(outside, signal.SIGTERM)
        signal.setitimer(signal.ITIMER_REAL, TERM_GRACE)

    def on_alarm(_signum: int, _frame: FrameType | None) -> None:
        _kill_all()
        os._exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGALRM, on_alarm)
    code = 0
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid == server:
            code = os.waitstatus_to_exitcode(status)
            break
    _end_all()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
