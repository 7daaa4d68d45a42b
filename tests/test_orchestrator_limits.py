"""run_agent end to end: budgets charged for failed and cut-short calls, the retry ladder on a
fake clock, settings precedence, cancellation, and progress delivery details."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from oma_core import (
    AgentConfig,
    Budget,
    InvalidMessageError,
    LLMMessage,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    ProgressEvent,
    ProviderError,
    RetryPolicy,
    TextBlock,
    estimate_tokens,
    hookimpl,
)
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderRequest, ProviderResponse, TextDelta, Usage
from oma_core.testing import Delayed, ScriptedProvider

PROMPT = "p" * 400  # 100 tokens by the estimate
SYSTEM = "s" * 40  # 10 tokens


async def _no_sleep(seconds: float) -> None:
    return None


def _oma(**kwargs: Any) -> OpenMultiAgent:
    kwargs.setdefault("plugins", PluginHost(load_entrypoints=False))
    kwargs.setdefault("retry_policy", RetryPolicy(sleep=_no_sleep))
    return OpenMultiAgent(**kwargs)


def _input_estimate() -> int:
    return estimate_tokens([{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]) + 10


class _StreamOnly:
    """A provider with ``stream`` only, whose stream breaks after some text."""

    name = "cut"
    display_name = "Cut"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        self.calls += 1
        yield TextDelta("x" * 200)
        raise ProviderError("connection dropped mid-stream", retryable=False)


class _Garbage:
    """A provider answering with usage counts that are negative."""

    name = "garbage"

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        usage = Usage(-50, -3)
        return ProviderResponse(LLMMessage("assistant", (TextBlock("ok"),)), usage, "end_turn")


# -- budgets: what a failed or cut-short call costs ---------------------------------------------


async def test_a_call_failing_at_the_provider_is_charged_its_input_never_zero() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([ProviderError("upstream broke", status_code=500)])
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    result = await _oma().run_agent(config, PROMPT, budget=budget, max_retries=0)
    assert result.status.code == "error"
    assert budget.used_tokens == _input_estimate()


async def test_every_failed_attempt_is_charged() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([ProviderError("reset", retryable=True)] * 3)
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    await _oma().run_agent(config, PROMPT, budget=budget, max_retries=2)
    assert len(provider.requests) == 3
    assert budget.used_tokens == 3 * _input_estimate()


async def test_a_call_cut_short_by_call_timeout_is_charged() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([Delayed(5, "late")])
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    result = await _oma().run_agent(config, PROMPT, budget=budget, call_timeout=0.02, max_retries=0)
    assert result.status.code == "timeout"
    assert budget.used_tokens >= _input_estimate()


async def test_a_stream_cut_short_inside_run_agent_is_charged_never_zero() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = _StreamOnly()
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    result = await _oma().run_agent(config, PROMPT, budget=budget)
    assert result.status.code == "error"
    assert provider.calls == 1
    assert budget.used_tokens >= _input_estimate()


async def test_a_call_refused_with_a_4xx_costs_nothing() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([ProviderError("slow down", status_code=429)] * 3)
    await _oma().run_agent(AgentConfig("a", provider=provider), PROMPT, budget=budget)
    assert len(provider.requests) == 3
    assert budget.used_tokens == 0


async def test_a_run_cancelled_mid_call_charges_the_shared_budget() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([Delayed(10, "late")])
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    task = asyncio.ensure_future(_oma().run_agent(config, PROMPT, budget=budget))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert budget.used_tokens == _input_estimate()


async def test_a_run_cancelled_between_calls_is_not_charged_twice() -> None:
    budget = Budget(max_tokens=1_000_000)
    gate = asyncio.Event()

    async def sleep_forever(seconds: float) -> None:
        gate.set()
        await asyncio.sleep(10)

    provider = ScriptedProvider([ProviderError("busy", status_code=503), "late"])
    oma = _oma(retry_policy=RetryPolicy(sleep=sleep_forever))
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    task = asyncio.ensure_future(oma.run_agent(config, PROMPT, budget=budget))
    await asyncio.wait_for(gate.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert budget.used_tokens == _input_estimate()  # the failed attempt, once


async def test_negative_usage_never_disables_the_budget() -> None:
    budget = Budget(max_tokens=1_000_000)
    result = await _oma().run_agent(AgentConfig("a", provider=_Garbage()), PROMPT, budget=budget)
    assert result.success
    assert budget.used_tokens >= 100


async def test_a_budget_stop_reports_the_event_and_keeps_usage_so_far() -> None:
    tool_turn = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "missing", "input": {}}],
    }
    provider = ScriptedProvider([tool_turn, "never"])
    events: list[ProgressEvent] = []
    budget = Budget(max_tokens=50)
    result = await _oma(on_progress=events.append).run_agent(
        AgentConfig("a", provider=provider), PROMPT, budget=budget
    )
    assert result.status.code == "budget_exhausted"
    assert result.usage.total_tokens == budget.used_tokens > 50
    (stop,) = [e for e in events if e.type == "budget_exceeded"]
    assert stop.data == {"kind": "tokens", "limit": 50, "used": budget.used_tokens}
    assert [e.type for e in events][-2:] == ["error", "agent_complete"]


async def test_per_run_caps_do_not_leak_between_runs() -> None:
    oma = _oma(max_token_budget=500)
    for _ in range(3):
        result = await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), PROMPT)
        assert result.success


# -- retries --------------------------------------------------------------------------------------


async def test_the_retry_ladder_on_a_fake_clock() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    errors = [ProviderError("busy", status_code=503) for _ in range(5)]
    errors[3] = ProviderError("later", status_code=429, retry_after=7.0)
    provider = ScriptedProvider([*errors, "finally"])
    events: list[ProgressEvent] = []
    oma = _oma(
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
    oma = _oma(retry_policy=RetryPolicy(sleep=fake_sleep, random=lambda: 0.0))
    await oma.run_agent(AgentConfig("a", provider=provider), "hi")
    assert slept == [0.25, 0.5]  # the default two retries, each at half its nominal wait


async def test_retry_delay_and_backoff_follow_the_most_specific_setting() -> None:
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    def failing() -> ScriptedProvider:
        return ScriptedProvider([ProviderError("busy", status_code=503)] * 3)

    oma = _oma(
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
    result = await _oma().run_agent(AgentConfig("a", provider=provider), "hi", max_retries=5)
    assert result.status.code == "error"
    assert len(provider.requests) == 1


async def test_cancelling_during_the_back_off_returns_at_once() -> None:
    provider = ScriptedProvider([ProviderError("busy", status_code=503), "late"])
    oma = _oma(retry_policy=RetryPolicy(delay=30.0, random=lambda: 1.0))
    task = asyncio.ensure_future(oma.run_agent(AgentConfig("a", provider=provider), "hi"))
    await asyncio.sleep(0.05)
    loop = asyncio.get_running_loop()
    started = loop.time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert loop.time() - started < 1.0
    assert len(provider.requests) == 1


# -- input and progress delivery ---------------------------------------------------------------


def test_run_agent_is_a_plain_method_that_checks_before_returning() -> None:
    oma = _oma(evaluation=OnlineEvaluationConfig([lambda case: 1.0]))
    config = AgentConfig("a", provider=ScriptedProvider(["x"]))
    with pytest.raises(InvalidMessageError, match=r"messages\[0\]"):
        oma.run_agent(config, [{"role": "user", "content": "not a list"}])  # no loop needed
    coroutine = oma.run_agent(config, "fine")
    assert asyncio.iscoroutine(coroutine)
    coroutine.close()
    assert oma.evaluation.stats().sampled == 0


async def test_invalid_input_starts_no_span() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    oma = _oma(tracer_provider=tracer_provider)
    with pytest.raises(InvalidMessageError):
        oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["x"])), [{"role": "robot"}])
    assert exporter.get_finished_spans() == ()


async def test_sync_observers_see_agent_start_before_the_provider_is_called() -> None:
    order: list[str] = []

    class Recording(ScriptedProvider):
        async def complete(self, request: ProviderRequest) -> ProviderResponse:
            order.append("provider")
            return await super().complete(request)

    await _oma(on_progress=lambda event: order.append(event.type)).run_agent(
        AgentConfig("a", provider=Recording(["ok"])), "hi"
    )
    assert order == ["agent_start", "provider", "agent_complete"]


async def test_each_observer_gets_its_own_copy_of_the_event() -> None:
    seen: list[dict[str, Any]] = []

    def vandal(event: ProgressEvent) -> None:
        event.data["prompt"] = "changed"
        event.data["extra"] = True

    class Plugin:
        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            seen.append(dict(event.data))

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="watcher")
    provider = ScriptedProvider(["ok"])
    await _oma(on_progress=vandal, plugins=host).run_agent(
        AgentConfig("a", provider=provider), "hi"
    )
    assert seen[0] == {"prompt": "hi"}
    assert provider.text_of(0) == "hi"


async def test_observers_registered_after_the_first_run_are_picked_up() -> None:
    seen: list[str] = []

    class Plugin:
        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            seen.append(event.type)

    host = PluginHost(load_entrypoints=False)
    oma = _oma(plugins=host)
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    host.register(Plugin(), name="late")
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    assert seen == ["agent_start", "agent_complete"]
    host.unregister(name="late")
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    assert seen == ["agent_start", "agent_complete"]


async def test_async_and_sync_observers_all_finish_before_run_agent_returns() -> None:
    seen: list[tuple[str, str]] = []

    async def slow(event: ProgressEvent) -> None:
        await asyncio.sleep(0.01)
        seen.append(("async", event.type))

    class Plugin:
        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            seen.append(("sync", event.type))

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="sync")
    oma = _oma(on_progress=slow, plugins=host)
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    assert sorted(seen) == sorted(
        [
            ("async", "agent_start"),
            ("async", "agent_complete"),
            ("sync", "agent_start"),
            ("sync", "agent_complete"),
        ]
    )
    assert oma.progress_stats().delivered == 4


async def test_agent_complete_carries_the_outcome() -> None:
    events: list[ProgressEvent] = []
    result = await _oma(on_progress=events.append).run_agent(
        AgentConfig("a", provider=ScriptedProvider(["fine"])), "hi", run_id="r1"
    )
    complete = events[-1]
    assert complete.type == "agent_complete" and complete.run_id == "r1"
    assert complete.data == {
        "success": True,
        "output": "fine",
        "usage": result.usage,
        "status": "ok",
    }
    assert not math.isnan(result.usage.total_tokens)


# -- cancellation closes what the run opened ----------------------------------------------------


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


async def test_a_cancelled_run_closes_the_provider_it_created() -> None:
    probe = _Probe()
    host = PluginHost(load_entrypoints=False)
    host.register(probe, name="probe")
    oma = _oma(plugins=host)
    config = AgentConfig("a", provider="probe", provider_options={"responses": [Delayed(10, "x")]})
    task = asyncio.ensure_future(oma.run_agent(config, "hi"))
    await asyncio.sleep(0.02)
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
    result = await _oma(plugins=host).run_agent(config, "hi")
    assert result.success
    assert [p.closed for p in probe.made] == [True]


async def test_an_observer_raising_cancelled_error_itself_does_not_cancel_the_run() -> None:
    async def rogue_async(event: ProgressEvent) -> None:
        raise asyncio.CancelledError

    def rogue_sync(event: ProgressEvent) -> None:
        raise asyncio.CancelledError

    for rogue in (rogue_async, rogue_sync):
        oma = _oma(on_progress=rogue)
        result = await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
        assert result.success
        assert oma.progress_stats().failed == 2


async def test_a_scorer_raising_cancelled_error_itself_is_counted_as_failed() -> None:
    def rogue(case: Any) -> float:
        raise asyncio.CancelledError

    async def rogue_async(case: Any) -> float:
        raise asyncio.CancelledError

    results: list[Any] = []
    oma = _oma(
        evaluation=OnlineEvaluationConfig(
            {"rogue": rogue, "rogue_async": rogue_async, "fine": lambda case: 0.5},
            on_result=results.append,
        )
    )
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    await asyncio.wait_for(oma.evaluation.flush(), 5)
    stats = oma.evaluation.stats()
    assert (stats.sampled, stats.scored, stats.failed) == (1, 1, 2)
    (stored,) = results
    assert stored.scores["fine"].value == 0.5
    assert set(stored.errors) == {"rogue", "rogue_async"}
