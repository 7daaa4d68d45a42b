"""Fixtures shared by the plugin's tests: the fake Messages API and providers pointed at it
(a provider once per transport, so the wire, reply and fault tests run on each)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic
from oma_anthropic.provider import TRANSPORTS

from oma_core.toolkit import ProviderSettings

# the fake-server kit; and no async generator of ours left to the garbage collector
pytest_plugins = [
    "oma_core.testing.hypothesis_timing",
    "oma_core.testing.pytest_plugin",
    "oma_core.testing.closed_generators",
]


@pytest.fixture
def server(fake_server_factory: Callable[..., Any]) -> FakeAnthropic:
    return fake_server_factory(FakeAnthropic, api_key="test-key")  # type: ignore[no-any-return]


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """Each transport the plugin offers (``provider_options["transport"]``)."""
    return str(request.param)


@pytest.fixture
async def provider(server: FakeAnthropic, transport: str) -> AsyncIterator[Any]:
    """A provider for the fake server, once per transport."""
    from oma_anthropic import create_provider

    settings = ProviderSettings(
        base_url=server.url, api_key="test-key", options={"transport": transport}
    )
    built = create_provider(settings)
    yield built
    await built.aclose()
    assert await server.async_wait_idle(), "a connection was left open"
