"""``Price``: a model's published rates as an ``estimate_cost``, cache parts priced apart."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oma_core import AgentConfig, OpenMultiAgent, Usage
from oma_core.budgets import Price
from oma_core.testing import ScriptedProvider

SONNET = Price(3, 15, cache_read=0.3, cache_write=3.75)  # USD per million tokens


def test_cache_reads_and_writes_are_priced_at_their_own_rates() -> None:
    usage = Usage(1000, 100, cache_read_tokens=800, cache_write_tokens=100, reasoning_tokens=60)
    # 100 plain input at 3, 800 read at 0.3, 100 written at 3.75, 100 output (reasoning in it) at 15
    assert SONNET(usage) == pytest.approx((100 * 3 + 800 * 0.3 + 100 * 3.75 + 100 * 15) / 1e6)


def test_a_cache_rate_left_unset_is_priced_as_input() -> None:
    usage = Usage(1000, 0, cache_read_tokens=600, cache_write_tokens=400)
    assert Price(2, 8)(usage) == pytest.approx(1000 * 2 / 1e6)


@given(
    input_tokens=st.integers(0, 10**7),
    read=st.integers(0, 10**7),
    write=st.integers(0, 10**7),
    output=st.integers(0, 10**7),
)
def test_a_price_is_finite_non_negative_and_never_below_the_cheapest_reading(
    input_tokens: int, read: int, write: int, output: int
) -> None:
    usage = Usage(input_tokens, output, cache_read_tokens=read, cache_write_tokens=write)
    cost = SONNET(usage)
    assert math.isfinite(cost) and cost >= 0
    assert cost >= output * 15 / 1e6  # output is always priced whole


@pytest.mark.parametrize("rate", [-1, math.nan, math.inf, "3", True])
def test_a_rate_that_is_not_a_finite_number_at_least_0_is_refused(rate: object) -> None:
    with pytest.raises(ValueError, match="cache_read must be a finite number >= 0"):
        Price(3, 15, cache_read=rate)  # type: ignore[arg-type]


async def test_a_price_is_an_estimate_cost_a_cost_budget_uses() -> None:
    oma = OpenMultiAgent(estimate_cost=Price(1e6, 0), max_cost_budget=0.5)
    provider = ScriptedProvider(["first answer"])
    result = await oma.run_agent(AgentConfig("a", provider=provider), "hi")
    # every input token costs one dollar: the first call spends more than the cap allows
    assert result.status.code == "budget_exhausted"
    assert result.output == "first answer"
