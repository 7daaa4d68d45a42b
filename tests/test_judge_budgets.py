"""Rate budgets of online evaluation: what judges may spend per minute and per hour; a case
with no room is dropped and counted, never queued to wait. Time is an injected clock."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oma_core import AgentConfig, LLMMessage, OnlineEvaluationConfig, OpenMultiAgent, TextBlock
from oma_core._spend_windows import Spending, _Window
from oma_core.budgets import Budget, CostContext
from oma_core.evaluation import Evaluator, judge
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderRequest, ProviderResponse, Usage


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Grader:
    """A judge's model: answers each call with ``replies`` in turn (the last one again), each
    call reporting 90 tokens in and 10 out."""

    name = "grader"

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies) or [json.dumps({"score": 1.0, "reasons": ["ok"]})]
        self.usage = Usage(90, 10)
        self.calls = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        self.calls += 1
        return ProviderResponse(LLMMessage("assistant", (TextBlock(reply),)), self.usage)


HOST = PluginHost(load_entrypoints=False)


def _evaluator(grader: Grader, clock: Clock, **config: Any) -> Evaluator:
    scorer = judge(AgentConfig("grader", provider=grader), "Is it right?", plugins=HOST)
    options: dict[str, Any] = {
        "scorers": [scorer],
        "store_payloads": "full",
        "max_concurrency": 1,
        "plugin_scorers": False,
        "clock": clock,
    }
    options.update(config)
    return Evaluator(OnlineEvaluationConfig(**options), HOST)


def _submit(evaluator: Evaluator, count: int) -> None:
    for index in range(count):
        evaluator.submit(
            "question", "answer", run_id=f"r{index}", metadata={}, status="ok", agent="w"
        )


async def test_cases_past_the_token_budget_of_a_minute_are_dropped_and_counted() -> None:
    grader, clock = Grader(), Clock()
    evaluator = _evaluator(grader, clock, max_tokens_per_minute=250)
    _submit(evaluator, 5)
    await evaluator.flush()
    stats = evaluator.stats()
    # 100 tokens a case: the first two fit in 250; a third would go over.
    assert (stats.scored, stats.dropped_budget, stats.failed) == (2, 3, 0)
    assert grader.calls == 2


async def test_a_minute_later_the_window_has_room_again() -> None:
    grader, clock = Grader(), Clock()
    evaluator = _evaluator(grader, clock, max_tokens_per_minute=250)
    _submit(evaluator, 3)
    await evaluator.flush()
    clock.now += 59  # still inside the minute: the spend still counts
    _submit(evaluator, 1)
    await evaluator.flush()
    assert grader.calls == 2
    clock.now += 2  # 61 s after the spend
    _submit(evaluator, 1)
    await evaluator.flush()
    assert grader.calls == 3


async def test_a_spent_window_drops_cases_as_they_come_without_queueing_them() -> None:
    grader, clock = Grader(), Clock()
    evaluator = _evaluator(grader, clock, max_tokens_per_minute=100)
    _submit(evaluator, 1)
    await evaluator.flush()
    _submit(evaluator, 50)
    stats = evaluator.stats()
    assert stats.pending == 0  # nothing queued: dropped on the run's path, at once
    assert stats.dropped_budget == 50


async def test_a_case_that_would_not_fit_the_average_case_is_dropped_as_it_comes() -> None:
    grader, clock = Grader(), Clock()
    evaluator = _evaluator(grader, clock, max_tokens_per_minute=250)
    _submit(evaluator, 2)
    await evaluator.flush()  # 200 of 250 spent; a case costs 100 on average
    _submit(evaluator, 1)
    assert evaluator.stats().pending == 0 and evaluator.stats().dropped_budget == 1


async def test_the_cost_budget_of_an_hour_prices_judge_calls_with_estimate_cost() -> None:
    priced: list[CostContext] = []

    def price(usage: Usage, ctx: CostContext) -> float:
        priced.append(ctx)
        return usage.total_tokens * 0.001  # 100 tokens: 0.10

    grader, clock = Grader(), Clock()
    evaluator = _evaluator(grader, clock, max_cost_per_hour=0.35, estimate_cost=price)
    for _ in range(3):
        _submit(evaluator, 2)
        await evaluator.flush()
        clock.now += 600  # ten minutes: inside the hour
    assert grader.calls == 3  # 0.10 each: a fourth would pass 0.35
    assert evaluator.stats().dropped_budget == 3
    assert priced and priced[0].agent == "grader"


async def test_the_orchestrators_price_is_used_when_the_config_has_none() -> None:
    grader, clock = Grader(), Clock()
    config = OnlineEvaluationConfig(
        scorers=[judge(AgentConfig("grader", provider=grader), "r")],
        store_payloads="full",
        max_cost_per_minute=0.15,
        max_concurrency=1,
        clock=clock,
    )
    oma = OpenMultiAgent(
        plugins=HOST, evaluation=config, estimate_cost=lambda usage, ctx: usage.total_tokens / 1000
    )
    _submit(oma.evaluation, 3)
    await oma.evaluation.flush()
    assert grader.calls == 1 and oma.evaluation.stats().dropped_budget == 2


def test_a_cost_budget_without_a_price_is_refused() -> None:
    config = OnlineEvaluationConfig(max_cost_per_minute=1.0)
    with pytest.raises(ValueError, match="need estimate_cost"):
        OpenMultiAgent(plugins=HOST, evaluation=config)


@pytest.mark.parametrize(
    "field", ["max_cost_per_minute", "max_cost_per_hour", "max_tokens_per_minute"]
)
@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), "5", True])
def test_a_rate_budget_is_a_finite_number_at_least_zero(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=field):
        OnlineEvaluationConfig(**{field: value})


async def test_a_zero_budget_scores_nothing() -> None:
    grader, clock = Grader(), Clock()
    evaluator = _evaluator(grader, clock, max_tokens_per_hour=0)
    _submit(evaluator, 3)
    await evaluator.flush()
    assert grader.calls == 0 and evaluator.stats().dropped_budget == 3


async def test_a_judge_its_ledger_stops_mid_case_counts_as_a_budget_drop_not_a_failure() -> None:
    # The first answer does not validate (100 tokens); the corrective turn passes the room
    # left (150), so the budget middleware stops the judge's run after it.
    grader, clock = Grader("no verdict here"), Clock()
    evaluator = _evaluator(grader, clock, max_tokens_per_minute=150)
    _submit(evaluator, 1)
    await evaluator.flush()
    stats = evaluator.stats()
    assert grader.calls == 2
    assert (stats.dropped_budget, stats.failed, stats.scored) == (1, 0, 0)


async def test_cheap_scorers_are_not_held_back_by_a_budget_they_do_not_spend() -> None:
    clock = Clock()
    config = OnlineEvaluationConfig(
        scorers=[lambda case: 1.0], max_tokens_per_minute=10, clock=clock, plugin_scorers=False
    )
    evaluator = Evaluator(config, HOST)
    _submit(evaluator, 20)
    await evaluator.flush()
    assert evaluator.stats().scored == 20 and evaluator.stats().dropped_budget == 0


# -- the windows -------------------------------------------------------------------------------


def _spending(clock: Clock, **caps: Any) -> Spending:
    options: dict[str, Any] = {
        "cost_per_minute": None,
        "cost_per_hour": None,
        "tokens_per_minute": None,
        "tokens_per_hour": None,
    }
    options.update(caps)
    return Spending(clock=clock, **options)


def _spend(spending: Spending, tokens: int) -> None:
    admitted = spending.admit()
    assert admitted is not None
    ledger, cost, reserved = admitted
    ledger.charge(tokens)
    spending.settle(ledger, cost, reserved)


def test_a_spend_counts_for_at_least_the_whole_window() -> None:
    clock = Clock()
    spending = _spending(clock, tokens_per_minute=100)
    clock.now = 1000.99
    _spend(spending, 100)
    for seconds in (0, 30, 59.9, 60.0):
        clock.now = 1000.99 + seconds
        assert spending.spent_out(), seconds
    clock.now = 1000.99 + 61.01
    assert not spending.spent_out()


def test_the_windows_keep_a_fixed_number_of_buckets_whatever_the_traffic() -> None:
    clock = Clock()
    spending = _spending(clock, tokens_per_minute=10**12, tokens_per_hour=10**12)
    for _ in range(20_000):  # one spend every 0.5 s for almost three hours
        clock.now += 0.5
        _spend(spending, 1)
    assert all(len(window.buckets) <= 61 for window in spending._windows)


def test_an_unpriceable_call_fills_the_window_until_it_passes() -> None:
    clock = Clock()
    spending = _spending(clock, cost_per_minute=1.0)
    admitted = spending.admit()
    assert admitted is not None
    admitted[0].used_cost = float("inf")  # what the budget middleware records for it
    spending.settle(*admitted)
    assert spending.spent_out()
    clock.now += 62
    assert not spending.spent_out()


def test_a_case_being_scored_reserves_its_expected_spend() -> None:
    clock = Clock()
    spending = _spending(clock, tokens_per_minute=250)
    _spend(spending, 100)  # now a case is expected to cost 100
    first = spending.admit()
    assert first is not None and first[0].max_tokens == 150
    assert spending.admit() is None  # 100 spent + 100 reserved + 100 expected > 250


def test_the_ledger_of_a_case_holds_what_is_left_in_the_tightest_window() -> None:
    clock = Clock()
    spending = _spending(clock, cost_per_minute=1.0, cost_per_hour=0.4, tokens_per_hour=500)
    admitted = spending.admit()
    assert admitted is not None
    ledger: Budget = admitted[0]
    assert ledger.max_cost == pytest.approx(0.4) and ledger.max_tokens == 500


@given(
    st.lists(
        st.tuples(st.floats(0, 30, allow_nan=False), st.integers(0, 50)), min_size=1, max_size=60
    )
)
def test_a_window_counts_every_spend_of_the_last_minute_and_none_older_than_a_minute_and_a_second(
    steps: list[tuple[float, int]],
) -> None:
    clock = Clock()
    window = _Window(60.0, cap=10**9, unit="tokens")
    history: list[tuple[float, int]] = []
    for wait, tokens in steps:
        clock.now += wait
        window.charge(clock.now, tokens)
        history.append((clock.now, tokens))
        spent = window.spent(clock.now)
        within_minute = sum(t for at, t in history if clock.now - at < 60)
        within_minute_and_bucket = sum(t for at, t in history if clock.now - at < 61)
        assert within_minute <= spent <= within_minute_and_bucket
