"""Fixtures shared by the plugin's tests: the fake Mistral service and a provider on it.

One check applies to every async test: it fails if it leaves an async generator of ours (the
provider's, the toolkit's) to the garbage collector instead of closing it. httpx's own
generators are exempt: an early-closed httpx stream leaves them to the collector by design,
after ``response.aclose()`` has already returned the connection (the conformance kit checks
that on the server's side).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import re
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from fake_mistral import API_KEY, FakeMistral

from oma_core.toolkit import Provider, ProviderSettings

pytest_plugins = ["oma_core.testing.pytest_plugin"]


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeMistral:
    return fake_server_factory(FakeMistral)  # type: ignore[no-any-return]


@pytest.fixture
async def provider(server: FakeMistral) -> AsyncIterator[Provider]:
    from oma_mistral import MistralProvider

    built = MistralProvider(ProviderSettings(base_url=server.base_url, api_key=API_KEY))
    yield built
    await built.aclose()


_HTTP_LIBRARY = re.compile(r"[/\\](httpx|httpcore)[/\\]")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Run every async test inside ``_generators_closed``."""
    test = getattr(item, "obj", None)
    if not inspect.iscoroutinefunction(test):
        return (yield)

    @functools.wraps(test)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        with _generators_closed():
            return await test(*args, **kwargs)

    item.obj = checked  # type: ignore[attr-defined]
    try:
        return (yield)
    finally:
        item.obj = test  # type: ignore[attr-defined]


@contextlib.contextmanager
def _generators_closed() -> Iterator[None]:
    """Fail if an async generator first iterated inside the block is left to the garbage
    collector instead of being closed (asyncio would close it late, in a task of its own,
    and its connection would stay open until then)."""
    hooks = sys.get_asyncgen_hooks()
    leaked: list[str] = []

    def finalizer(generator: Any) -> None:
        if not _HTTP_LIBRARY.search(generator.ag_code.co_filename):
            leaked.append(generator.__qualname__)
        if hooks.finalizer is not None:
            hooks.finalizer(generator)

    sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=finalizer)
    try:
        yield
        gc.collect()
    finally:
        sys.set_asyncgen_hooks(firstiter=hooks.firstiter, finalizer=hooks.finalizer)
    assert not leaked, f"async generators left to the garbage collector: {leaked}"
