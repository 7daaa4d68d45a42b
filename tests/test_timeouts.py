"""Run and call timeouts end a run with status timeout."""

from __future__ import annotations

from _builders import FakeSleep, SlowStream, agent_config, make, make_orchestrator, start

from oma_core import (
    Agent,
    AgentConfig,
    OpenMultiAgent,
    PluginHost,
)
from oma_core.errors import ProviderError, RunTimeoutError
from oma_core.retry import RetryPolicy
from oma_core.testing import Delayed, ScriptedProvider


async def test_a_run_timeout_ends_with_status_timeout() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late")])
    result = await OpenMultiAgent().run_agent(
        AgentConfig(name="v", provider=provider), "x", timeout=0.1
    )
    # The 2 s reply never arrived: the run ended at its limit (no wall-clock bound: load-proof).
    assert not result.success and result.status.code == "timeout"
    assert (result.status.error.scope, result.status.error.timeout) == ("run", 0.1)
    assert result.output == ""

    provider = ScriptedProvider([Delayed(5, "late")])
    result = await make_orchestrator().run_agent(agent_config(provider), "hi", timeout=0.05)
    assert result.status.code == "timeout"


async def test_a_call_timeout_ends_with_status_timeout() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late"), Delayed(2.0, "late"), Delayed(2.0, "x")])
    result = await OpenMultiAgent().run_agent(
        AgentConfig(name="v", provider=provider), "x", call_timeout=0.1, max_retries=0
    )
    assert result.status.code == "timeout"
    assert (result.status.error.scope, result.status.error.timeout) == ("call", 0.1)
    assert len(provider.requests) == 1 and result.output == ""

    provider = ScriptedProvider([Delayed(5, "late")] * 3)
    result = await make_orchestrator().run_agent(
        agent_config(provider), "hi", call_timeout=0.02, max_retries=1
    )
    assert result.status.code == "timeout"
    assert len(provider.requests) == 2


async def test_an_orchestrator_timeout_applies_to_its_runs() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late")])
    result = await OpenMultiAgent(timeout=0.1).run_agent(
        AgentConfig(name="v", provider=provider), "x"
    )
    assert result.status.code == "timeout"


async def test_a_wait_past_the_run_deadline_fails_at_once(host: PluginHost) -> None:
    agent, provider = make(host, ProviderError("slow", status_code=429, retry_after=30.0), "ok")
    sleep = FakeSleep()
    result = await start(agent, "hi", retry=RetryPolicy(sleep=sleep), timeout=5.0)
    assert result.status.code == "error"
    assert sleep.waits == [] and len(provider.requests) == 1


async def test_call_timeout_is_retried_then_ends_as_timeout(host: PluginHost) -> None:
    agent, provider = make(host, *[Delayed(5, "late")] * 3)
    result = await start(agent, "hi", call_timeout=0.02)
    assert result.status.code == "timeout"
    error = result.status.error
    assert isinstance(error, RunTimeoutError) and error.scope == "call"
    assert len(provider.requests) == 3


async def test_call_timeout_recovers_when_a_retry_is_fast(host: PluginHost) -> None:
    agent, _ = make(host, Delayed(5, "late"), "fast")
    result = await start(agent, "hi", call_timeout=0.05)
    assert result.success and result.output == "fast"


async def test_run_timeout_ends_the_run_as_timeout(host: PluginHost) -> None:
    agent, provider = make(host, Delayed(5, "late"), "never")
    result = await start(agent, "hi", timeout=0.05)
    assert result.status.code == "timeout"
    error = result.status.error
    assert isinstance(error, RunTimeoutError) and error.scope == "run"
    assert len(provider.requests) == 1


async def test_run_timeout_closes_the_provider_stream(host: PluginHost) -> None:
    provider = SlowStream()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    events = [e async for e in start(agent, "hi", mode="stream", timeout=0.05)]
    assert [e.type for e in events] == ["text", "error", "done"]
    assert events[-1].data.status.code == "timeout"
    assert provider.closed == 1


async def test_a_stalled_stream_past_call_timeout_after_output_ends_as_timeout(
    host: PluginHost,
) -> None:
    provider = SlowStream()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    events = [e async for e in start(agent, "hi", mode="stream", call_timeout=0.02)]
    result = events[-1].data
    assert result.status.code == "timeout"
    assert isinstance(result.status.error, RunTimeoutError)
    assert result.status.error.scope == "call"
    assert provider.calls == 1 and provider.closed == 1  # output was shown: no retry
