"""Fixtures shared by the plugin's tests: the fake Messages API and providers pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic

from oma_core import ProviderSettings

pytest_plugins = ["oma_core.testing.pytest_plugin"]


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeAnthropic:
    return fake_server_factory(FakeAnthropic, api_key="test-key")  # type: ignore[no-any-return]


@pytest.fixture
async def provider(server: FakeAnthropic) -> AsyncIterator[Any]:
    from oma_anthropic import create_provider

    built = create_provider(ProviderSettings(base_url=server.url, api_key="test-key"))
    yield built
    await built.aclose()
