"""Instructions counted by valgrind's callgrind for one case of a bench script run again under
it: what ``instructions.py`` and ``read_guard.py`` count (a figure the machine's load does not
move)."""

from __future__ import annotations

import re
import subprocess
import sys


def count(script: str, mode: str, times: int) -> int:
    """The instructions ``python SCRIPT --case MODE TIMES`` executes, start-up included."""
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            script,
            "--case",
            mode,
            str(times),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"valgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))
