"""Fixtures shared by the plugin's tests: the fake servers LiteLLM is pointed at."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions

pytest_plugins = ["oma_core.testing.pytest_plugin"]


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeChatCompletions:
    return fake_server_factory(FakeChatCompletions)  # type: ignore[no-any-return]
