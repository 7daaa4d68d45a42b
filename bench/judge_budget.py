"""A judge under a rate budget, with 1,000 runs to score: how many it grades, how many it
drops, what it adds to the user's runs, and how much memory it holds.

Run: ``python bench/judge_budget.py``. Every run of the user's agent is sampled for online
evaluation by one ``judge`` whose model answers at once with a valid verdict and reports 100
tokens a call; the evaluation allows ``max_tokens_per_minute=5,000`` (50 judge calls) and
``max_cost_per_hour=$0.04`` (40 calls at $0.001 a call), on a clock the bench holds still (the
1,000 runs fall in one minute). Two shapes:

- sequential: 1,000 runs one after the other, the judge grading in the background between
  them. Goals: judge calls <= the tightest cap (40) + one per worker (4); every other case
  counted in ``dropped_budget``; the median run <= 10 % slower than the same runs evaluated
  by a plain scorer with no budget (what the judge and its budget add to the user's run: the
  budget check is on the run's path, the grading is not). The median against no evaluation
  at all is printed for scale.
- burst: 1,000 runs at once (``asyncio.gather``), so 1,000 cases arrive together. Goals: the
  same caps hold; nothing waits beyond ``max_queue``; the memory the evaluation holds does
  not grow with the cases: held after 1,000 minus held after 100 <= 16 KiB (the windows are
  fixed-size buckets; a dropped case keeps nothing).
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import time
import tracemalloc

from oma_core import AgentConfig, OnlineEvaluationConfig, OpenMultiAgent, PluginHost
from oma_core.evaluation import judge
from oma_core.messages import LLMMessage, TextBlock
from oma_core.providers import ProviderRequest, ProviderResponse, Usage

RUNS = 1000
TOKENS_PER_MINUTE = 5000
COST_PER_HOUR = 0.04
PRICE_PER_TOKEN = 0.00001  # $0.001 for a 100-token judge call
WORKERS = 4
GOAL_CALLS = int(min(TOKENS_PER_MINUTE / 100, COST_PER_HOUR / (100 * PRICE_PER_TOKEN))) + WORKERS
GOAL_SLOWER = 0.10
GOAL_CHECK_US = 5.0
ROUNDS = 5
GOAL_GROWTH = 16 * 1024
VERDICT = json.dumps({"score": 0.8, "reasons": ["answers the question"]})


class Instant:
    """A model that answers at once: ``reply`` and 100 tokens (90 in, 10 out)."""

    name = "instant"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        self.calls += 1
        return ProviderResponse(LLMMessage("assistant", (TextBlock(self.reply),)), Usage(90, 10))


def _oma(host: PluginHost, grader: Instant | str | None) -> OpenMultiAgent:
    if grader is None:
        return OpenMultiAgent(plugins=host)
    if grader == "plain":  # evaluated by a scorer that calls no model, with no budget
        plain = OnlineEvaluationConfig(scorers=[lambda case: 1.0], plugin_scorers=False)
        return OpenMultiAgent(plugins=host, evaluation=plain)
    assert isinstance(grader, Instant)
    config = OnlineEvaluationConfig(
        scorers=[judge(AgentConfig("grader", provider=grader), "Does it answer?")],
        store_payloads="redacted",
        plugin_scorers=False,
        max_concurrency=WORKERS,
        max_tokens_per_minute=TOKENS_PER_MINUTE,
        max_cost_per_hour=COST_PER_HOUR,
        estimate_cost=lambda usage, ctx: usage.total_tokens * PRICE_PER_TOKEN,
        clock=lambda: 0.0,  # held still: every run falls in the same minute
    )
    return OpenMultiAgent(plugins=host, evaluation=config)


async def _sequential(host: PluginHost, grader: Instant | str | None) -> list[float]:
    oma = _oma(host, grader)
    user = AgentConfig("user", provider=Instant("an answer"))
    times = []
    for index in range(RUNS):
        start = time.perf_counter()
        result = await oma.run_agent(user, f"question {index}")
        times.append(time.perf_counter() - start)
        assert result.success
    await oma.aclose()
    return times


async def _burst(
    host: PluginHost, grader: Instant, runs: int = RUNS
) -> tuple[OpenMultiAgent, int, float]:
    oma = _oma(host, grader)
    user = AgentConfig("user", provider=Instant("an answer"))
    start = time.perf_counter()
    results = await asyncio.gather(*(oma.run_agent(user, f"q {i}") for i in range(runs)))
    peak = oma.evaluation.stats().pending
    await oma.evaluation.flush()
    assert all(r.success for r in results)
    return oma, peak, time.perf_counter() - start


def _held(host: PluginHost, runs: int) -> tuple[int, OpenMultiAgent, Instant, int, float]:
    """Bytes still allocated by oma after a burst of ``runs`` (the evaluator kept alive).

    Counted from the allocations made with an ``oma_core`` frame on the stack: asyncio's own
    tables (the set of all tasks, the ready queue) grow to the bench's 1,000 concurrent runs
    and keep their size, which is the bench's doing, not the evaluation's.
    """
    grader = Instant(VERDICT)
    gc.collect()
    tracemalloc.start(25)
    oma, peak, seconds = asyncio.run(_burst(host, grader, runs))
    gc.collect()  # what is garbage is not held
    ours = tracemalloc.Filter(True, "*oma_core*", all_frames=True)
    held = sum(t.size for t in tracemalloc.take_snapshot().filter_traces([ours]).traces)
    tracemalloc.stop()
    return held, oma, grader, peak, seconds


def _submit_cost(host: PluginHost) -> float:
    """µs per ``submit`` once a window is spent: all a dropped case costs the user's run."""
    oma = _oma(host, Instant(VERDICT))
    evaluation = oma.evaluation
    for index in range(200):  # fill the windows
        evaluation.submit("q", "a", run_id=str(index), metadata={}, status="ok", agent="u")
    asyncio.run(evaluation.flush())
    count = 100_000
    start = time.perf_counter()
    for _ in range(count):
        evaluation.submit("q", "a", run_id="r", metadata={}, status="ok", agent="u")
    elapsed = time.perf_counter() - start
    assert evaluation.stats().pending == 0
    return elapsed / count * 1e6


def main() -> None:
    host = PluginHost(load_entrypoints=False)
    asyncio.run(_sequential(host, Instant(VERDICT)))  # warm up: imports, caches
    # Rounds interleaved (plain, judged, plain, ...) and the best median of each kept: the
    # machine's load changes between rounds, not within one.
    none = asyncio.run(_sequential(host, None))
    plains, judgeds, calls = [], [], []
    for _ in range(ROUNDS):
        plains.append(asyncio.run(_sequential(host, "plain")))
        grader = Instant(VERDICT)
        judgeds.append(asyncio.run(_sequential(host, grader)))
        calls.append(grader.calls)
    plain = min(plains, key=statistics.median)
    judged = min(judgeds, key=statistics.median)
    bare, base = statistics.median(none), statistics.median(plain)
    with_judge = statistics.median(judged)
    slower = with_judge / base - 1
    print(f"runs                              {RUNS}")
    print("sequential: one run after another, the judge grading between them")
    print(f"  judge calls (each round)        {max(calls):6d}      goal <= {GOAL_CALLS}")
    check = _submit_cost(host)
    print(f"  budget check on the run's path  {check:8.2f} µs   goal <= {GOAL_CHECK_US:.0f} µs")
    print(f"  median run, no evaluation       {bare * 1e6:8.1f} µs   (for scale)")
    print(f"  median run, plain scorer        {base * 1e6:8.1f} µs")
    print(f"  median run, judge + budget      {with_judge * 1e6:8.1f} µs")
    print(f"  slower than plain scorer by     {slower * 100:8.1f} %    goal <= {GOAL_SLOWER:.0%}")
    print(f"  p99 run, plain scorer           {sorted(plain)[int(RUNS * 0.99)] * 1e6:8.1f} µs")
    print(f"  p99 run, judge + budget         {sorted(judged)[int(RUNS * 0.99)] * 1e6:8.1f} µs")

    small = _held(host, 100)[0]
    held, oma, grader, peak, _ = _held(host, RUNS)
    growth = held - small
    seconds = asyncio.run(_burst(host, Instant(VERDICT)))[2]  # timed without tracemalloc
    stats = oma.evaluation.stats()
    print("burst: 1,000 runs at once")
    print(f"  judge calls                     {grader.calls:6d}      goal <= {GOAL_CALLS}")
    print(f"  scored / dropped_budget         {stats.scored:6d} / {stats.dropped_budget}")
    print(f"  dropped (queue) / failed        {stats.dropped:6d} / {stats.failed}")
    print(f"  cases waiting at the peak       {peak:6d}      goal <= max_queue (1000)")
    print(f"  memory held, 1,000 runs         {held / 1024:8.1f} KiB")
    print(f"  memory held, 100 runs           {small / 1024:8.1f} KiB")
    print(f"  growth for 900 more cases       {growth / 1024:8.1f} KiB  goal <= 16 KiB")
    print(f"  wall time, runs + grading       {seconds * 1e3:8.1f} ms  (for scale)")
    ok = (
        grader.calls <= GOAL_CALLS
        and stats.scored + stats.dropped_budget == RUNS
        and peak <= 1000
        and growth <= GOAL_GROWTH
        and slower <= GOAL_SLOWER
        and check <= GOAL_CHECK_US
        and max(calls) <= GOAL_CALLS
    )
    print("all goals met" if ok else "GOAL MISSED")


if __name__ == "__main__":
    main()
