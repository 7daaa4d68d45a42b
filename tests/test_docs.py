"""Docs and tests stay honest: every hook is documented and exercised, every command documented."""

from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path

import pytest
from _builders import ROOT

from oma_core import hookspecs
from oma_core.cli import CAPABILITY_COLUMNS, cli

HOOKS = sorted(name for name in vars(hookspecs) if name.startswith("oma_"))
# Tests that only list the hooks do not count as exercising them.
LISTING_TESTS = {"test_hookspecs.py", "test_docs.py"}
# The kind of every hook: a new hook spec must be added here, to its docs and to a test.
KINDS = {
    "oma_register_providers": "collect",
    "oma_register_backends": "collect",
    "oma_register_executors": "collect",
    "oma_register_toolsets": "collect",
    "oma_register_scorers": "collect",
    "oma_register_stores": "collect",
    "oma_before_run": "chain",
    "oma_progress": "observe",
    "oma_evaluation_result": "observe",
    "oma_run": "wrap",
    "oma_model_call": "wrap",
    "oma_tool_call": "wrap",
}


def _section(page: str, heading: str) -> str:
    """The text under a ``##``-``####`` heading, up to the next heading of any level."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    match = re.search(
        rf"^#{{2,4}}\s+`?{re.escape(heading)}`?\s*$(.*?)(?=^#{{1,4}}\s|\Z)", text, re.M | re.S
    )
    assert match, f"docs/{page} has no section {heading!r}"
    return match.group(1)


def _is_hookimpl(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name == "hookimpl"


def _owners(tree: ast.Module, hook: str) -> set[str]:
    """Module-level names whose body defines a ``@hookimpl`` implementation of ``hook``."""
    owners: set[str] = set()
    for top in tree.body:
        for node in ast.walk(top):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name == hook
                and any(_is_hookimpl(d) for d in node.decorator_list)
            ):
                owners.add(getattr(top, "name", ""))
    return owners


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """A test module's syntax tree, parsed once for every hook asked about (read, not changed)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _tests_implementing(hook: str) -> list[str]:
    """Test functions that define a ``@hookimpl`` implementation of ``hook`` (in their body, in
    a class or function of their module, or in one of tests/_builders.py that they import, used
    by name)."""
    shared = _owners(_parsed(ROOT / "tests" / "_builders.py"), hook)
    found = []
    for path in ROOT.glob("tests/test_*.py"):
        if path.name in LISTING_TESTS:
            continue
        tree = _parsed(path)
        owners = _owners(tree, hook)
        for top in tree.body:
            if isinstance(top, ast.ImportFrom) and top.module == "_builders":
                owners |= {a.asname or a.name for a in top.names if a.name in shared}
        for name, used in _test_functions(path):
            if name in owners or used & owners:
                found.append(f"{path.name}::{name}")
    return found


@functools.cache
def _test_functions(path: Path) -> tuple[tuple[str, frozenset[str]], ...]:
    """Each top-level test function of a module and the names its body uses."""
    return tuple(
        (top.name, frozenset(n.id for n in ast.walk(top) if isinstance(n, ast.Name)))
        for top in _parsed(path).body
        if isinstance(top, ast.FunctionDef | ast.AsyncFunctionDef) and top.name.startswith("test_")
    )


def _headings(page: str) -> set[str]:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return {m.group(1).strip() for m in re.finditer(r"^#{2,4}\s+`?([^`\n]+?)`?\s*$", text, re.M)}


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_section_in_the_plugin_docs(hook: str) -> None:
    assert any(heading.startswith(hook) for heading in _headings("plugins.md")), hook


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_named_in_a_test(hook: str) -> None:
    tests = [p for p in ROOT.glob("tests/**/test_*.py") if p.name not in LISTING_TESTS]
    assert any(hook in path.read_text(encoding="utf-8") for path in tests), hook


def test_every_hook_has_a_declared_kind() -> None:
    assert set(KINDS) == set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_spec_states_its_kind(hook: str) -> None:
    doc = inspect.getdoc(getattr(hookspecs, hook)) or ""
    assert f"{KINDS[hook].capitalize()} hook" in doc, hook


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_section_gives_kind_signature_and_an_explanation(hook: str) -> None:
    section = _section("plugins.md", hook)
    arguments = list(inspect.signature(getattr(hookspecs, hook)).parameters)
    assert f"*{KINDS[hook]}*" in section, hook
    assert f"`{hook}({', '.join(arguments)})" in section, hook
    prose = re.sub(r"```.*?```", "", section, flags=re.S)
    assert len(prose.split()) >= 30, f"the section on {hook} says too little"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_implemented_by_a_test(hook: str) -> None:
    assert _tests_implementing(hook), f"no test registers an implementation of {hook}"


@pytest.mark.parametrize("command", sorted(cli.commands))
def test_every_command_has_a_section_in_the_cli_docs(command: str) -> None:
    assert any(heading.startswith(f"oma {command}") for heading in _headings("cli.md")), command


def test_the_cli_docs_name_every_capability_column() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for key in CAPABILITY_COLUMNS:
        assert f"`{key}`" in text, key


@pytest.mark.parametrize("provider", ["echo", "scripted"])
def test_the_builtin_provider_table_matches_oma_plugins(provider: str) -> None:
    from oma_core.cli import capability_matrix
    from oma_core.plugins import PluginHost

    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith(f"| `{provider}` |")]
    cells = [cell.strip() for cell in row.strip("|").split("|")][1:]
    spec = PluginHost(load_entrypoints=False).provider_spec(provider)
    assert cells == list(capability_matrix(spec.capabilities).values())


def test_public_names_are_listed_once_and_all_resolve() -> None:
    """``__all__`` is a literal list (so type checkers see the re-exports) kept equal to the
    lazy-export table, and every name in it loads."""
    import oma_core

    assert oma_core.__all__ == sorted({*oma_core._EXPORTS, "hookimpl", "__version__"})
    for name in oma_core.__all__:
        assert getattr(oma_core, name) is not None


def test_the_provider_tutorial_code_works_as_written(tmp_path: Path) -> None:
    """docs/writing-a-provider.md, followed from scratch: its package and its tests, run."""
    import os
    import subprocess
    import sys
    import tomllib

    text = (ROOT / "docs" / "writing-a-provider.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(\w*)\n(.*?)```", text, re.S)
    python = [code for lang, code in blocks if lang == "python"]
    (pyproject,) = [code for lang, code in blocks if lang == "toml"]
    init, provider, tests = python
    package = tmp_path / "oma_acme"
    package.mkdir()
    (package / "__init__.py").write_text(init)
    (package / "_provider.py").write_text(provider)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_acme.py").write_text(tests)
    project = tomllib.loads(pyproject)["project"]
    info = tmp_path / "oma_acme-0.1.0.dist-info"  # installed, as far as importlib.metadata sees
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    entry_points = "\n".join(f"{k} = {v}" for k, v in project["entry-points"]["oma"].items())
    (info / "entry_points.txt").write_text(f"[oma]\n{entry_points}\n")
    options = tomllib.loads(pyproject)["tool"]["pytest"]["ini_options"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    env.pop("OMA_LOAD_PLUGINS", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-W", "error::ResourceWarning", "-W", "error::pytest.PytestUnraisableExceptionWarning",
         *(f"-o{key}={value}" for key, value in options.items()), "tests"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
