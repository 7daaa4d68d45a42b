"""OpenMultiAgent.run_agent: input handling, progress, evaluation payloads, retries, budgets,
timeouts and cancellation."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from oma_core import (
    AgentConfig,
    Budget,
    Capabilities,
    EvalCase,
    InvalidMessageError,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    ProgressEvent,
    ProviderError,
    RetryPolicy,
    UnsupportedContentBlockError,
    dump_messages,
    load_messages,
)
from oma_core.plugins import PluginHost
from oma_core.testing import Delayed, ScriptedProvider

IMAGE = base64.b64encode(bytes(range(200))).decode()


def _conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "Keep answers short."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Understood."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is shown?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": IMAGE},
                },
            ],
        },
    ]


async def _no_sleep(seconds: float) -> None:
    return None


def _oma(**kwargs: Any) -> OpenMultiAgent:
    kwargs.setdefault("plugins", PluginHost(load_entrypoints=False))
    kwargs.setdefault("retry_policy", RetryPolicy(sleep=_no_sleep))
    return OpenMultiAgent(**kwargs)


def _config(provider: Any, **kwargs: Any) -> AgentConfig:
    return AgentConfig("vision", provider=provider, **kwargs)


# -- input ---------------------------------------------------------------------------------------


async def test_string_input_emits_a_prompt_payload() -> None:
    events: list[ProgressEvent] = []
    result = await _oma(on_progress=events.append).run_agent(
        _config(ScriptedProvider(["fine"])), "hello"
    )
    assert result.success and result.output == "fine"
    start = events[0]
    assert (start.type, start.agent, start.task) == ("agent_start", "vision", None)
    assert start.data == {"prompt": "hello"}
    assert events[-1].type == "agent_complete"


async def test_structured_input_emits_a_messages_payload() -> None:
    events: list[ProgressEvent] = []
    await _oma(on_progress=events.append).run_agent(
        _config(ScriptedProvider(["a cat"])), _conversation()
    )
    assert events[0].data == {"messages": load_messages(_conversation())}
    assert isinstance(events[0].data["messages"], tuple)


async def test_invalid_input_raises_at_the_call_before_any_progress() -> None:
    events: list[ProgressEvent] = []
    oma = _oma(on_progress=events.append, evaluation=OnlineEvaluationConfig([lambda c: 1.0]))
    with pytest.raises(InvalidMessageError, match="must be a list"):
        oma.run_agent(_config(ScriptedProvider(["x"])), {"role": "user"})  # no await needed
    with pytest.raises(InvalidMessageError):
        oma.run_agent(_config(ScriptedProvider(["x"])), [])
    assert events == []
    assert oma.evaluation.stats().sampled == 0


async def test_structured_input_to_an_external_backend_raises_before_anything() -> None:
    events: list[ProgressEvent] = []
    oma = _oma(on_progress=events.append, evaluation=OnlineEvaluationConfig([lambda c: 1.0]))
    config = AgentConfig("cli", backend={"kind": "process", "command": ["true"]})
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        oma.run_agent(config, _conversation())
    await oma.evaluation.flush()
    assert events == []
    assert oma.evaluation.stats().sampled == 0


async def test_caller_mutation_after_the_call_changes_nothing() -> None:
    provider = ScriptedProvider(["ok"])
    conversation = _conversation()
    coro = _oma().run_agent(_config(provider), conversation)
    conversation[2]["content"][0]["text"] = "mutated"
    conversation.append({"role": "assistant", "content": [{"type": "text", "text": "x"}]})
    await coro
    assert provider.requests[0].messages == load_messages(_conversation())


async def test_progress_mutation_reaches_neither_provider_nor_scorer() -> None:
    provider = ScriptedProvider(["ok"])
    cases: list[EvalCase] = []

    def vandal(event: ProgressEvent) -> None:
        if event.type == "agent_start":
            event.data["messages"] = ()
            event.data["extra"] = "x"

    oma = _oma(
        on_progress=vandal,
        evaluation=OnlineEvaluationConfig(
            [lambda case: cases.append(case) or 1.0], store_payloads="full"
        ),
    )
    conversation = _conversation()
    await oma.run_agent(_config(provider), conversation)
    await oma.evaluation.flush()
    assert provider.requests[0].messages == load_messages(conversation)
    assert json.loads(cases[0].input) == dump_messages(load_messages(conversation))


async def test_full_payload_round_trips_below_the_limit_and_is_marked_above() -> None:
    cases: list[EvalCase] = []
    oma = _oma(
        evaluation=OnlineEvaluationConfig([lambda c: cases.append(c) or 1.0], store_payloads="full")
    )
    small = _conversation()
    big = [{"role": "user", "content": [{"type": "text", "text": "y" * 10_000}]}]
    await oma.run_agent(_config(ScriptedProvider(["a", "b"])), small)
    await oma.run_agent(_config(ScriptedProvider(["c"])), big)
    await oma.evaluation.flush()
    assert json.loads(cases[0].input) == dump_messages(load_messages(small))
    assert cases[0].output == "a"
    assert len(cases[1].input) > 8192 and "truncated" in cases[1].input[8192:]


async def test_string_input_under_full_is_the_json_string() -> None:
    cases: list[EvalCase] = []
    oma = _oma(
        evaluation=OnlineEvaluationConfig([lambda c: cases.append(c) or 1.0], store_payloads="full")
    )
    await oma.run_agent(_config(ScriptedProvider(["ok"])), "twelve chars")
    await oma.evaluation.flush()
    assert json.loads(cases[0].input) == "twelve chars"


# -- progress delivery ------------------------------------------------------------------------


async def test_a_raising_observer_never_fails_the_run_and_is_counted() -> None:
    def broken(event: ProgressEvent) -> None:
        raise RuntimeError("observer bug")

    oma = _oma(on_progress=broken)
    result = await oma.run_agent(_config(ScriptedProvider(["ok"])), "hi")
    assert result.success
    assert oma.progress_stats().failed == 2  # agent_start and agent_complete


async def test_a_slow_async_observer_is_cut_off_and_counted() -> None:
    async def stuck(event: ProgressEvent) -> None:
        await asyncio.sleep(30)

    oma = _oma(on_progress=stuck, observer_timeout=0.05)
    result = await asyncio.wait_for(oma.run_agent(_config(ScriptedProvider(["ok"])), "hi"), 5)
    assert result.success
    assert oma.progress_stats().timed_out == 2


async def test_async_observers_finish_before_run_agent_returns() -> None:
    seen: list[str] = []

    async def observer(event: ProgressEvent) -> None:
        await asyncio.sleep(0.01)
        seen.append(event.type)

    await _oma(on_progress=observer).run_agent(_config(ScriptedProvider(["ok"])), "hi")
    assert seen == ["agent_start", "agent_complete"]


async def test_progress_hooks_receive_events_too() -> None:
    from oma_core import hookimpl

    class Plugin:
        def __init__(self) -> None:
            self.events: list[str] = []

        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            self.events.append(event.type)

    host = PluginHost(load_entrypoints=False)
    plugin = Plugin()
    host.register(plugin, name="watcher")
    await _oma(plugins=host).run_agent(_config(ScriptedProvider(["ok"])), "hi")
    assert plugin.events == ["agent_start", "agent_complete"]


# -- retries ------------------------------------------------------------------------------------


async def test_unsupported_content_block_is_not_retried() -> None:
    provider = ScriptedProvider(["never"], capabilities=Capabilities.text_only())
    events: list[ProgressEvent] = []
    result = await _oma(on_progress=events.append).run_agent(
        _config(provider), _conversation(), max_retries=5
    )
    assert not result.success
    assert isinstance(result.status.error, UnsupportedContentBlockError)
    assert provider.requests == []
    assert not [e for e in events if e.type == "retry"]


async def test_a_429_is_retried_exactly_max_retries_times() -> None:
    provider = ScriptedProvider([ProviderError("slow down", status_code=429)] * 4 + ["late"])
    events: list[ProgressEvent] = []
    result = await _oma(on_progress=events.append).run_agent(_config(provider), "hi", max_retries=3)
    assert not result.success
    assert len(provider.requests) == 4  # the call and 3 retries
    assert [e.data["attempt"] for e in events if e.type == "retry"] == [1, 2, 3]


async def test_retry_settings_most_specific_wins() -> None:
    def failing() -> ScriptedProvider:
        return ScriptedProvider([ProviderError("busy", status_code=503)] * 10)

    oma = _oma(max_retries=4)
    first = failing()
    await oma.run_agent(_config(first), "hi")
    assert len(first.requests) == 5  # orchestrator default
    second = failing()
    await oma.run_agent(_config(second, max_retries=2), "hi")
    assert len(second.requests) == 3  # the config beats the orchestrator
    third = failing()
    await oma.run_agent(_config(third, max_retries=2), "hi", max_retries=0)
    assert len(third.requests) == 1  # the call beats the config


# -- budgets ------------------------------------------------------------------------------------


def _tool_turn(index: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": f"t{index}", "name": "missing", "input": {}}],
    }


async def test_token_budget_stops_the_run_with_usage_so_far() -> None:
    provider = ScriptedProvider([_tool_turn(i) for i in range(5)] + ["done"])
    events: list[ProgressEvent] = []
    result = await _oma(on_progress=events.append).run_agent(
        _config(provider), "x" * 400, max_token_budget=150
    )
    assert result.status.code == "budget_exhausted"
    assert not result.success
    assert result.usage.total_tokens > 0
    assert len(provider.requests) < 6
    exceeded = [e for e in events if e.type == "budget_exceeded"]
    assert len(exceeded) == 1 and exceeded[0].data["kind"] == "tokens"


async def test_lowest_per_run_token_cap_wins() -> None:
    provider = ScriptedProvider([_tool_turn(i) for i in range(5)] + ["done"])
    oma = _oma(max_token_budget=100_000)
    result = await oma.run_agent(_config(provider), "x" * 400, max_token_budget=150)
    assert result.status.code == "budget_exhausted"


async def test_call_max_tokens_is_clamped_to_what_is_left() -> None:
    provider = ScriptedProvider(["ok"])
    await _oma().run_agent(_config(provider), "hi", budget=Budget(max_tokens=64))
    assert provider.requests[0].max_tokens == 64


async def test_cost_budget_without_a_price_is_refused() -> None:
    with pytest.raises(ValueError, match="estimate_cost"):
        _oma(max_cost_budget=1.0)
    with pytest.raises(ValueError, match="estimate_cost"):
        _oma().run_agent(_config(ScriptedProvider(["x"])), "hi", budget=Budget(max_cost=1.0))


async def test_cost_budget_stops_the_run() -> None:
    provider = ScriptedProvider([_tool_turn(i) for i in range(5)] + ["done"])
    oma = _oma(estimate_cost=lambda usage, ctx: 1.0)
    result = await oma.run_agent(_config(provider), "hi", max_cost_budget=2.5)
    assert result.status.code == "budget_exhausted"
    assert len(provider.requests) == 3


async def test_fifty_concurrent_runs_share_one_budget_without_lost_updates() -> None:
    budget = Budget(max_tokens=1_000_000)
    oma = _oma()
    probe = await oma.run_agent(_config(ScriptedProvider(["answer"])), "question")
    per_run = probe.usage.total_tokens
    runs = [
        oma.run_agent(
            _config(ScriptedProvider([Delayed(0.001 * (i % 7), "answer")])),
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
    oma = _oma()
    first = await oma.run_agent(_config(ScriptedProvider(["a"])), "hi", budget=budget)
    second_provider = ScriptedProvider(["b"])
    second = await oma.run_agent(_config(second_provider), "hi", budget=budget)
    assert first.status.code == "budget_exhausted"
    assert second.status.code == "budget_exhausted"
    assert second_provider.requests == []


# -- timeouts and cancellation ------------------------------------------------------------------


async def test_run_timeout_ends_with_status_timeout() -> None:
    provider = ScriptedProvider([Delayed(5, "late")])
    result = await _oma().run_agent(_config(provider), "hi", timeout=0.05)
    assert result.status.code == "timeout"


async def test_call_timeout_ends_with_status_timeout_after_retries() -> None:
    provider = ScriptedProvider([Delayed(5, "late")] * 3)
    result = await _oma().run_agent(_config(provider), "hi", call_timeout=0.02, max_retries=1)
    assert result.status.code == "timeout"
    assert len(provider.requests) == 2


async def test_cancelling_run_agent_propagates_and_leaks_no_task() -> None:
    async def slow_observer(event: ProgressEvent) -> None:
        await asyncio.sleep(10)

    before = asyncio.all_tasks()
    oma = _oma(on_progress=slow_observer)
    task = asyncio.ensure_future(
        oma.run_agent(_config(ScriptedProvider([Delayed(10, "late")])), "hi")
    )
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == before


async def test_an_enclosing_timeout_cancels_cleanly() -> None:
    before = asyncio.all_tasks()
    provider = ScriptedProvider([Delayed(10, "late")])
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.02):
            await _oma().run_agent(_config(provider), "hi")
    assert asyncio.all_tasks() == before


async def test_failed_run_error_text_is_redacted() -> None:
    key = "sk-ant-api03-" + "Q" * 30
    provider = ScriptedProvider([ProviderError(f"bad request echo {key}", status_code=400)])
    result = await _oma().run_agent(_config(provider), "hi")
    assert result.status.code == "error"
    assert isinstance(result.status.error, ProviderError)
    assert result.status.error.status_code == 400
    assert key not in str(result.status.error)


async def test_a_failed_run_emits_error_then_agent_complete() -> None:
    events: list[ProgressEvent] = []
    provider = ScriptedProvider([ProviderError("bad", status_code=400)])
    await _oma(on_progress=events.append).run_agent(_config(provider), "hi")
    assert [e.type for e in events] == ["agent_start", "error", "agent_complete"]
    assert events[1].data["code"] == "error"
    assert events[2].data["success"] is False


async def test_a_tool_error_result_is_reported_as_a_warning() -> None:
    events: list[ProgressEvent] = []
    provider = ScriptedProvider([_tool_turn(0), "done"])
    result = await _oma(on_progress=events.append).run_agent(_config(provider), "hi")
    assert result.success
    (warning,) = [e for e in events if e.type == "warning"]
    assert warning.data["tool"] == "missing"


async def test_run_id_is_on_every_event_and_generated_when_not_given() -> None:
    events: list[ProgressEvent] = []
    oma = _oma(on_progress=events.append)
    await oma.run_agent(_config(ScriptedProvider(["a"])), "hi", run_id="mine")
    await oma.run_agent(_config(ScriptedProvider(["b"])), "hi")
    assert [e.run_id for e in events[:2]] == ["mine", "mine"]
    generated = {e.run_id for e in events[2:]}
    assert len(generated) == 1 and None not in generated and "mine" not in generated


async def test_cancelling_with_evaluation_leaks_no_task_after_flush() -> None:
    oma = _oma(evaluation=OnlineEvaluationConfig([lambda c: 1.0]))
    await oma.run_agent(_config(ScriptedProvider(["ok"])), "hi")
    await oma.evaluation.flush()
    before = asyncio.all_tasks()
    task = asyncio.ensure_future(
        oma.run_agent(_config(ScriptedProvider([Delayed(10, "late")])), "hi")
    )
    await asyncio.sleep(0.01)
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

    oma = _oma(evaluation=OnlineEvaluationConfig([lambda c: 1.0], on_result=sink))
    await oma.run_agent(_config(ScriptedProvider(["ok"])), "hi", run_id="r-1")
    await oma.evaluation.flush()
    assert delivered == ["r-1"]
