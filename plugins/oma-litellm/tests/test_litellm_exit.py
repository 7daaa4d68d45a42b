"""Closing the last oma-litellm provider closes the clients LiteLLM cached for itself
(``litellm.close_litellm_async_clients``), so a process ends without an aiohttp session of
LiteLLM's left to the garbage collector ("Unclosed client session" on stderr)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_closing_the_agent_closes_litellms_cached_clients_and_nothing_is_left_unclosed() -> None:
    run = subprocess.run(
        [sys.executable, "-W", "default", str(HERE / "litellm_exit_script.py")],
        cwd=HERE, env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(HERE), os.environ.get("PYTHONPATH", "")])},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "aiohttp sessions left open: 0" in run.stdout, run.stdout + run.stderr[-2000:]
    assert "Unclosed client session" not in run.stderr, run.stderr[-3000:]
    assert "Unclosed connector" not in run.stderr, run.stderr[-3000:]
