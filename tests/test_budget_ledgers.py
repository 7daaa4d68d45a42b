"""Budget ledgers, and the built-in middleware that checks and charges them on every call.

Driven through the public door: ``Agent.run(..., settings=RunSettings(budgets=...))``, which
is what ``OpenMultiAgent.run_agent`` resolves its caps and shared ``Budget``s into.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from oma_core import (
    Agent,
    AgentConfig,
    Budget,
    BudgetExceededError,
    Capabilities,
    LLMMessage,
    ProviderError,
    RunSettings,
    TextBlock,
    Usage,
)
from oma_core._usage import charged_usage
from oma_core.budgets import CostContext
from oma_core.toolkit import ProviderRequest, ProviderResponse, ResponseComplete, TextDelta

REQUEST = ProviderRequest("m", (LLMMessage("user", (TextBlock("x" * 40),)),), max_tokens=1000)


class Fixed:
    """Answers ``text`` reporting ``usage``; ``fail_after`` streams that text, then fails."""

    name = "fixed"
    display_name = "Fixed"
    capabilities = Capabilities.everything()

    def __init__(self, text: str = "ok", usage: Any = None, fail: Exception | None = None) -> None:
        self.text = text
        self.usage = Usage(40, 20) if usage is None else usage
        self.fail = fail
        self.requests: list[ProviderRequest] = []

    def _response(self) -> ProviderResponse:
        message = LLMMessage("assistant", (TextBlock(self.text),))
        return ProviderResponse(message, self.usage)

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        self.requests.append(request)
        if self.fail is not None:
            raise self.fail
        return self._response()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        yield TextDelta(self.text)
        if self.fail is not None:
            raise self.fail
        yield ResponseComplete(self._response())


async def _run(provider: Fixed, *budgets: Budget, stream: bool = False, **settings: Any) -> Any:
    events: list[tuple[str, dict[str, Any]]] = []
    config = AgentConfig(name="a", provider=provider, max_tokens=1000, max_retries=0)
    run_settings = RunSettings(
        budgets=budgets, progress=lambda kind, data: events.append((kind, data)), **settings
    )
    agent = Agent(config)
    if stream:
        result = [e async for e in agent.stream("x" * 40, settings=run_settings)][-1].data
    else:
        result = await agent.run("x" * 40, settings=run_settings)
    return result, [data for kind, data in events if kind == "budget_exceeded"]


def test_budget_refuses_negative_and_nan_caps() -> None:
    with pytest.raises(ValueError):
        Budget(max_tokens=-1)
    with pytest.raises(ValueError):
        Budget(max_cost=float("nan"))


async def test_max_tokens_of_a_call_is_clamped_to_what_is_left() -> None:
    provider = Fixed()
    await _run(provider, Budget(max_tokens=300, used_tokens=100))
    assert provider.requests[0].max_tokens == 200


async def test_a_spent_budget_refuses_the_call_and_reports_once() -> None:
    provider = Fixed()
    result, stops = await _run(provider, Budget(max_tokens=10, used_tokens=10))
    assert result.status.code == "budget_exhausted"
    assert provider.requests == []
    assert stops == [{"kind": "tokens", "limit": 10, "used": 10}]


async def test_usage_past_the_cap_stops_after_the_call_and_keeps_the_answer() -> None:
    budget = Budget(max_tokens=50)
    result, stops = await _run(Fixed("the answer"), budget)
    assert result.status.code == "budget_exhausted"
    assert isinstance(result.status.error, BudgetExceededError)
    assert result.status.error.kind == "tokens"
    assert result.output == "the answer"  # what arrived is kept, not thrown away
    assert result.usage == Usage(40, 20)
    assert budget.used_tokens == 60
    assert len(stops) == 1


@pytest.mark.parametrize("bad", [None, -5, "12", float("nan"), True])
def test_bad_usage_counts_as_an_estimate_never_as_zero(bad: Any) -> None:
    usage = Usage.__new__(Usage)
    object.__setattr__(usage, "input_tokens", bad)
    object.__setattr__(usage, "output_tokens", bad)
    charged = charged_usage(REQUEST, usage, arrived=40)
    assert charged.input_tokens >= 10 and charged.output_tokens == 10


@pytest.mark.parametrize("bad", [None, -5, float("nan")])
async def test_a_whole_reply_with_bad_usage_is_charged_its_text(bad: Any) -> None:
    usage = Usage.__new__(Usage)
    object.__setattr__(usage, "input_tokens", bad)
    object.__setattr__(usage, "output_tokens", bad)
    budget = Budget(max_tokens=10_000)
    result, _ = await _run(Fixed("y" * 400, usage), budget)
    assert result.success
    assert budget.used_tokens >= 10 + 100  # the 400-character answer is not free


async def test_a_stream_cut_short_is_charged_the_text_that_arrived() -> None:
    budget = Budget(max_tokens=10_000)
    cut = ProviderError("dropped", retryable=True)
    result, _ = await _run(Fixed("z" * 800, fail=cut), budget, stream=True)
    assert result.status.code == "error"
    assert budget.used_tokens >= 10 + 200
    assert result.usage.output_tokens >= 200


async def test_cost_is_priced_by_the_estimator_and_capped() -> None:
    budget = Budget(max_cost=1.0)
    price = {"estimate_cost": lambda usage, ctx: usage.total_tokens / 100}
    first, _ = await _run(Fixed(usage=Usage(30, 20)), budget, **price)
    assert first.success
    assert budget.used_cost == pytest.approx(0.5)
    second, stops = await _run(Fixed(usage=Usage(40, 30)), budget, **price)
    assert second.status.code == "budget_exhausted"
    assert second.status.error.kind == "cost"
    assert len(stops) == 1


async def test_the_estimator_is_told_which_call_it_prices() -> None:
    seen: list[CostContext] = []

    def price(usage: Usage, ctx: CostContext) -> float:
        seen.append(ctx)
        return 0.0

    await _run(Fixed(), Budget(max_cost=1.0), estimate_cost=price, run_id="r7")
    assert seen == [CostContext(agent="a", provider="fixed", model=None, run_id="r7")]


@pytest.mark.parametrize(
    "priced",
    [RuntimeError("no price list"), "0.01", float("nan"), -1.0, None, True],
    ids=["raises", "str", "nan", "negative", "none", "bool"],
)
async def test_a_cost_that_is_not_a_finite_number_counts_as_unlimited(priced: object) -> None:
    def estimate(usage: Usage, ctx: CostContext) -> Any:
        if isinstance(priced, Exception):
            raise priced
        return priced

    budget = Budget(max_cost=5.0)
    result, _ = await _run(Fixed(), budget, estimate_cost=estimate)
    assert result.status.code == "budget_exhausted"
    assert budget.used_cost == math.inf


async def test_every_ledger_is_charged_and_the_lowest_stops() -> None:
    per_run, shared = Budget(max_tokens=1000), Budget(max_tokens=30)
    result, _ = await _run(Fixed(usage=Usage(20, 20)), per_run, shared)
    assert result.status.code == "budget_exhausted"
    assert per_run.used_tokens == shared.used_tokens == 40


def test_reported_usage_is_charged_as_it_is() -> None:
    assert charged_usage(REQUEST, Usage(0, 7)) == Usage(0, 7)
    assert charged_usage(REQUEST, Usage(5, 0)) == Usage(5, 0)


def test_a_successful_call_reporting_nothing_is_charged_an_estimate() -> None:
    assert charged_usage(REQUEST, Usage(0, 0)).input_tokens >= 10
