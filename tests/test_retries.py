"""Runs retry transient model-call failures on the ladder, honour Retry-After, and never retry what
cannot succeed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _builders import (
    FakeSleep,
    Recorder,
    SlowStream,
    agent_config,
    make,
    make_orchestrator,
    scripted_agent,
    start,
    three_turn_conversation,
    tool_call_turn,
)

from oma_core import (
    Agent,
    AgentConfig,
    Capabilities,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    ProviderError,
    UnsupportedContentBlockError,
    tool,
)
from oma_core.retry import RetryPolicy
from oma_core.testing import ScriptedProvider


def _unavailable() -> ProviderError:
    return ProviderError("unavailable", status_code=503)


def _record_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []

    async def fake_sleep(seconds: float, result: Any = None) -> Any:
        waits.append(seconds)
        return result

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    return waits


async def test_default_ladder_gives_up_after_two_retries() -> None:
    agent, provider = scripted_agent(
        [_unavailable(), _unavailable(), _unavailable(), "never"], retry_delay=0.01
    )
    result = await agent.run("x")
    assert not result.success and len(provider.requests) == 3
    assert isinstance(result.status.error, ProviderError)


async def test_retry_settings_most_specific_wins() -> None:
    errors = [_unavailable() for _ in range(6)]
    oma = OpenMultiAgent(max_retries=4, retry_delay=0.01)
    # AgentConfig beats the OpenMultiAgent default
    provider = ScriptedProvider([*errors, "never"])
    await oma.run_agent(AgentConfig(name="a", provider=provider, max_retries=1), "x")
    assert len(provider.requests) == 2
    # the run_agent call beats both
    provider = ScriptedProvider([*errors, "never"])
    await oma.run_agent(AgentConfig(name="a", provider=provider, max_retries=1), "x", max_retries=0)
    assert len(provider.requests) == 1
    # the OpenMultiAgent default applies when the config says nothing
    provider = ScriptedProvider([*errors, "ok"])
    result = await oma.run_agent(AgentConfig(name="a", provider=provider), "x")
    assert len(provider.requests) == 5 and not result.success


async def test_retry_backoff_multiplies_the_delay() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    provider = ScriptedProvider([_unavailable(), _unavailable(), "ok"])
    oma = make_orchestrator(retry_policy=RetryPolicy(sleep=fake_sleep, random=lambda: 1.0))
    config = AgentConfig("a", provider=provider, retry_delay=0.1, retry_backoff=3.0)
    assert (await oma.run_agent(config, "x")).success
    assert slept == pytest.approx([0.1, 0.3])
    assert len(provider.requests) == 3


def test_retry_after_ms_wins_over_retry_after() -> None:
    from oma_core.http import parse_retry_after

    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"Retry-After": "3"}) == 3.0


async def test_the_ladder_is_capped_at_30_seconds_with_equal_jitter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = _record_sleeps(monkeypatch)
    errors = [_unavailable() for _ in range(4)]
    agent, provider = scripted_agent([*errors, "ok"], max_retries=4, retry_delay=10.0)
    assert (await agent.run("x")).success
    assert len(provider.requests) == 5
    nominal = [10.0, 20.0, 30.0, 30.0]
    assert len(waits) == 4
    for wait, cap in zip(waits, nominal, strict=True):
        assert cap / 2 <= wait <= cap


async def test_a_retry_after_up_to_60_seconds_is_honoured_and_longer_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = _record_sleeps(monkeypatch)
    responses = [
        ProviderError("slow", status_code=429, retry_after=45.0),
        ProviderError("slower", status_code=429, retry_after=600.0),
        "ok",
    ]
    agent, _ = scripted_agent(responses, retry_delay=0.5)
    assert (await agent.run("x")).success
    assert waits[0] == 45.0
    assert waits[1] <= 60.0


async def test_a_retried_model_call_never_runs_a_tool_twice() -> None:
    runs: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        runs.append(n)
        return n

    agent, provider = scripted_agent(
        [tool_call_turn("count", {"n": 1}), _unavailable(), _unavailable(), "final"],
        tools=[count],
        retry_delay=0.01,
    )
    result = await agent.run("x")
    assert result.success and result.output == "final"
    assert runs == [1]
    assert len(provider.requests) == 4


async def test_a_transient_error_is_retried_on_the_ladder(host: PluginHost) -> None:
    agent, provider = make(
        host, ProviderError("busy", status_code=503), ProviderError("busy", status_code=429), "ok"
    )
    sleep = FakeSleep()
    recorder = Recorder()
    result = await start(
        agent, "hi", retry=RetryPolicy(sleep=sleep, random=lambda: 1.0), observers=(recorder,)
    )
    assert result.success and result.output == "ok"
    assert len(provider.requests) == 3
    assert sleep.waits == [0.5, 1.0]
    assert [e for e in recorder.log if e[0] == "on_retry"] == [
        ("on_retry", 1, 0.5),
        ("on_retry", 2, 1.0),
    ]


async def test_config_retry_settings_are_used_by_run(host: PluginHost) -> None:
    agent, provider = make(
        host, *[ProviderError("busy", status_code=500)] * 4, "ok", max_retries=4, retry_delay=0.0
    )
    result = await agent.run("hi")
    assert result.success and len(provider.requests) == 5


async def test_a_sane_retry_after_is_honoured(host: PluginHost) -> None:
    agent, _ = make(host, ProviderError("slow", status_code=429, retry_after=3.0), "ok")
    sleep = FakeSleep()
    await start(agent, "hi", retry=RetryPolicy(sleep=sleep))
    assert sleep.waits == [3.0]


async def test_a_stream_that_already_yielded_is_not_retried(host: PluginHost) -> None:
    provider = SlowStream(fail_after_text=ProviderError("reset", retryable=True))
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    recorder = Recorder()
    events = [e async for e in start(agent, "hi", mode="stream", observers=(recorder,))]
    assert [e.type for e in events] == ["text", "error", "done"]
    assert provider.calls == 1
    result = events[-1].data
    assert result.usage.output_tokens > 0  # the cut-short call is counted (an estimate)
    after = [e for e in recorder.log if e[0] == "after_call"]
    assert after[0][2] == "ProviderError" and after[0][3] == "partial "


async def test_a_stream_that_failed_before_output_is_retried(host: PluginHost) -> None:
    provider = SlowStream(fail_first=ProviderError("refused", retryable=True), stall=False)
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    events = [e async for e in start(agent, "hi", mode="stream")]
    assert [e.type for e in events] == ["text", "done"]
    assert events[-1].data.success
    assert provider.calls == 2 and provider.closed == 2


async def test_unsupported_content_block_is_not_retried() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    events: list[ProgressEvent] = []
    result = await make_orchestrator(on_progress=events.append).run_agent(
        agent_config(provider), three_turn_conversation(), max_retries=5
    )
    assert not result.success
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert provider.requests == []
    assert not [e for e in events if e.type == "retry"]


async def test_a_429_is_retried_exactly_max_retries_times() -> None:
    provider = ScriptedProvider([ProviderError("slow down", status_code=429)] * 4 + ["late"])
    events: list[ProgressEvent] = []
    result = await make_orchestrator(on_progress=events.append).run_agent(
        agent_config(provider), "hi", max_retries=3
    )
    assert not result.success
    assert len(provider.requests) == 4  # the call and 3 retries
    assert [e.data["attempt"] for e in events if e.type == "retry"] == [1, 2, 3]


async def test_the_retry_ladder_on_a_fake_clock() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    errors = [ProviderError("busy", status_code=503) for _ in range(5)]
    errors[3] = ProviderError("later", status_code=429, retry_after=7.0)
    provider = ScriptedProvider([*errors, "finally"])
    events: list[ProgressEvent] = []
    oma = make_orchestrator(
        on_progress=events.append,
        retry_policy=RetryPolicy(sleep=fake_sleep, random=lambda: 1.0),
    )
    result = await oma.run_agent(AgentConfig("a", provider=provider), "hi", max_retries=5)
    assert result.success and result.output == "finally"
    assert slept == [0.5, 1.0, 2.0, 7.0, 8.0]
    retries = [e for e in events if e.type == "retry"]
    assert [e.data["attempt"] for e in retries] == [1, 2, 3, 4, 5]
    assert [e.data["delay"] for e in retries] == slept
    assert all(isinstance(e.data["error"], ProviderError) for e in retries)


async def test_equal_jitter_waits_at_least_half_the_nominal_delay() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    provider = ScriptedProvider([ProviderError("busy", status_code=502)] * 3 + ["ok"])
    oma = make_orchestrator(retry_policy=RetryPolicy(sleep=fake_sleep, random=lambda: 0.0))
    await oma.run_agent(AgentConfig("a", provider=provider), "hi")
    assert slept == [0.25, 0.5]  # the default two retries, each at half its nominal wait


async def test_retry_delay_and_backoff_follow_the_most_specific_setting() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    def failing() -> ScriptedProvider:
        return ScriptedProvider([ProviderError("busy", status_code=503)] * 3)

    oma = make_orchestrator(
        retry_delay=1.0,
        retry_backoff=3.0,
        retry_policy=RetryPolicy(sleep=fake_sleep, random=lambda: 1.0),
    )
    await oma.run_agent(AgentConfig("a", provider=failing()), "hi")
    assert slept == [1.0, 3.0]
    slept.clear()
    await oma.run_agent(AgentConfig("a", provider=failing(), retry_delay=2.0), "hi")
    assert slept == [2.0, 6.0]
    slept.clear()
    config = AgentConfig("a", provider=failing(), retry_delay=2.0, retry_backoff=2.0)
    await oma.run_agent(config, "hi", retry_delay=0.1, max_retries=1)
    assert slept == [0.1]


async def test_a_non_retryable_4xx_is_tried_once_even_with_many_retries() -> None:
    provider = ScriptedProvider([ProviderError("bad", status_code=400)] * 6)
    result = await make_orchestrator().run_agent(
        AgentConfig("a", provider=provider), "hi", max_retries=5
    )
    assert result.status.code == "error"
    assert len(provider.requests) == 1


async def test_the_retry_event_arrives_as_a_long_retry_after_wait_begins() -> None:
    """With Retry-After: 30 the user hears of the retry at once, not 30 s later."""
    seen: list[ProgressEvent] = []
    heard = asyncio.Event()

    def observe(event: ProgressEvent) -> None:
        seen.append(event)
        if event.type == "retry":
            heard.set()

    busy = ProviderError("busy", status_code=429, retry_after=30.0)
    provider = ScriptedProvider([busy, "ok"])
    oma = OpenMultiAgent(on_progress=observe, plugins=PluginHost(load_entrypoints=False))
    run = asyncio.ensure_future(oma.run_agent(AgentConfig("a", provider=provider), "hi"))
    try:
        await asyncio.wait_for(heard.wait(), timeout=10)  # far less than the 30 s wait
        assert not run.done()  # still waiting: the event came as the wait began
    finally:
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(run, timeout=10)
    (retry,) = [event for event in seen if event.type == "retry"]
    assert retry.data["attempt"] == 1 and retry.data["delay"] == 30.0
    assert isinstance(retry.data["error"], ProviderError)
    assert len(provider.requests) == 1  # the second attempt never started
