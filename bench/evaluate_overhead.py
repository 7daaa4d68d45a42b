"""What ``evaluate`` adds per case on top of the runs themselves.

Run: ``python bench/evaluate_overhead.py``. The provider answers at once (no I/O). The same
cases are run twice, one at a time: directly (``Agent.run`` per case, as a hand-written loop
would) and through ``evaluate`` with the ``exact`` scorer and a price (so each run is charged
to its ledger and the report is built: the work an evaluation does). The difference per case
is evaluate's own overhead. Goal: <= 1 ms per case (issue 34). Each figure is the best of 5
rounds (a shared machine is noisy); every run is checked to have succeeded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from oma_core import Agent, AgentConfig, PluginHost
from oma_core.capabilities import Capabilities
from oma_core.evaluation import Dataset, DatasetCase, evaluate, exact
from oma_core.messages import LLMMessage, TextBlock
from oma_core.providers import ProviderRequest, ProviderResponse, Usage

GOAL_MS = 1.0
CASES = 200
ROUNDS = 5


class InstantProvider:
    """Answers every call at once with the same reply."""

    name = display_name = "instant"
    capabilities = Capabilities.everything()

    def __init__(self) -> None:
        message = LLMMessage("assistant", (TextBlock("the answer"),))
        self.response = ProviderResponse(message, Usage(12, 3), stop_reason="end_turn")

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self.response


def price(usage: Usage, context: object) -> float:
    return (usage.input_tokens * 3 + usage.output_tokens * 15) / 1_000_000


async def best_of(body: Callable[[], Awaitable[None]]) -> float:
    """The best seconds per case over ``ROUNDS`` rounds of the whole dataset."""
    best = float("inf")
    for _ in range(ROUNDS):
        started = time.perf_counter()
        await body()
        best = min(best, (time.perf_counter() - started) / CASES)
    return best


async def main() -> None:
    host = PluginHost(load_entrypoints=False)
    config = AgentConfig("bench", provider=InstantProvider())
    dataset = Dataset(
        [DatasetCase(f"case {i}", f"question {i}?", expected="the answer") for i in range(CASES)]
    )
    agent = Agent(config, plugins=host, close_after_run=True)

    async def direct() -> None:
        for case in dataset.cases:
            result = await agent.run(case.input)
            assert result.success, result.status

    async def evaluated() -> None:
        report = await evaluate(
            dataset, config, [exact], concurrency=1, estimate_cost=price, plugins=host
        )
        assert len(report.cases) == CASES
        assert all(c.status == "ok" and c.scores["exact"].value == 1.0 for c in report.cases)

    await direct()  # warm both paths up (imports, caches) before anything counts
    await evaluated()
    runs = await best_of(direct)
    whole = await best_of(evaluated)
    overhead_ms = (whole - runs) * 1000
    print(f"direct runs:      {runs * 1e6:8.1f} us per case")
    print(f"through evaluate: {whole * 1e6:8.1f} us per case")
    print(
        f"evaluate's own:   {overhead_ms * 1000:8.1f} us per case (goal <= {GOAL_MS * 1000:.0f} us)"
    )
    print("OK" if overhead_ms <= GOAL_MS else "OVER GOAL")


if __name__ == "__main__":
    asyncio.run(main())
