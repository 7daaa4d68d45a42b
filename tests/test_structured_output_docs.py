"""docs/structured-output.md's table of output modes is what the installed plugins declare:
each row against ``oma plugins --json`` (a row whose provider is not installed here is left
out), and every provider of this repository that is installed has a row."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from oma_core._output import choose_mode
from oma_core._resolution import KNOWN_DISTRIBUTIONS

DOC = Path(__file__).resolve().parents[1] / "docs" / "structured-output.md"
BUILT_IN = {"echo", "scripted"}


@functools.cache
def installed() -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMA_")}
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "plugins", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    providers: dict[str, Any] = json.loads(done.stdout)["providers"]
    return providers


def table() -> dict[str, tuple[list[str], str]]:
    """provider -> (its output modes, the mode a run takes), from the doc's table."""
    rows: dict[str, tuple[list[str], str]] = {}
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("| provider | plugin | output modes | a run takes |")
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        provider, _plugin, modes, takes = (cell.strip() for cell in line.strip("|").split("|"))
        rows[provider.strip("`")] = (sorted(m.strip() for m in modes.split(",")), takes)
    return rows


def test_each_row_is_what_the_installed_plugin_declares() -> None:
    wrong = {
        name: (modes, installed()[name]["output_modes"])
        for name, (modes, _) in table().items()
        if name in installed() and installed()[name]["output_modes"] != modes
    }
    assert not wrong, f"rows of docs/structured-output.md to update (doc, declared): {wrong}"


def test_each_row_says_the_mode_a_run_takes() -> None:
    for name, (modes, takes) in table().items():
        assert choose_mode(frozenset(modes), None, name) == takes, name


def test_every_provider_of_this_repository_has_a_row() -> None:
    ours = {name for name in installed() if name in KNOWN_DISTRIBUTIONS or name in BUILT_IN}
    assert ours - set(table()) == set()
