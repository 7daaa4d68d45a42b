"""Fixtures shared by the plugin's tests: the fake servers LiteLLM is pointed at; and the
core's check that no async generator is left to the garbage collector
(``oma_core.testing.closed_generators``), for this plugin's own generators. LiteLLM and the
OpenAI SDK it drives leave theirs by design (LiteLLM's stream wrapper takes one chunk from a
fresh ``async for`` over the SDK's stream per chunk), so while this folder's tests run the
check exempts generators from those libraries, as it exempts httpx's."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions

import oma_core.testing.closed_generators as closed_generators
from oma_core.testing.pytest_plugin import generators_closed

pytest_plugins = ["oma_core.testing.pytest_plugin", "oma_core.testing.closed_generators"]

#: Whose async generators an early close leaves to the collector by design.
EXEMPT = re.compile(r"[/\\](httpx|httpcore|litellm|openai|aiohttp)[/\\]")


@pytest.fixture(autouse=True)
def third_party_generators_exempt(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(
        closed_generators, "generators_closed", functools.partial(generators_closed, EXEMPT)
    )
    yield


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeChatCompletions:
    return fake_server_factory(FakeChatCompletions)  # type: ignore[no-any-return]
