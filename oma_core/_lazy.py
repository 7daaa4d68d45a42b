"""Lazy re-exports: a facade module names its exports, and each is imported on first access.

``oma_core``, ``oma_core.toolkit`` and ``oma_core.http`` are facades over private modules;
importing one must stay cheap (no SDK, no HTTP client), so their names are resolved through a
module ``__getattr__`` (PEP 562) built here, once for the three.
"""

from __future__ import annotations

import importlib

# Not from typing: ``import oma_core`` loads neither typing nor collections.abc.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping
    from typing import Any


def lazy_exports(
    namespace: MutableMapping[str, Any], exports: Mapping[str, str], names: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the facade whose ``globals()`` is ``namespace``.

    ``exports`` maps each name to the submodule (relative to the facade's package) defining it;
    ``names`` is the facade's ``__all__``. A resolved name is stored in ``namespace``, so later
    lookups do not come back here.
    """
    facade = namespace["__name__"]
    package = namespace["__package__"]

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {facade!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return names

    return getattr_, dir_
