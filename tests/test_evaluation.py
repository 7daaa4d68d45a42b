"""Online evaluation: policies, sampling, isolation, bounded queue, flush/shutdown, stats."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _builders import agent_config, builtin_host, collecting_scorer, make_orchestrator
from _waiting import until

from oma_core import (
    AgentConfig,
    OpenMultiAgent,
    hookimpl,
)
from oma_core.evaluation import (
    EvalCase,
    EvalResult,
    Evaluator,
    OnlineEvaluationConfig,
    Score,
)
from oma_core.plugins import PluginHost
from oma_core.testing import Delayed, ScriptedProvider


def _evaluator(**kwargs: Any) -> tuple[Evaluator, list[EvalCase], list[EvalResult]]:
    cases: list[EvalCase] = []
    results: list[EvalResult] = []

    def scorer(case: EvalCase) -> float:
        cases.append(case)
        return 1.0

    kwargs.setdefault("scorers", [scorer])
    config = OnlineEvaluationConfig(on_result=results.append, plugin_scorers=False, **kwargs)
    return Evaluator(config), cases, results


def _submit(evaluator: Evaluator, value: Any = "twelve chars", output: str = "out") -> None:
    evaluator.submit(value, output, run_id="r1", metadata={"user": "u"}, status="ok", agent="a")


@pytest.mark.parametrize("bad", [-0.1, 1.5, "half", True])
def test_sample_must_be_a_probability_or_a_predicate(bad: Any) -> None:
    with pytest.raises(ValueError, match="sample"):
        OnlineEvaluationConfig(scorers=[], sample=bad)


async def test_scorer_sees_placeholder_and_output_under_none() -> None:
    evaluator, cases, results = _evaluator()
    _submit(evaluator, output="the answer")
    await evaluator.flush()
    assert cases[0].input == "[string input omitted; 12 characters]"
    assert cases[0].output == "the answer"
    assert "the answer" not in results[0].output
    assert results[0].scores["scorer"] == Score(1.0)


async def test_scorers_may_be_async_and_return_a_score() -> None:
    async def judge(case: EvalCase) -> Score:
        await asyncio.sleep(0)
        return Score(0.5, "half right")

    evaluator, _, results = _evaluator(scorers={"judge": judge})
    _submit(evaluator)
    await evaluator.flush()
    assert results[0].scores == {"judge": Score(0.5, "half right")}


async def test_a_scorer_returning_garbage_counts_as_failed() -> None:
    evaluator, _, _ = _evaluator(scorers=[lambda case: "great"])
    _submit(evaluator)
    await evaluator.flush()
    assert evaluator.stats().failed == 1


async def test_a_predicate_decides_per_case() -> None:
    evaluator, cases, _ = _evaluator(sample=lambda case: case.output == "keep")
    _submit(evaluator, output="keep")
    _submit(evaluator, output="skip")
    await evaluator.flush()
    assert [c.output for c in cases] == ["keep"]
    assert evaluator.stats().sampled == 1


def test_a_full_queue_drops_and_counts() -> None:
    evaluator, _, _ = _evaluator(max_queue=2)
    for _ in range(5):  # no running loop: nothing is consumed
        _submit(evaluator)
    assert evaluator.stats().dropped == 3
    assert evaluator.stats().pending == 2


async def test_concurrency_is_bounded() -> None:
    running = 0
    peak = 0

    async def slow(case: EvalCase) -> float:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return 1.0

    evaluator, _, _ = _evaluator(scorers=[slow], max_concurrency=2)
    for _ in range(8):
        _submit(evaluator)
    await evaluator.flush()
    assert peak == 2
    assert evaluator.stats().scored == 8


async def test_shutdown_is_idempotent_and_later_cases_are_dropped() -> None:
    evaluator, cases, _ = _evaluator()
    _submit(evaluator)
    await evaluator.shutdown()
    evaluator.shutdown()
    await evaluator.shutdown()
    _submit(evaluator)
    await evaluator.flush()
    assert len(cases) == 1
    assert evaluator.stats().dropped == 1


async def test_a_failing_result_sink_is_counted_and_does_not_stop_others() -> None:
    def broken(result: EvalResult) -> None:
        raise RuntimeError("sink down")

    evaluator = Evaluator(
        OnlineEvaluationConfig(scorers=[lambda c: 1.0], on_result=broken, plugin_scorers=False)
    )
    _submit(evaluator)
    await evaluator.flush()
    assert evaluator.stats().failed == 1
    assert evaluator.stats().scored == 1


class _ScorerPlugin:
    def __init__(self) -> None:
        self.results: list[Any] = []

    @hookimpl
    def oma_register_scorers(self) -> list[Any]:
        def packaged(case: EvalCase) -> float:
            return 0.75

        return [packaged]

    @hookimpl
    def oma_evaluation_result(self, result: Any) -> None:
        self.results.append(result)


async def test_packaged_scorers_run_and_results_reach_the_hook() -> None:
    host = PluginHost(load_entrypoints=False)
    plugin = _ScorerPlugin()
    host.register(plugin, name="scorer-plugin")
    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[]), plugins=host)
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    await oma.evaluation.flush()
    assert [r.scores["packaged"].value for r in plugin.results] == [0.75]


async def test_evaluation_never_delays_the_run_result() -> None:
    release = asyncio.Event()

    async def blocked(case: EvalCase) -> float:
        await release.wait()
        return 1.0

    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(scorers=[blocked]),
        plugins=PluginHost(load_entrypoints=False),
    )
    result = await asyncio.wait_for(
        oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi"), 1.0
    )
    assert result.success
    assert oma.evaluation.stats().pending == 1
    release.set()
    await oma.evaluation.flush()
    assert oma.evaluation.stats().scored == 1


def test_online_evaluation_config_defaults() -> None:
    config = OnlineEvaluationConfig(scorers=[lambda case: 1.0])
    assert config.sample == 1.0
    assert config.store_payloads == "none"


async def test_sampling_zero_scores_nothing() -> None:
    scored: list[Any] = []
    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(scorers=[collecting_scorer(scored)], sample=0.0)
    )
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    await oma.evaluation.flush()
    assert scored == [] and oma.evaluation.stats().scored == 0

    evaluator, cases, _ = _evaluator(sample=0.0)
    for _ in range(5):
        _submit(evaluator)
    await evaluator.flush()
    assert evaluator.stats().sampled == 0 and cases == []


async def test_a_failing_scorer_is_counted_and_never_fails_the_run() -> None:
    def bad(case: EvalCase) -> float:
        raise RuntimeError("scorer broke")

    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[bad]))
    result = await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    await oma.evaluation.flush()
    assert result.success
    assert oma.evaluation.stats().failed >= 1

    def broken(case: EvalCase) -> float:
        raise RuntimeError("scorer bug")

    def good(case: EvalCase) -> float:
        return 0.25

    evaluator, _, results = _evaluator(scorers=[broken, good])
    _submit(evaluator)
    await evaluator.flush()
    stats = evaluator.stats()
    assert (stats.sampled, stats.scored, stats.failed) == (1, 1, 1)
    assert results[0].scores == {"good": Score(0.25)}
    assert "broken" in results[0].errors


async def test_async_scorers_and_the_result_hook_receive_the_sample() -> None:
    results: list[Any] = []

    class Sink:
        @hookimpl
        def oma_evaluation_result(self, result: Any) -> None:
            results.append(result)

    async def scorer(case: EvalCase) -> float:
        await asyncio.sleep(0)
        return 0.5

    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(scorers=[scorer]), plugins=builtin_host(Sink())
    )
    await oma.run_agent(
        AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hello", run_id="z"
    )
    await oma.evaluation.flush()
    assert len(results) == 1
    assert results[0].run_id == "z"
    assert results[0].input == "[string input omitted; 5 characters]"


async def test_scorer_may_return_a_score_with_a_reason() -> None:
    from oma_core import Score

    results: list[Any] = []

    class Sink:
        @hookimpl
        def oma_evaluation_result(self, result: Any) -> None:
            results.append(result)

    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(scorers=[lambda case: Score(0.25, "meh")]),
        plugins=builtin_host(Sink()),
    )
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    await oma.evaluation.flush()
    (score,) = results[0].scores.values()
    assert score.value == 0.25 and score.reason == "meh"


async def test_evaluation_metadata_is_copied_at_the_call() -> None:
    cases: list[EvalCase] = []
    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[collecting_scorer(cases)]))
    metadata = {"k": "v"}
    coro = oma.run_agent(
        AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi", metadata=metadata
    )
    metadata["k"] = "changed"
    await coro
    await oma.evaluation.flush()
    assert cases[0].metadata == {"k": "v"}

    evaluator_cases: list[EvalCase] = []
    metadata = {"tags": ["a"]}
    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(
            scorers=[lambda c: evaluator_cases.append(c) or 1.0], store_payloads="full"
        ),
        plugins=PluginHost(load_entrypoints=False),
    )
    coro = oma.run_agent(
        AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi", metadata=metadata, run_id="run-7"
    )
    metadata["tags"].append("b")
    await coro
    await oma.evaluation.flush()
    assert evaluator_cases[0].metadata == {"tags": ["a"]}
    assert evaluator_cases[0].run_id == "run-7"


async def test_after_shutdown_runs_are_not_scored_but_counted_as_dropped() -> None:
    scored: list[Any] = []
    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[collecting_scorer(scored)]))
    await oma.evaluation.shutdown()
    result = await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    await oma.evaluation.flush()
    assert result.success and scored == []
    assert oma.evaluation.stats().dropped == 1


async def test_cancelling_with_evaluation_leaks_no_task_after_flush() -> None:
    oma = make_orchestrator(evaluation=OnlineEvaluationConfig([lambda c: 1.0]))
    await oma.run_agent(agent_config(ScriptedProvider(["ok"])), "hi")
    await oma.evaluation.flush()
    before = asyncio.all_tasks()
    provider = ScriptedProvider([Delayed(30, "late")])
    task = asyncio.ensure_future(oma.run_agent(agent_config(provider), "hi"))
    await until(lambda: provider.requests)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await oma.evaluation.flush()
    assert asyncio.all_tasks() == before
    assert oma.evaluation.stats().sampled == 1  # the cancelled run is not evaluated


async def test_async_result_sinks_are_awaited_by_flush() -> None:
    delivered: list[str | None] = []

    async def sink(result: Any) -> None:
        await asyncio.sleep(0.01)
        delivered.append(result.run_id)

    oma = make_orchestrator(evaluation=OnlineEvaluationConfig([lambda c: 1.0], on_result=sink))
    await oma.run_agent(agent_config(ScriptedProvider(["ok"])), "hi", run_id="r-1")
    await oma.evaluation.flush()
    assert delivered == ["r-1"]


async def test_a_scorer_raising_cancelled_error_itself_is_counted_as_failed() -> None:
    def rogue(case: Any) -> float:
        raise asyncio.CancelledError

    async def rogue_async(case: Any) -> float:
        raise asyncio.CancelledError

    results: list[Any] = []
    oma = make_orchestrator(
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
