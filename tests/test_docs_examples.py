"""The Python examples in README.md and docs/ run as written.

Every fenced ``python`` block either runs here (offline, on the built-in echo/scripted
providers) or carries a marker on the line before it saying why it cannot:

    <!-- not-run: needs an Anthropic API key -->

A page's blocks run in order in one namespace, from the repository root (the docs use paths such
as ``examples/cat.png``); top-level ``await`` works. A few names a page assumes the reader already
has (``config``, ``prompt``, ...) are given in ``GIVEN`` below; everything else comes from the
page itself. External plugins are not loaded, so the result is the same whether they are
installed or not.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import attrs
import pytest
from _builders import ROOT

from oma_core import PluginHost

PAGES = [
    "README.md",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "providers").glob("*.md")),
]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
MARKER = re.compile(r"^<!--\s*not-run:(.*?)-->\s*$")
# Pages whose examples change process-wide state (the global tracer provider): run apart.
ISOLATED = {"docs/tracing.md"}

# What a page takes for granted: objects "you already have". Code, not prose, so the
# examples that use them are run too.
_CONFIG = "from oma_core import AgentConfig\nconfig = AgentConfig('helper')\n"
GIVEN = {
    "docs/agent.md": (
        "from oma_core import Agent, AgentConfig\n"
        "agent = Agent(AgentConfig('helper'))\n"
        "messages = [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}]\n"
    ),
    "docs/budgets.md": _CONFIG + "prompt = 'Summarise this.'\nquestions = ['a?', 'b?']\n",
    "docs/orchestrator.md": _CONFIG + "questions = ['a?', 'b?']\n",
    "docs/retries.md": _CONFIG + "prompt = 'Summarise this.'\n",
    "docs/backends.md": "from oma_core import AgentConfig\n",
    "docs/messages.md": "mp4_bytes = bytes(range(40))\n",
}


@attrs.frozen
class Block:
    page: str
    line: int
    code: str
    skip_reason: str | None  # the not-run marker's reason, None when the block runs


def _blocks(page: str) -> Iterator[Block]:
    text = (ROOT / page).read_text(encoding="utf-8")
    for match in FENCE.finditer(text):
        if match.group(1) != "python":
            continue
        before = [line for line in text[: match.start()].splitlines() if line.strip()]
        marker = MARKER.match(before[-1].strip()) if before else None
        line = text.count("\n", 0, match.start()) + 1
        yield Block(page, line, match.group(2), marker.group(1).strip() if marker else None)


def _run_page(page: str) -> int:
    """Run the page's runnable blocks in order in one namespace; return how many ran."""
    namespace: dict[str, object] = {"__name__": "__docs__"}
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    loop = asyncio.new_event_loop()
    ran = 0
    try:
        exec(GIVEN.get(page, ""), namespace)
        for block in _blocks(page):
            if block.skip_reason is not None:
                continue
            code = compile(block.code, f"{page}:{block.line}", "exec", flags=flags)
            result = eval(code, namespace)  # a coroutine when the block awaits at top level
            if inspect.iscoroutine(result):
                loop.run_until_complete(result)
            ran += 1
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
    failed = [name for name, value in namespace.items() if _failed(value)]
    assert not failed, f"{page}: runs that failed: {failed}"
    return ran


def _failed(value: object) -> bool:
    """A run result (or a list of them) that did not succeed: an example that "ran" but whose
    run failed, e.g. for want of a provider, does not count as working."""
    from oma_core import RunResult, TeamRunResult

    if isinstance(value, list | tuple):
        return any(_failed(item) for item in value)
    return isinstance(value, RunResult | TeamRunResult) and not value.success


@pytest.fixture
def offline_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No external plugin loads, and the examples' plugin registrations stay in this test."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "")
    monkeypatch.delenv("OMA_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("OMA_PROVIDER", raising=False)
    previous = PluginHost.set_default(PluginHost())
    try:
        yield
    finally:
        PluginHost.set_default(previous)


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_runs_or_says_why_not(page: str) -> None:
    for block in _blocks(page):
        assert block.skip_reason is None or len(block.skip_reason.split()) >= 2, (
            f"{page}:{block.line}: a not-run marker needs a reason"
        )
        ast.parse(block.code, f"{page}:{block.line}")  # even a block that does not run parses


@pytest.mark.parametrize("page", PAGES)
def test_every_not_run_marker_is_on_a_python_or_console_block(page: str) -> None:
    """A marker stands right before the block it excuses (the ``console`` blocks of
    docs/getting-started.md are run, or excused, by tests/test_getting_started.py)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    markers = sum(1 for line in text.splitlines() if MARKER.match(line.strip()))
    marked = 0
    for match in FENCE.finditer(text):
        before = [line for line in text[: match.start()].splitlines() if line.strip()]
        if match.group(1) in ("python", "console") and before and MARKER.match(before[-1].strip()):
            marked += 1
    assert markers == marked


@pytest.mark.parametrize("page", sorted(set(PAGES) - ISOLATED))
def test_the_page_examples_run(page: str, offline_host: None) -> None:
    runnable = [block for block in _blocks(page) if block.skip_reason is None]
    assert _run_page(page) == len(runnable)


@pytest.mark.parametrize("page", sorted(ISOLATED))
def test_the_isolated_page_examples_run(page: str) -> None:
    env = {**os.environ, "OMA_LOAD_PLUGINS": ""}
    code = f"import sys; sys.path.insert(0, {str(ROOT / 'tests')!r}); import test_docs_examples"
    code += f" as t; print('ran', t._run_page({page!r}), 'blocks')"
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr
    runnable = [block for block in _blocks(page) if block.skip_reason is None]
    assert f"ran {len(runnable)} blocks" in run.stdout


def test_most_examples_run() -> None:
    """The markers stay the exception: most examples are checked by running them."""
    blocks = [block for page in PAGES for block in _blocks(page)]
    skipped = [block for block in blocks if block.skip_reason is not None]
    assert len(blocks) >= 30
    assert len(skipped) * 2 < len(blocks), [f"{b.page}:{b.line}" for b in skipped]
