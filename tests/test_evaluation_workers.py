"""Online evaluation's workers: a bounded queue, max_concurrency tasks, none left behind."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oma_core.evaluation import EvalCase, EvalResult, Evaluator, OnlineEvaluationConfig

WORKER = "oma-evaluation-worker"


def _workers() -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() if t.get_name() == WORKER and not t.done()}


def _evaluator(scorer: Any = None, **kwargs: Any) -> tuple[Evaluator, list[EvalResult]]:
    results: list[EvalResult] = []
    config = OnlineEvaluationConfig(
        scorers=[scorer or (lambda case: 1.0)],
        on_result=results.append,
        plugin_scorers=False,
        **kwargs,
    )
    return Evaluator(config), results


def _submit(evaluator: Evaluator, output: str = "out") -> None:
    evaluator.submit("in", output, run_id=None, metadata={}, status="ok", agent="a")


class _Gate:
    """A scorer that blocks until opened, recording the outputs it was given."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.entered: list[str] = []

    async def __call__(self, case: EvalCase) -> float:
        self.entered.append(case.output)
        await self.open.wait()
        return 1.0


async def _until(predicate: Any) -> None:
    """Let other tasks run until ``predicate()`` holds (bounded by steps, not by time)."""
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("never happened")


async def test_a_case_starts_max_concurrency_workers_and_flush_ends_them() -> None:
    evaluator, results = _evaluator(max_concurrency=3)
    assert _workers() == set()
    _submit(evaluator)
    assert len(_workers()) == 3
    await evaluator.flush()
    assert len(results) == 1
    assert _workers() == set()
    _submit(evaluator)  # the next case starts them again
    await evaluator.flush()
    assert len(results) == 2 and _workers() == set()


async def test_at_most_max_concurrency_cases_are_scored_at_once() -> None:
    gate = _Gate()
    evaluator, _ = _evaluator(gate, max_concurrency=2)
    for i in range(5):
        _submit(evaluator, f"o{i}")
    await _until(lambda: len(gate.entered) == 2)
    for _ in range(10):
        await asyncio.sleep(0)
    assert gate.entered == ["o0", "o1"]
    assert evaluator.stats().pending == 5
    gate.open.set()
    await evaluator.flush()
    assert evaluator.stats().scored == 5 and evaluator.stats().pending == 0


async def test_the_queue_bound_drops_cases_submitted_while_it_is_full() -> None:
    gate = _Gate()
    evaluator, _ = _evaluator(gate, max_queue=2, max_concurrency=1)
    for i in range(5):  # submitted in one step: no worker has taken a case yet
        _submit(evaluator, f"o{i}")
    assert (evaluator.stats().dropped, evaluator.stats().pending) == (3, 2)
    gate.open.set()
    await evaluator.flush()
    assert evaluator.stats().scored == 2


async def test_an_awaited_shutdown_scores_what_is_queued_and_leaves_no_task() -> None:
    gate = _Gate()
    evaluator, results = _evaluator(gate, max_concurrency=2)
    for i in range(4):
        _submit(evaluator, f"o{i}")
    closing = asyncio.ensure_future(evaluator.shutdown())
    _submit(evaluator, "late")
    await _until(lambda: len(gate.entered) == 2)
    gate.open.set()
    await closing
    assert len(results) == 4
    assert evaluator.stats().dropped == 1  # "late": submitted after shutdown()
    assert _workers() == set()


async def test_shutdown_with_cancel_drops_the_queue_and_cancels_the_scoring() -> None:
    gate = _Gate()
    evaluator, results = _evaluator(gate, max_concurrency=1)
    for i in range(3):
        _submit(evaluator, f"o{i}")
    await _until(lambda: gate.entered == ["o0"])
    await evaluator.shutdown(cancel=True)
    assert results == []
    assert evaluator.stats().dropped == 2
    assert evaluator.stats().pending == 0
    assert _workers() == set()


async def test_a_shutdown_not_awaited_lets_the_workers_end_once_drained() -> None:
    evaluator, results = _evaluator(max_concurrency=4)
    _submit(evaluator)
    workers = _workers()
    assert len(workers) == 4
    evaluator.shutdown()
    _, pending = await asyncio.wait(workers, timeout=30)  # a bound, not a measurement
    assert pending == set()
    assert len(results) == 1


async def test_a_failing_sink_or_scorer_never_ends_a_worker() -> None:
    def broken(case: EvalCase) -> float:
        raise RuntimeError("scorer bug")

    evaluator, results = _evaluator(broken, max_concurrency=1)
    for _ in range(3):
        _submit(evaluator)
    await evaluator.flush()
    assert evaluator.stats().failed == 3
    assert len(results) == 3


def test_cases_queued_without_a_loop_are_scored_by_a_later_flush() -> None:
    evaluator, results = _evaluator()
    _submit(evaluator)
    _submit(evaluator)
    assert evaluator.stats().pending == 2
    asyncio.run(evaluator.flush())
    assert len(results) == 2


def test_cases_left_queued_when_a_loop_ended_move_to_the_next_loop() -> None:
    blocked = True
    started = 0

    async def first_blocks(case: EvalCase) -> float:
        nonlocal started
        started += 1
        if blocked:
            await asyncio.Event().wait()  # ended with its loop
        return 1.0

    evaluator, results = _evaluator(first_blocks, max_concurrency=1)

    async def first_loop() -> None:
        for i in range(3):
            _submit(evaluator, f"o{i}")
        await _until(lambda: started == 1)

    asyncio.run(first_loop())  # the case being scored is cancelled with the loop
    blocked = False
    assert evaluator.stats().pending == 2

    async def second_loop() -> None:
        _submit(evaluator, "o3")
        await evaluator.flush()
        assert _workers() == set()

    asyncio.run(second_loop())
    assert len(results) == 3
    assert evaluator.stats().pending == 0


@pytest.mark.parametrize("cancel", [False, True])
async def test_shutdown_is_idempotent_and_later_cases_are_dropped(cancel: bool) -> None:
    evaluator, results = _evaluator()
    _submit(evaluator)  # still queued when shutdown is called
    await evaluator.shutdown(cancel=cancel)
    await evaluator.shutdown(cancel=cancel)
    _submit(evaluator)
    await evaluator.flush()
    assert len(results) == (0 if cancel else 1)
    assert evaluator.stats().dropped == (2 if cancel else 1)
    assert _workers() == set()


async def test_an_orchestrator_without_a_host_delivers_to_the_default_hosts_result_hooks() -> None:
    from oma_core import AgentConfig, OpenMultiAgent, PluginHost, hookimpl

    delivered: list[EvalResult] = []

    class Sink:
        @hookimpl
        def oma_evaluation_result(self, result: EvalResult) -> None:
            delivered.append(result)

    host = PluginHost(load_entrypoints=False)
    host.register(Sink(), "sink")
    previous = PluginHost.set_default(host)
    try:
        config = OnlineEvaluationConfig(scorers=[lambda case: 1.0])
        oma = OpenMultiAgent(evaluation=config)
        await oma.run_agent(AgentConfig(name="a"), "hi", run_id="r1")
        await oma.evaluation.flush()
    finally:
        PluginHost.set_default(previous)
    assert [r.run_id for r in delivered] == ["r1"]
