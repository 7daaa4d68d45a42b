"""Docs and tests stay honest: every hook is documented and exercised, every command documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oma_core import hookspecs
from oma_core.cli import CAPABILITY_COLUMNS, cli

ROOT = Path(__file__).parent.parent
HOOKS = sorted(name for name in vars(hookspecs) if name.startswith("oma_"))
# Tests that only list the hooks do not count as exercising them.
LISTING_TESTS = {"test_hookspecs.py", "test_docs.py"}


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
