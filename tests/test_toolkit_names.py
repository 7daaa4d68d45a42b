"""``oma_core.toolkit`` keeps three lists of its names by hand — the lazy ``_EXPORTS`` table,
``__all__``, and the imports type checkers see — which must agree, name for name and module
for module; and every name must load."""

from __future__ import annotations

import ast
from pathlib import Path

import oma_core.toolkit as toolkit

SOURCE = ast.parse(Path(toolkit.__file__).read_text())


def _type_checking_imports() -> dict[str, str]:
    """name -> module (relative, without the dot) of the ``if TYPE_CHECKING:`` imports."""
    found: dict[str, str] = {}
    for node in SOURCE.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                for alias in statement.names:
                    found[alias.asname or alias.name] = statement.module or ""
    return found


def test_all_lists_exactly_the_lazy_exports_and_hookimpl() -> None:
    assert len(toolkit.__all__) == len(set(toolkit.__all__)), "a name is listed twice"
    assert set(toolkit.__all__) == {*toolkit._EXPORTS, "hookimpl"}


def test_type_checkers_see_each_name_from_the_module_it_loads_from() -> None:
    seen = _type_checking_imports()
    assert set(seen) == set(toolkit.__all__)
    assert {name: seen[name] for name in toolkit._EXPORTS} == toolkit._EXPORTS
    assert seen["hookimpl"] == ""  # ``from . import hookimpl``


def test_every_name_loads() -> None:
    for name in toolkit.__all__:
        assert getattr(toolkit, name) is not None, name
