"""Shared fixtures: fake Chat Completions servers and providers pointed at them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from fake_openai import FakeChatCompletions
from oma_openai.provider import OpenAIChatProvider
from openai_builders import provider_for


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


@pytest.fixture
async def openai_provider(server: FakeChatCompletions) -> AsyncIterator[OpenAIChatProvider]:
    provider = provider_for(server)
    yield provider
    await provider.aclose()
