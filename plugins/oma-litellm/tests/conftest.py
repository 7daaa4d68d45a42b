"""Fixtures shared by the plugin's tests: the fake servers LiteLLM is pointed at; and the
core's check that no async generator is left to the garbage collector — for this plugin's
own generators. LiteLLM and the OpenAI SDK it drives leave theirs by design (LiteLLM's
stream wrapper takes one chunk from a fresh ``async for`` over the SDK's stream per chunk),
so generators from those libraries are exempt here."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions

from oma_core.testing.pytest_plugin import generators_closed

pytest_plugins = ["oma_core.testing.pytest_plugin"]

#: Whose async generators an early close leaves to the collector by design.
EXEMPT = re.compile(r"[/\\](httpx|httpcore|litellm|openai|aiohttp)[/\\]")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Every async test runs inside ``generators_closed`` (the third parties exempt)."""
    test = getattr(item, "obj", None)
    if not inspect.iscoroutinefunction(test):
        return (yield)

    @functools.wraps(test)
    async def checked(*args: Any, **kwargs: Any) -> Any:
        with generators_closed(EXEMPT):
            return await test(*args, **kwargs)

    item.obj = checked  # type: ignore[attr-defined]
    try:
        return (yield)
    finally:
        item.obj = test  # type: ignore[attr-defined]


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeChatCompletions:
    return fake_server_factory(FakeChatCompletions)  # type: ignore[no-any-return]
