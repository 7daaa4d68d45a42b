"""docs/getting-started.md works as written, in order, as a newcomer would follow it.

Its ``console`` blocks run line by line in bash through the real ``oma`` command, sharing one
fresh ``$OMA_HOME`` (a key stored in one block is listed in the next); its ``python`` blocks
run as plain scripts (``python first.py``: no top-level ``await``). A block that needs the
network or a real key carries ``<!-- not-run: reason -->`` on the line before it. In expected
output a ``...`` line stands for any lines, as in tests/test_cli_docs.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "getting-started.md"
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
MARKER = re.compile(r"^<!--\s*not-run:(.*?)-->\s*$")


@attrs.frozen
class Block:
    lang: str
    line: int
    code: str
    skip_reason: str | None


def _blocks() -> list[Block]:
    text = PAGE.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = [line for line in text[: match.start()].splitlines() if line.strip()]
        marker = MARKER.match(before[-1].strip()) if before else None
        line = text.count("\n", 0, match.start()) + 2
        reason = marker.group(1).strip() if marker else None
        found.append(Block(match.group(1), line, match.group(2), reason))
    return found


def _pattern(expected: str) -> re.Pattern[str]:
    parts = []
    for line in expected.splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(line.rstrip()).replace(re.escape("..."), r"[^\n]*") + r"\n")
    return re.compile("".join(parts))


def _commands(block: Block) -> list[tuple[str, str]]:
    """The block's ``$`` lines, each with the output expected after it."""
    commands: list[tuple[str, str]] = []
    for offset, line in enumerate(block.code.splitlines()):
        if line.startswith("$ "):
            commands.append((line[2:], ""))
        else:
            assert commands, f"docs/getting-started.md:{block.line + offset}: output first"
            command, expected = commands[-1]
            commands[-1] = (command, expected + line + "\n")
    return commands


@pytest.fixture
def newcomer_env(tmp_path: Path) -> dict[str, str]:
    """The built-in providers and oma-openai (the plugin the page installs), a fresh config
    directory, and a (fake) key in the environment, as the page assumes."""
    pytest.importorskip("oma_openai", reason="the page installs oma-openai")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "oma"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m oma_core.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMA_", "OPENAI_"))}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        OMA_HOME=str(tmp_path / "home"),
        OMA_LOAD_PLUGINS="openai",
        OPENAI_API_KEY="sk-example-not-a-real-key",
        COLUMNS="80",
    )
    return env


def test_the_page_is_first_after_home_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:\n", 1)[1]
    pages = re.findall(r"^\s*- [^:\n]+: (\S+\.md)\s*$", nav, re.M)
    assert pages[:2] == ["index.md", "getting-started.md"]


def test_every_step_is_run_or_says_why_not() -> None:
    blocks = _blocks()
    assert {b.lang for b in blocks} == {"console", "python"}
    assert all(b.skip_reason is None or len(b.skip_reason.split()) >= 2 for b in blocks)
    ran = [b for b in blocks if b.skip_reason is None]
    assert {b.lang for b in ran} == {"console", "python"}


@pytest.mark.combination  # the page installs oma-openai: run by `nox -s all`
def test_the_console_steps_run_as_written_in_order(newcomer_env: dict[str, str]) -> None:
    ran = 0
    for block in _blocks():
        if block.lang != "console" or block.skip_reason is not None:
            continue
        for command, expected in _commands(block):
            done = subprocess.run(
                ["bash", "-c", command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                cwd=ROOT,
                env=newcomer_env,
                timeout=60,
                check=False,
            )
            actual = "".join(line.rstrip() + "\n" for line in done.stdout.splitlines())
            assert done.returncode == 0, f"$ {command}\n{actual}"
            assert _pattern(expected).fullmatch(actual), (
                f"docs/getting-started.md:{block.line}: $ {command}\n--- expected\n"
                f"{expected}--- got\n{actual}"
            )
            ran += 1
    assert ran >= 3


@pytest.mark.combination  # the page installs oma-openai: run by `nox -s all`
def test_the_scripts_run_as_plain_python_files(
    newcomer_env: dict[str, str], tmp_path: Path
) -> None:
    scripts = [b for b in _blocks() if b.lang == "python" and b.skip_reason is None]
    assert scripts
    for number, block in enumerate(scripts):
        script = tmp_path / f"script{number}.py"
        script.write_text(block.code, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, str(script)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=newcomer_env,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"docs/getting-started.md:{block.line}\n{done.stderr}"
        assert done.stdout.strip(), "the script prints its answer"


def test_every_marked_script_at_least_compiles_as_a_plain_script() -> None:
    """Even a script that is not run here would run as a file: no top-level ``await``."""
    for block in _blocks():
        if block.lang == "python":
            compile(block.code, f"docs/getting-started.md:{block.line}", "exec")
