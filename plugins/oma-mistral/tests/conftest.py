"""Fixtures shared by the plugin's tests: the fake Mistral service and a provider on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
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
