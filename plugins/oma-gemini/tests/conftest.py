"""Fixtures shared by the plugin's tests: the fake Gemini API and a provider on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini

from oma_core.toolkit import Provider, ProviderSettings

pytest_plugins = ["oma_core.testing.pytest_plugin"]


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeGemini:
    return fake_server_factory(FakeGemini)  # type: ignore[no-any-return]


@pytest.fixture
async def provider(server: FakeGemini) -> AsyncIterator[Provider]:
    from oma_gemini import create_provider

    built = create_provider(ProviderSettings(base_url=server.base_url, api_key=API_KEY))
    yield built
    await built.aclose()
