"""Cancelling a run propagates CancelledError and closes what the run opened."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _builders import (
    ClosingProvider,
    SlowStream,
    agent_config,
    make,
    make_orchestrator,
    scripted_agent,
    start,
)
from _waiting import until

from oma_core import (
    Agent,
    AgentConfig,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    StreamEvent,
    hookimpl,
)
from oma_core.errors import ProviderError
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    TextDelta,
)
from oma_core.retry import RetryPolicy
from oma_core.testing import Delayed, ScriptedProvider


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


class _Probe:
    """A plugin offering a provider whose instances record being closed."""

    def __init__(self) -> None:
        self.made: list[ScriptedProvider] = []

    @hookimpl
    def oma_register_providers(self) -> list[Any]:
        from oma_core import Capabilities, ProviderSpec

        def factory(settings: Any) -> ScriptedProvider:
            provider = ScriptedProvider(list(settings.options.get("responses", ())))
            self.made.append(provider)
            return provider

        return [ProviderSpec("probe", "Probe", factory, Capabilities.everything())]


async def test_cancelling_run_propagates_cancelled_error(host: PluginHost) -> None:
    agent, provider = scripted_agent([Delayed(30, "late")])
    task = asyncio.ensure_future(agent.run("x"))
    await until(lambda: provider.requests)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    agent, provider = make(host, Delayed(30, "late"))
    task = asyncio.create_task(agent.run("hi"))
    await until(lambda: provider.requests)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_run_agent_propagates_cancelled_error() -> None:
    provider = ScriptedProvider([Delayed(30, "late")])
    task = asyncio.ensure_future(
        OpenMultiAgent().run_agent(AgentConfig(name="v", provider=provider), "x")
    )
    await until(lambda: provider.requests)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_a_stream_consumer_propagates_cancelled_error() -> None:
    agent, provider = scripted_agent([Delayed(30, "late")])

    async def consume() -> None:
        async for _ in agent.stream("x"):
            pass

    task = asyncio.ensure_future(consume())
    await until(lambda: provider.requests)
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
    await asyncio.wait_for(provider.started.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed


async def test_cancelling_a_stream_closes_the_provider_stream(host: PluginHost) -> None:
    provider = ClosingProvider(chunks=10_000)
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    seen: list[StreamEvent] = []
    first = asyncio.Event()

    async def consume() -> None:
        async with agent.stream("hi") as events:
            async for event in events:
                seen.append(event)
                first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed == 1


async def test_cancelling_a_run_during_backoff_returns_at_once(host: PluginHost) -> None:
    agent, provider = make(host, ProviderError("busy", status_code=503), "ok")
    task = asyncio.create_task(start(agent, "hi", retry=RetryPolicy(delay=30.0)))
    await until(lambda: provider.requests)
    loop = asyncio.get_running_loop()
    began = loop.time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert loop.time() - began < 10  # not the 30 s back-off (bounded loosely: loaded machines)

    provider = ScriptedProvider([ProviderError("busy", status_code=503), "late"])
    oma = make_orchestrator(retry_policy=RetryPolicy(delay=30.0, random=lambda: 1.0))
    task = asyncio.ensure_future(oma.run_agent(AgentConfig("a", provider=provider), "hi"))
    await until(lambda: provider.requests)
    loop = asyncio.get_running_loop()
    started = loop.time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert loop.time() - started < 10  # not the 30 s back-off
    assert len(provider.requests) == 1


async def test_outside_cancellation_propagates_after_closing_the_stream(host: PluginHost) -> None:
    provider = SlowStream()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in agent.stream("hi"):
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed == 1


async def test_cancelling_run_agent_propagates_and_leaks_no_task() -> None:
    async def slow_observer(event: ProgressEvent) -> None:
        await asyncio.sleep(10)

    before = asyncio.all_tasks()
    oma = make_orchestrator(on_progress=slow_observer)
    provider = ScriptedProvider([Delayed(30, "late")])
    task = asyncio.ensure_future(oma.run_agent(agent_config(provider), "hi"))
    await until(lambda: provider.requests)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == before


async def test_an_enclosing_timeout_cancels_cleanly() -> None:
    before = asyncio.all_tasks()
    provider = ScriptedProvider([Delayed(60, "late")])  # outlasts the timeout on any machine
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.02):
            await make_orchestrator().run_agent(agent_config(provider), "hi")
    assert asyncio.all_tasks() == before


async def test_a_cancelled_run_closes_the_provider_it_created() -> None:
    probe = _Probe()
    host = PluginHost(load_entrypoints=False)
    host.register(probe, name="probe")
    oma = make_orchestrator(plugins=host)
    config = AgentConfig("a", provider="probe", provider_options={"responses": [Delayed(30, "x")]})
    task = asyncio.ensure_future(oma.run_agent(config, "hi"))
    await until(lambda: probe.made and probe.made[0].requests)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (made,) = probe.made
    assert made.closed


async def test_a_finished_run_closes_the_provider_it_created() -> None:
    probe = _Probe()
    host = PluginHost(load_entrypoints=False)
    host.register(probe, name="probe")
    config = AgentConfig("a", provider="probe", provider_options={"responses": ["ok"]})
    result = await make_orchestrator(plugins=host).run_agent(config, "hi")
    assert result.success
    assert [p.closed for p in probe.made] == [True]
