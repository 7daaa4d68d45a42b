"""Benchmark: how long ``import oma_core`` takes, against the 150 ms goal.

Runs ``python -X importtime -c "import oma_core"`` in fresh subprocesses (best of five) and
reads the cumulative time of ``oma_core`` from its report. Also times, by wall clock, loading
the whole message model on top (``load_messages``, ``dump_messages``: attrs and cattrs).
"""

from __future__ import annotations

import subprocess
import sys

GOAL_MS = 150.0
MODEL = (
    "import time; t = time.perf_counter(); import oma_core; "
    "oma_core.load_messages; oma_core.dump_messages; oma_core.estimate_tokens; "
    "oma_core.image_url; print((time.perf_counter() - t) * 1000)"
)


def importtime_ms() -> float:
    """Cumulative milliseconds of ``import oma_core`` in one fresh interpreter."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import oma_core"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in result.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == "oma_core" and parts[2].startswith(" oma"):
            return int(parts[1]) / 1000
    raise RuntimeError("oma_core not found in the -X importtime report")


def model_ms() -> float:
    result = subprocess.run(
        [sys.executable, "-c", MODEL], capture_output=True, text=True, check=True
    )
    return float(result.stdout)


def main() -> None:
    core = min(importtime_ms() for _ in range(5))
    model = min(model_ms() for _ in range(5))
    print(
        f"import oma_core (-X importtime, cumulative): {core:6.1f} ms   goal < {GOAL_MS:.0f} ms  "
        f"{'OK' if core < GOAL_MS else 'MISSED'}"
    )
    print(f"import oma_core + the message model (wall clock): {model:6.1f} ms")


if __name__ == "__main__":
    main()
