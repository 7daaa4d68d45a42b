"""An opt-in pytest plugin: every async test fails if it leaves an async generator to the
garbage collector instead of closing it. Enable it beside the main one::

    pytest_plugins = ["oma_core.testing.pytest_plugin", "oma_core.testing.closed_generators"]

See ``oma_core.testing.pytest_plugin.generators_closed`` for the check and what it exempts.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from .pytest_plugin import generators_closed

__all__ = ["pytest_runtest_call"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Every async test runs inside ``generators_closed``."""
    test = getattr(item, "obj", None)
    if not inspect.iscoroutinefunction(test):
        return (yield)

    @functools.wraps(test)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        with generators_closed():
            return await test(*args, **kwargs)

    item.obj = checked  # type: ignore[attr-defined]
    try:
        return (yield)
    finally:
        item.obj = test  # type: ignore[attr-defined]
