"""Cancelling a run propagates CancelledError and closes what the run opened."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from oma_core import (
    Agent,
    AgentConfig,
    OpenMultiAgent,
    PluginHost,
)
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    TextDelta,
)
from oma_core.testing import Delayed, ScriptedProvider


def _agent(
    responses: list[Any], host: PluginHost | None = None, **config: Any
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="a", provider=provider, **config), plugins=host)
    return agent, provider


class _HangingProvider:
    """Streams one delta, then hangs; records whether its stream was closed."""

    name = "hanging"
    display_name = "Hanging"

    def __init__(self) -> None:
        self.closed = False
        self.started = asyncio.Event()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        try:
            self.started.set()
            await asyncio.sleep(30)
            raise AssertionError("not cancelled")
        finally:
            self.closed = True

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        try:
            yield TextDelta("partial")
            self.started.set()
            await asyncio.sleep(30)
            raise AssertionError("not cancelled")
        finally:
            self.closed = True

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        return None


async def test_cancelling_run_propagates_cancelled_error() -> None:
    agent, _ = _agent([Delayed(5.0, "late")])
    task = asyncio.ensure_future(agent.run("x"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_run_agent_propagates_cancelled_error() -> None:
    provider = ScriptedProvider([Delayed(5.0, "late")])
    task = asyncio.ensure_future(
        OpenMultiAgent().run_agent(AgentConfig(name="v", provider=provider), "x")
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_a_stream_consumer_propagates_cancelled_error() -> None:
    agent, _ = _agent([Delayed(5.0, "late")])

    async def consume() -> None:
        async for _ in agent.stream("x"):
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("how", ["run", "stream", "run_agent"])
async def test_cancellation_closes_the_provider_call_then_propagates(how: str) -> None:
    provider = _HangingProvider()
    config = AgentConfig(name="h", provider=provider)

    async def consume() -> Any:
        if how == "run":
            return await Agent(config).run("x")
        if how == "run_agent":
            return await OpenMultiAgent().run_agent(config, "x")
        async with Agent(config).stream("x") as events:
            async for _ in events:
                pass
        return None

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(provider.started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed
