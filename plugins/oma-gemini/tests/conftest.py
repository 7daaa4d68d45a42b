"""Fixtures shared by the plugin's tests: the fake Gemini API and a provider on it.

One check applies to every async test: it fails if it leaves an async generator of ours (the
provider's, the toolkit's) to the garbage collector instead of closing it. httpx's own
generators are exempt: an early-closed httpx stream leaves them to the collector by design,
after ``response.aclose()`` has already returned the connection (the conformance kit checks
that on the server's side).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini

from oma_core.toolkit import Provider, ProviderSettings

pytest_plugins = [
    "oma_core.testing.hypothesis_timing",
    "oma_core.testing.pytest_plugin",
    "oma_core.testing.closed_generators",
]


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeGemini:
    return fake_server_factory(FakeGemini)  # type: ignore[no-any-return]


@pytest.fixture
async def provider(server: FakeGemini) -> AsyncIterator[Provider]:
    from oma_gemini import create_provider

    built = create_provider(ProviderSettings(base_url=server.base_url, api_key=API_KEY))
    yield built
    await built.aclose()
