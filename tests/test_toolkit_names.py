"""The lazy re-export modules — ``oma_core``, ``oma_core.toolkit`` and ``oma_core.http`` —
each keep three lists of their names by hand: the lazy ``_EXPORTS`` table, ``__all__``, and
the imports type checkers see. They must agree, name for name and module for module; and
every name must load from the module that defines it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

FACADES = ("oma_core", "oma_core.toolkit", "oma_core.http")


def _type_checking_imports(module: ModuleType) -> dict[str, str]:
    """name -> module of the ``if TYPE_CHECKING:`` imports, relative to the facade's package
    without the first dot (``_x`` for ``from ._x``, ``._x`` for ``from .._x``)."""
    source = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in source.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom), ast.unparse(statement)
                if statement.module == "typing":
                    continue
                for alias in statement.names:
                    up = "." * (statement.level - 1)
                    found[alias.asname or alias.name] = up + (statement.module or "")
    return found


@pytest.mark.parametrize("name", FACADES)
def test_all_lists_exactly_the_lazy_exports(name: str) -> None:
    module = importlib.import_module(name)
    assert len(module.__all__) == len(set(module.__all__)), "a name is listed twice"
    assert set(module.__all__) - {"__version__"} == set(module._EXPORTS)


@pytest.mark.parametrize("name", FACADES)
def test_type_checkers_see_each_name_from_the_module_it_loads_from(name: str) -> None:
    module = importlib.import_module(name)
    assert _type_checking_imports(module) == module._EXPORTS


@pytest.mark.parametrize("name", FACADES)
def test_every_name_loads_from_its_defining_module(name: str) -> None:
    module = importlib.import_module(name)
    for exported, home in module._EXPORTS.items():
        defining = importlib.import_module(f".{home}", module.__package__)
        assert getattr(module, exported) is getattr(defining, exported), exported
