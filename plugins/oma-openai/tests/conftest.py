"""Shared fixtures: fake Chat Completions servers and providers pointed at them (a provider
once per transport, so the mapping, streaming and fault tests run on each)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from fake_openai import FakeChatCompletions
from oma_openai.provider import TRANSPORTS, OpenAIChatProvider
from openai_builders import provider_for

# no async generator of ours left to the garbage collector
pytest_plugins = ["oma_core.testing.hypothesis_timing", "oma_core.testing.closed_generators"]


@pytest.fixture
def server() -> Iterator[FakeChatCompletions]:
    """A strict server, like OpenAI itself."""
    with FakeChatCompletions(mode="strict") as srv:
        yield srv  # type: ignore[misc]


@pytest.fixture
def compatible_server() -> Iterator[FakeChatCompletions]:
    """A compatible server, like MiniMax (accepts video_url and reasoning_content)."""
    with FakeChatCompletions(mode="compatible") as srv:
        yield srv  # type: ignore[misc]


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest) -> str:
    """Each transport the plugin offers (``provider_options["transport"]``)."""
    return str(request.param)


@pytest.fixture
async def openai_provider(
    server: FakeChatCompletions, transport: str
) -> AsyncIterator[OpenAIChatProvider]:
    """A provider for the strict server, once per transport."""
    provider = provider_for(server, transport=transport)
    yield provider
    await provider.aclose()
    assert await server.async_wait_idle(timeout=30), "a connection was left open"
