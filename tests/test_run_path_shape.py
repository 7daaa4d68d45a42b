"""The run path stays readable: no function on it longer than 80 lines or nested deeper than 4.

One ``Agent.run`` passes through ``agent.py``, ``_runner.py`` (with ``_output_modes.py`` and
``_output.py``), ``_calls.py`` and, for a team, ``teams.py``. Issue 31 split a 157-line loop
at depth 7; this test measures every function of those modules with ``ast`` so that none
grows back: length from ``def`` to its last line, depth as the nesting of ``if``/``for``/
``while``/``try``/``with``/``match`` blocks (an ``elif`` is at its ``if``'s depth; a nested
function or class is measured on its own).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import oma_core

MAX_LINES = 80
MAX_DEPTH = 4
_CORE = Path(oma_core.__file__).parent
RUN_PATH = (
    "agent.py",
    "_runner.py",
    "_calls.py",
    "teams.py",
    "_output.py",
    "_output_modes.py",
)
_BLOCKS = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.TryStar,
    ast.With,
    ast.AsyncWith,
    ast.Match,
)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _depth(node: ast.AST) -> int:
    """The deepest nesting of blocks under ``node`` (not counting ``node`` itself)."""
    deepest = 0
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _SCOPES):
            continue
        if isinstance(node, ast.If) and node.orelse == [child] and isinstance(child, ast.If):
            deepest = max(deepest, _depth(child))  # an elif: the same level as its if
            continue
        inner = _depth(child) + isinstance(child, _BLOCKS)
        deepest = max(deepest, inner)
    return deepest


def _functions(source: str) -> list[tuple[str, int, int, int]]:
    """(name, line, length, depth) of every function in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            found.append((node.name, node.lineno, length, _depth(node)))
    return found


def test_the_measure_sees_length_depth_and_elif() -> None:
    source = (
        "def f(x):\n"
        "    if x:\n"
        "        for y in x:\n"
        "            pass\n"
        "    elif x is None:\n"
        "        while x:\n"
        "            try:\n"
        "                pass\n"
        "            except Exception:\n"
        "                with x:\n"
        "                    pass\n"
        "    def g():\n"
        "        if x:\n"
        "            pass\n"
    )
    shapes = {name: (length, depth) for name, _, length, depth in _functions(source)}
    assert shapes == {"f": (14, 4), "g": (3, 1)}


@pytest.mark.parametrize("module", RUN_PATH)
def test_no_function_on_the_run_path_is_long_or_deep(module: str) -> None:
    source = (_CORE / module).read_text(encoding="utf-8")
    over = [
        f"{module}:{line} {name}: {length} lines, depth {depth}"
        for name, line, length, depth in _functions(source)
        if length > MAX_LINES or depth > MAX_DEPTH
    ]
    assert not over, f"split these (at most {MAX_LINES} lines, depth {MAX_DEPTH}): " + "; ".join(
        over
    )
