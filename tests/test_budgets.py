"""Budget ledgers and the observer that enforces them on model calls."""

from __future__ import annotations

from typing import Any

import pytest

from oma_core.budgets import Budget, BudgetObserver, CostContext
from oma_core.errors import BudgetExceededError, ProviderError
from oma_core.messages import LLMMessage, TextBlock
from oma_core.providers import ProviderRequest, Usage

REQUEST = ProviderRequest("m", (LLMMessage("user", (TextBlock("x" * 40),)),), max_tokens=1000)
CTX = CostContext(agent="a", provider="p", model="m", run_id="r")


def _observer(*budgets: Budget, **kwargs: Any) -> tuple[BudgetObserver, list[BudgetExceededError]]:
    stops: list[BudgetExceededError] = []
    observer = BudgetObserver(
        budgets,
        estimate_cost=kwargs.get("estimate_cost"),
        context=CTX,
        on_exceeded=stops.append,
    )
    return observer, stops


def test_budget_refuses_negative_and_nan_caps() -> None:
    with pytest.raises(ValueError):
        Budget(max_tokens=-1)
    with pytest.raises(ValueError):
        Budget(max_cost=float("nan"))


def test_max_tokens_of_a_call_is_clamped_to_what_is_left() -> None:
    budget = Budget(max_tokens=300, used_tokens=100)
    observer, _ = _observer(budget)
    assert observer.before_call(REQUEST).max_tokens == 200


def test_a_spent_budget_refuses_the_next_call_and_reports_once() -> None:
    observer, stops = _observer(Budget(max_tokens=10, used_tokens=10))
    with pytest.raises(BudgetExceededError):
        observer.before_call(REQUEST)
    with pytest.raises(BudgetExceededError):
        observer.before_call(REQUEST)
    assert len(stops) == 1


def test_usage_past_the_cap_stops_after_the_call() -> None:
    budget = Budget(max_tokens=50)
    observer, stops = _observer(budget)
    with pytest.raises(BudgetExceededError) as info:
        observer.after_call(REQUEST, Usage(40, 20), error=None, partial_text="")
    assert info.value.kind == "tokens"
    assert budget.used_tokens == 60
    assert stops == [info.value]


@pytest.mark.parametrize("bad", [None, -5, "12", float("nan"), True])
def test_bad_usage_counts_as_an_estimate_never_as_zero(bad: Any) -> None:
    budget = Budget(max_tokens=10_000)
    observer, _ = _observer(budget)
    usage = Usage.__new__(Usage)
    object.__setattr__(usage, "input_tokens", bad)
    object.__setattr__(usage, "output_tokens", bad)
    observer.after_call(REQUEST, usage, error=None, partial_text="y" * 40)
    assert budget.used_tokens >= 10 + 10  # 40 chars of input, 40 of output


def test_a_stream_cut_short_is_charged_its_partial_text() -> None:
    budget = Budget(max_tokens=10_000)
    observer, _ = _observer(budget)
    observer.after_call(REQUEST, Usage(), error=RuntimeError("cut"), partial_text="z" * 400)
    assert budget.used_tokens >= 100


def test_a_call_refused_before_any_output_costs_nothing() -> None:
    budget = Budget(max_tokens=100)
    observer, _ = _observer(budget)
    observer.after_call(
        REQUEST, Usage(), error=ProviderError("rate limited", status_code=429), partial_text=""
    )
    assert budget.used_tokens == 0


def test_cost_is_priced_by_the_estimator_and_capped() -> None:
    budget = Budget(max_cost=1.0)
    observer, stops = _observer(budget, estimate_cost=lambda usage, ctx: usage.total_tokens / 100)
    observer.after_call(REQUEST, Usage(30, 20), error=None, partial_text="")
    assert budget.used_cost == pytest.approx(0.5)
    with pytest.raises(BudgetExceededError) as info:
        observer.after_call(REQUEST, Usage(40, 30), error=None, partial_text="")
    assert info.value.kind == "cost"
    assert len(stops) == 1


def test_a_broken_cost_estimator_does_not_switch_the_cap_off() -> None:
    def broken(usage: Usage, ctx: CostContext) -> float:
        raise RuntimeError("no price list")

    observer, _ = _observer(Budget(max_cost=5.0), estimate_cost=broken)
    with pytest.raises(BudgetExceededError):
        observer.after_call(REQUEST, Usage(1, 1), error=None, partial_text="")


def test_every_ledger_is_charged_and_the_lowest_stops() -> None:
    per_run, shared = Budget(max_tokens=1000), Budget(max_tokens=30)
    observer, _ = _observer(per_run, shared)
    with pytest.raises(BudgetExceededError):
        observer.after_call(REQUEST, Usage(20, 20), error=None, partial_text="")
    assert per_run.used_tokens == shared.used_tokens == 40


def test_reported_usage_is_charged_as_it_is() -> None:
    budget = Budget(max_tokens=10_000)
    observer, _ = _observer(budget)
    observer.after_call(REQUEST, Usage(0, 7), error=None, partial_text="")
    observer.after_call(REQUEST, Usage(5, 0), error=None, partial_text="")
    assert budget.used_tokens == 12


def test_a_successful_call_reporting_nothing_is_charged_an_estimate() -> None:
    budget = Budget(max_tokens=10_000)
    observer, _ = _observer(budget)
    observer.after_call(REQUEST, Usage(0, 0), error=None, partial_text="")
    assert budget.used_tokens >= 10
