"""Token and cost budgets on runs: what a call costs (failed, cut short, cancelled), and budgets
ending runs as budget_exhausted.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from contextlib import aclosing
from typing import Any

import attrs
import pytest
from _builders import (
    CostlyProvider,
    add,
    agent_config,
    make,
    make_orchestrator,
    start,
    tool_round,
)
from _waiting import until

from oma_core import (
    AgentConfig,
    Budget,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    TextBlock,
    Usage,
    estimate_tokens,
    hookimpl,
)
from oma_core.errors import BudgetExceededError, ProviderError
from oma_core.messages import LLMMessage
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    TextDelta,
)
from oma_core.retry import RetryPolicy
from oma_core.testing import Delayed, ScriptedProvider
from oma_core.toolkit import CallEvent, ModelCall, RunContext


class BudgetMiddleware:
    """Call middleware standing in for a budget: refuses before, stops after, or clamps."""

    def __init__(self, *, before: bool = False, after: bool = False, max_tokens: int = 0) -> None:
        self.before = before
        self.after = after
        self.max_tokens = max_tokens

    @hookimpl(wrapper=True)
    def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
        events = yield
        return self._around(events, call)

    async def _around(
        self, events: AsyncGenerator[CallEvent, None], call: ModelCall
    ) -> AsyncGenerator[CallEvent, None]:
        if self.before:
            raise BudgetExceededError("tokens", 10, 12)
        if self.max_tokens:
            call.request = attrs.evolve(call.request, max_tokens=self.max_tokens)
        async with aclosing(events) as inner:
            async for event in inner:
                yield event
        if self.after:
            raise BudgetExceededError("tokens", 10, 12)


PROMPT = "p" * 400  # 100 tokens by the estimate


SYSTEM = "s" * 40  # 10 tokens


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


def test_budget_defaults() -> None:
    budget = Budget()
    assert budget.max_tokens is None and budget.max_cost is None
    assert Budget(max_tokens=5).max_tokens == 5


async def test_a_per_run_token_budget_ends_the_run_as_budget_exhausted() -> None:
    provider = CostlyProvider()
    oma = OpenMultiAgent()
    config = AgentConfig(name="v", provider=provider, tools=[add], max_turns=10)
    result = await oma.run_agent(config, "go", max_token_budget=300)
    assert not result.success
    assert result.status.code == "budget_exhausted"
    # soft cap: at most one call past the limit
    assert provider.calls == 2


async def test_an_orchestrator_token_budget_applies_per_run() -> None:
    oma = OpenMultiAgent(max_token_budget=300)
    for _ in range(2):
        provider = CostlyProvider(tool_calls=False)
        result = await oma.run_agent(AgentConfig(name="v", provider=provider), "go")
        assert result.success


async def test_a_shared_budget_object_spans_runs() -> None:
    budget = Budget(max_tokens=300)
    oma = OpenMultiAgent()
    provider = CostlyProvider(tool_calls=False)
    config = AgentConfig(name="v", provider=provider)
    first = await oma.run_agent(config, "one", budget=budget)
    second = await oma.run_agent(config, "two", budget=budget)
    assert first.success
    third = await oma.run_agent(config, "three", budget=budget)
    assert third.status.code == "budget_exhausted"
    calls_before_third = 2
    assert provider.calls == calls_before_third
    assert second.status.code in ("ok", "budget_exhausted")


async def test_the_budget_clamps_the_next_calls_max_tokens() -> None:
    seen: list[ProviderRequest] = []

    class Recording(CostlyProvider):
        async def complete(self, request: ProviderRequest) -> ProviderResponse:
            seen.append(request)
            return await super().complete(request)

        async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
            seen.append(request)
            async for event in super().stream(request):
                yield event

    provider = Recording()
    config = AgentConfig(name="v", provider=provider, tools=[add])
    await OpenMultiAgent().run_agent(config, "go", max_token_budget=300)
    assert len(seen) == 2
    assert seen[1].max_tokens is not None and seen[1].max_tokens <= 100


async def test_a_cost_budget_ends_the_run_as_budget_exhausted() -> None:
    provider = CostlyProvider()
    oma = OpenMultiAgent(estimate_cost=lambda usage, ctx: usage.input_tokens * 0.01)
    config = AgentConfig(name="v", provider=provider, tools=[add])
    result = await oma.run_agent(config, "go", max_cost_budget=1.5)
    assert result.status.code == "budget_exhausted"
    assert provider.calls == 2

    provider = ScriptedProvider([tool_round(i) for i in range(5)] + ["done"])
    oma = make_orchestrator(estimate_cost=lambda usage, ctx: 1.0)
    result = await oma.run_agent(agent_config(provider), "hi", max_cost_budget=2.5)
    assert result.status.code == "budget_exhausted"
    assert len(provider.requests) == 3


async def test_a_budget_refusing_before_the_call_ends_the_run(host: PluginHost) -> None:
    agent, provider = make(host, "never")
    result = await start(agent, "hi", observers=(BudgetMiddleware(before=True),))
    assert result.status.code == "budget_exhausted"
    assert isinstance(result.status.error, BudgetExceededError)
    assert provider.requests == []


async def test_a_budget_exceeded_after_the_call_keeps_the_usage(host: PluginHost) -> None:
    agent, provider = make(host, "answer", max_retries=5)
    result = await start(agent, "hi", observers=(BudgetMiddleware(after=True),))
    assert result.status.code == "budget_exhausted"
    assert result.usage.total_tokens > 0
    assert len(provider.requests) == 1


async def test_before_call_may_clamp_max_tokens(host: PluginHost) -> None:
    agent, provider = make(host, "ok")
    await start(agent, "hi", observers=(BudgetMiddleware(max_tokens=77),))
    assert provider.requests[0].max_tokens == 77


async def test_token_budget_stops_the_run_with_usage_so_far() -> None:
    provider = ScriptedProvider([tool_round(i) for i in range(5)] + ["done"])
    events: list[ProgressEvent] = []
    result = await make_orchestrator(on_progress=events.append).run_agent(
        agent_config(provider), "x" * 400, max_token_budget=150
    )
    assert result.status.code == "budget_exhausted"
    assert not result.success
    assert result.usage.total_tokens > 0
    assert len(provider.requests) < 6
    exceeded = [e for e in events if e.type == "budget_exceeded"]
    assert len(exceeded) == 1 and exceeded[0].data["kind"] == "tokens"


async def test_lowest_per_run_token_cap_wins() -> None:
    provider = ScriptedProvider([tool_round(i) for i in range(5)] + ["done"])
    oma = make_orchestrator(max_token_budget=100_000)
    result = await oma.run_agent(agent_config(provider), "x" * 400, max_token_budget=150)
    assert result.status.code == "budget_exhausted"


async def test_cost_budget_without_a_price_is_refused() -> None:
    with pytest.raises(ValueError, match="estimate_cost"):
        make_orchestrator(max_cost_budget=1.0)
    with pytest.raises(ValueError, match="estimate_cost"):
        make_orchestrator().run_agent(
            agent_config(ScriptedProvider(["x"])), "hi", budget=Budget(max_cost=1.0)
        )


async def test_fifty_concurrent_runs_share_one_budget_without_lost_updates() -> None:
    budget = Budget(max_tokens=1_000_000)
    oma = make_orchestrator()
    probe = await oma.run_agent(agent_config(ScriptedProvider(["answer"])), "question")
    per_run = probe.usage.total_tokens
    runs = [
        oma.run_agent(
            agent_config(ScriptedProvider([Delayed(0.001 * (i % 7), "answer")])),
            "question",
            budget=budget,
        )
        for i in range(50)
    ]
    results = await asyncio.gather(*runs)
    assert all(r.success for r in results)
    assert budget.used_tokens == 50 * per_run
    assert budget.used_tokens == sum(r.usage.total_tokens for r in results)


async def test_a_shared_budget_stops_later_runs() -> None:
    budget = Budget(max_tokens=1)
    oma = make_orchestrator()
    first = await oma.run_agent(agent_config(ScriptedProvider(["a"])), "hi", budget=budget)
    second_provider = ScriptedProvider(["b"])
    second = await oma.run_agent(agent_config(second_provider), "hi", budget=budget)
    assert first.status.code == "budget_exhausted"
    assert second.status.code == "budget_exhausted"
    assert second_provider.requests == []


async def test_a_call_whose_outcome_is_unknown_is_charged_its_input_never_zero() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([ProviderError("connection reset", retryable=True)])
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    result = await make_orchestrator().run_agent(config, PROMPT, budget=budget, max_retries=0)
    assert result.status.code == "error"
    assert budget.used_tokens == _input_estimate()


@pytest.mark.parametrize("status", [500, 503, 529])
async def test_a_5xx_answer_is_not_charged_and_the_run_reports_the_same(status: int) -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([ProviderError("upstream broke", status_code=status), "ok"])
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    oma = make_orchestrator(retry_policy=RetryPolicy(sleep=_no_wait))
    result = await oma.run_agent(config, PROMPT, budget=budget)
    assert result.success and len(provider.requests) == 2
    assert budget.used_tokens == result.usage.total_tokens  # what is charged is what is reported


async def test_every_failed_attempt_is_charged() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([ProviderError("reset", retryable=True)] * 3)
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    await make_orchestrator().run_agent(config, PROMPT, budget=budget, max_retries=2)
    assert len(provider.requests) == 3
    assert budget.used_tokens == 3 * _input_estimate()


async def test_a_call_cut_short_by_call_timeout_is_charged() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([Delayed(5, "late")])
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    result = await make_orchestrator().run_agent(
        config, PROMPT, budget=budget, call_timeout=0.02, max_retries=0
    )
    assert result.status.code == "timeout"
    assert budget.used_tokens >= _input_estimate()


async def test_a_stream_cut_short_inside_run_agent_is_charged_never_zero() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = _StreamOnly()
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    result = await make_orchestrator().run_agent(config, PROMPT, budget=budget)
    assert result.status.code == "error"
    assert provider.calls == 1
    assert budget.used_tokens >= _input_estimate()


async def test_a_call_refused_with_a_4xx_costs_nothing() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([ProviderError("slow down", status_code=429)] * 3)
    await make_orchestrator().run_agent(AgentConfig("a", provider=provider), PROMPT, budget=budget)
    assert len(provider.requests) == 3
    assert budget.used_tokens == 0


async def test_a_run_cancelled_mid_call_charges_the_shared_budget() -> None:
    budget = Budget(max_tokens=1_000_000)
    provider = ScriptedProvider([Delayed(30, "late")])
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    task = asyncio.ensure_future(make_orchestrator().run_agent(config, PROMPT, budget=budget))
    await until(lambda: provider.requests)  # mid call
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

    provider = ScriptedProvider([ProviderError("reset", retryable=True), "late"])
    oma = make_orchestrator(retry_policy=RetryPolicy(sleep=sleep_forever))
    config = AgentConfig("a", provider=provider, system_prompt=SYSTEM)
    task = asyncio.ensure_future(oma.run_agent(config, PROMPT, budget=budget))
    await asyncio.wait_for(gate.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert budget.used_tokens == _input_estimate()  # the failed attempt, once


async def test_negative_usage_never_disables_the_budget() -> None:
    budget = Budget(max_tokens=1_000_000)
    result = await make_orchestrator().run_agent(
        AgentConfig("a", provider=_Garbage()), PROMPT, budget=budget
    )
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
    result = await make_orchestrator(on_progress=events.append).run_agent(
        AgentConfig("a", provider=provider), PROMPT, budget=budget
    )
    assert result.status.code == "budget_exhausted"
    assert result.usage.total_tokens == budget.used_tokens > 50
    (stop,) = [e for e in events if e.type == "budget_exceeded"]
    assert stop.data == {"kind": "tokens", "limit": 50, "used": budget.used_tokens}
    assert [e.type for e in events][-2:] == ["error", "agent_complete"]


async def test_per_run_caps_do_not_leak_between_runs() -> None:
    oma = make_orchestrator(max_token_budget=500)
    for _ in range(3):
        result = await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), PROMPT)
        assert result.success


async def _no_wait(seconds: float) -> None:
    return None
