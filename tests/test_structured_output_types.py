"""``mypy --strict`` sees a typed agent's results: ``Agent(AgentConfig(output_type=T))`` is an
``Agent[T]`` whose ``RunResult[T].structured`` is ``T | None``; without an output type, ``Any``
(the assertions are in ``tests/typing/structured_output_types.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHECKED = Path(__file__).parent / "typing" / "structured_output_types.py"


def test_mypy_strict_sees_the_output_type_on_results(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), str(CHECKED)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
