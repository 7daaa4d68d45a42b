"""Fixtures shared by the plugin's tests: the fake servers LiteLLM is pointed at; and the
core's check that no async generator is left to the garbage collector
(``oma_core.testing.closed_generators``), for this plugin's own generators (LiteLLM and the
OpenAI SDK it drives leave theirs by design; the check exempts installed libraries)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions

pytest_plugins = [
    "oma_core.testing.hypothesis_timing",
    "oma_core.testing.pytest_plugin",
    "oma_core.testing.closed_generators",
]


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeChatCompletions:
    return fake_server_factory(FakeChatCompletions)  # type: ignore[no-any-return]
