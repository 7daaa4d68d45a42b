"""The ``console`` examples of docs/cli.md run as written, through the real ``oma`` command.

Each ``$ ...`` line runs in bash (pipes and redirections work) from the repository root,
with only the built-in providers, 80 columns and a fresh ``$OMA_HOME`` per block; the lines
after it, up to the next ``$``, are its stdout and stderr. The daily session's block (after
``<!-- daily-session -->``) needs oma-openai and a server: tests/test_cli_daily.py runs it.
In the expected text a line ``...`` stands for any lines and ``...`` inside a line for any
characters (times, ids, paths).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
FENCE = re.compile(r"^```console\n(.*?)^```\s*$", re.M | re.S)


@attrs.frozen
class Example:
    line: int
    command: str
    expected: str


def blocks() -> list[list[Example]]:
    text = PAGE.read_text(encoding="utf-8")
    found: list[list[Example]] = []
    for match in FENCE.finditer(text):
        if text[: match.start()].rstrip().endswith("<!-- daily-session -->"):
            continue  # run against a fake server by tests/test_cli_daily.py
        start = text.count("\n", 0, match.start()) + 2
        examples: list[Example] = []
        for offset, line in enumerate(match.group(1).splitlines()):
            if line.startswith("$ "):
                examples.append(Example(start + offset, line[2:], ""))
            else:
                assert examples, f"docs/cli.md:{start + offset}: output before any command"
                last = examples[-1]
                examples[-1] = attrs.evolve(last, expected=last.expected + line + "\n")
        found.append(examples)
    return found


def _pattern(expected: str) -> re.Pattern[str]:
    parts = []
    for line in expected.splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            escaped = re.escape(line.rstrip()).replace(re.escape("..."), r"[^\n]*")
            parts.append(escaped + r"\n")
    return re.compile("".join(parts))


@pytest.fixture
def shell_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "oma"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m oma_core.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMA_")}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        OMA_HOME=str(tmp_path / "home"),
        OMA_LOAD_PLUGINS="",
        COLUMNS="80",
    )
    env.pop("LINES", None)
    yield env


BLOCKS = blocks()


def test_the_page_has_examples_for_every_command() -> None:
    from oma_core.cli import cli

    commands = {
        e.command.split()[1] for block in BLOCKS for e in block if e.command.startswith("oma ")
    }
    commands |= {
        e.command.split("| ")[1].split()[1]
        for block in BLOCKS
        for e in block
        if "| oma " in e.command
    }
    assert set(cli.commands) <= commands


@pytest.mark.parametrize("block", BLOCKS, ids=[f"line{b[0].line}" for b in BLOCKS])
def test_the_console_examples_run_as_written(
    block: list[Example], shell_env: dict[str, str]
) -> None:
    for example in block:
        done = subprocess.run(
            ["bash", "-c", example.command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env=shell_env,
            timeout=60,
            check=False,
        )
        actual = "".join(line.rstrip() + "\n" for line in done.stdout.splitlines())
        assert "Traceback" not in actual
        assert _pattern(example.expected).fullmatch(actual), (
            f"docs/cli.md:{example.line}: $ {example.command}\n--- expected\n"
            f"{example.expected}--- got\n{actual}"
        )
