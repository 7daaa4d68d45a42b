"""Per-call retries and timeouts, and what call middleware sees of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Generator
from contextlib import aclosing
from typing import Any

import attrs
import pytest

from oma_core import Agent, AgentConfig, PluginHost, RunSettings, hookimpl
from oma_core.errors import BudgetExceededError, ProviderError, RunTimeoutError
from oma_core.messages import LLMMessage, TextBlock, ToolResultBlock
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ResponseComplete,
    TextDelta,
    Usage,
)
from oma_core.retry import RetryPolicy
from oma_core.testing import Delayed, ScriptedProvider
from oma_core.toolkit import CallEvent, ModelCall, RunContext, ToolInvocation


class FakeSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


class Recorder:
    """Call middleware that records every call, retry and tool call it sees."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []

    @hookimpl(wrapper=True)
    def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
        events = yield
        return self._around(events, call)

    async def _around(
        self, events: AsyncGenerator[CallEvent, None], call: ModelCall
    ) -> AsyncGenerator[CallEvent, None]:
        if call.retry_of is not None:
            self.log.append(("on_retry", call.attempt - 1, call.retry_delay))
        self.log.append(("before_call",))
        partial: list[str] = []
        usage = Usage()
        try:
            async with aclosing(events) as inner:
                async for event in inner:
                    if isinstance(event, TextDelta):
                        partial.append(event.text)
                    elif isinstance(event, ResponseComplete):
                        usage = event.response.usage
                    yield event
        except Exception as error:
            self.log.append(("after_call", Usage(), type(error).__name__, "".join(partial)))
            raise
        self.log.append(("after_call", usage, None, ""))

    @hookimpl(wrapper=True)
    def oma_tool_call(self, call: ToolInvocation, run: RunContext) -> Generator[None, Any, Any]:
        result = yield
        return self._tool(result, call)

    async def _tool(self, result: Awaitable[ToolResultBlock], call: ToolInvocation) -> Any:
        self.log.append(("before_tool", call.block.id))
        outcome = await result
        self.log.append(("after_tool", call.block.id, outcome.content))
        return outcome


def start(
    agent: Agent,
    input: Any,
    *,
    mode: str = "run",
    observers: tuple[object, ...] = (),
    **settings: Any,
) -> Any:
    """Run ``agent`` with ``settings`` and the ``observers`` (middleware) registered."""
    settings.setdefault("retry", RetryPolicy(sleep=FakeSleep(), random=lambda: 1.0))
    for observer in observers:
        agent.plugins.register(observer)
    run_settings = RunSettings(**settings)
    if mode == "stream":
        return agent.stream(input, settings=run_settings)
    return agent.run(input, settings=run_settings)


def make(host: PluginHost, *responses: object, **config: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    return Agent(AgentConfig(name="a", provider=provider, **config), plugins=host), provider


async def test_a_transient_error_is_retried_on_the_ladder(host: PluginHost) -> None:
    agent, provider = make(
        host, ProviderError("busy", status_code=503), ProviderError("busy", status_code=429), "ok"
    )
    sleep = FakeSleep()
    recorder = Recorder()
    result = await start(
        agent, "hi", retry=RetryPolicy(sleep=sleep, random=lambda: 1.0), observers=(recorder,)
    )
    assert result.success and result.output == "ok"
    assert len(provider.requests) == 3
    assert sleep.waits == [0.5, 1.0]
    assert [e for e in recorder.log if e[0] == "on_retry"] == [
        ("on_retry", 1, 0.5),
        ("on_retry", 2, 1.0),
    ]


async def test_config_retry_settings_are_used_by_run(host: PluginHost) -> None:
    agent, provider = make(
        host, *[ProviderError("busy", status_code=500)] * 4, "ok", max_retries=4, retry_delay=0.0
    )
    result = await agent.run("hi")
    assert result.success and len(provider.requests) == 5


async def test_retries_stop_after_max_retries(host: PluginHost) -> None:
    agent, provider = make(host, *[ProviderError("busy", status_code=500)] * 5)
    result = await start(agent, "hi")
    assert result.status.code == "error" and len(provider.requests) == 3


async def test_a_client_error_is_not_retried(host: PluginHost) -> None:
    agent, provider = make(host, ProviderError("bad", status_code=400), "never")
    result = await start(agent, "hi")
    assert result.status.code == "error" and len(provider.requests) == 1


async def test_a_sane_retry_after_is_honoured(host: PluginHost) -> None:
    agent, _ = make(host, ProviderError("slow", status_code=429, retry_after=3.0), "ok")
    sleep = FakeSleep()
    await start(agent, "hi", retry=RetryPolicy(sleep=sleep))
    assert sleep.waits == [3.0]


async def test_a_wait_past_the_run_deadline_fails_at_once(host: PluginHost) -> None:
    agent, provider = make(host, ProviderError("slow", status_code=429, retry_after=30.0), "ok")
    sleep = FakeSleep()
    result = await start(agent, "hi", retry=RetryPolicy(sleep=sleep), timeout=5.0)
    assert result.status.code == "error"
    assert sleep.waits == [] and len(provider.requests) == 1


async def test_cancelling_during_backoff_returns_at_once(host: PluginHost) -> None:
    agent, _ = make(host, ProviderError("busy", status_code=503), "ok")
    task = asyncio.create_task(start(agent, "hi", retry=RetryPolicy(delay=30.0)))
    await asyncio.sleep(0.01)
    loop = asyncio.get_running_loop()
    began = loop.time()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert loop.time() - began < 1.0


async def test_call_timeout_is_retried_then_ends_as_timeout(host: PluginHost) -> None:
    agent, provider = make(host, *[Delayed(5, "late")] * 3)
    result = await start(agent, "hi", call_timeout=0.02)
    assert result.status.code == "timeout"
    error = result.status.error
    assert isinstance(error, RunTimeoutError) and error.scope == "call"
    assert len(provider.requests) == 3


async def test_call_timeout_recovers_when_a_retry_is_fast(host: PluginHost) -> None:
    agent, _ = make(host, Delayed(5, "late"), "fast")
    result = await start(agent, "hi", call_timeout=0.05)
    assert result.success and result.output == "fast"


async def test_run_timeout_ends_the_run_as_timeout(host: PluginHost) -> None:
    agent, provider = make(host, Delayed(5, "late"), "never")
    result = await start(agent, "hi", timeout=0.05)
    assert result.status.code == "timeout"
    error = result.status.error
    assert isinstance(error, RunTimeoutError) and error.scope == "run"
    assert len(provider.requests) == 1


class SlowStream:
    """Streams one chunk, then stalls (or fails, or finishes); records calls and closing."""

    name = display_name = "slow"

    def __init__(
        self,
        *,
        fail_first: BaseException | None = None,
        fail_after_text: BaseException | None = None,
        stall: bool = True,
    ) -> None:
        self.fail_first = fail_first
        self.fail_after_text = fail_after_text
        self.stall = stall
        self.calls = 0
        self.closed = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        raise NotImplementedError

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        self.calls += 1
        try:
            if self.fail_first is not None and self.calls == 1:
                raise self.fail_first
            yield TextDelta("partial ")
            if self.fail_after_text is not None:
                raise self.fail_after_text
            if self.stall:
                await asyncio.sleep(30)
            message = LLMMessage("assistant", (TextBlock("partial"),))
            yield ResponseComplete(ProviderResponse(message, Usage(1, 1)))
        finally:
            self.closed += 1


async def test_run_timeout_closes_the_provider_stream(host: PluginHost) -> None:
    provider = SlowStream()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    events = [e async for e in start(agent, "hi", mode="stream", timeout=0.05)]
    assert [e.type for e in events] == ["text", "error", "done"]
    assert events[-1].data.status.code == "timeout"
    assert provider.closed == 1


async def test_a_stream_that_already_yielded_is_not_retried(host: PluginHost) -> None:
    provider = SlowStream(fail_after_text=ProviderError("reset", retryable=True))
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    recorder = Recorder()
    events = [e async for e in start(agent, "hi", mode="stream", observers=(recorder,))]
    assert [e.type for e in events] == ["text", "error", "done"]
    assert provider.calls == 1
    result = events[-1].data
    assert result.usage.output_tokens > 0  # the cut-short call is counted (an estimate)
    after = [e for e in recorder.log if e[0] == "after_call"]
    assert after[0][2] == "ProviderError" and after[0][3] == "partial "


async def test_a_stream_that_failed_before_output_is_retried(host: PluginHost) -> None:
    provider = SlowStream(fail_first=ProviderError("refused", retryable=True), stall=False)
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    events = [e async for e in start(agent, "hi", mode="stream")]
    assert [e.type for e in events] == ["text", "done"]
    assert events[-1].data.success
    assert provider.calls == 2 and provider.closed == 2


async def test_outside_cancellation_propagates_after_closing_the_stream(host: PluginHost) -> None:
    provider = SlowStream()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in agent.stream("hi"):
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed == 1


class Budget:
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


async def test_a_budget_refusing_before_the_call_ends_the_run(host: PluginHost) -> None:
    agent, provider = make(host, "never")
    result = await start(agent, "hi", observers=(Budget(before=True),))
    assert result.status.code == "budget_exhausted"
    assert isinstance(result.status.error, BudgetExceededError)
    assert provider.requests == []


async def test_a_budget_exceeded_after_the_call_keeps_the_usage(host: PluginHost) -> None:
    agent, provider = make(host, "answer", max_retries=5)
    result = await start(agent, "hi", observers=(Budget(after=True),))
    assert result.status.code == "budget_exhausted"
    assert result.usage.total_tokens > 0
    assert len(provider.requests) == 1


async def test_before_call_may_clamp_max_tokens(host: PluginHost) -> None:
    agent, provider = make(host, "ok")
    await start(agent, "hi", observers=(Budget(max_tokens=77),))
    assert provider.requests[0].max_tokens == 77


async def test_middleware_sees_calls_and_tools_in_order(host: PluginHost) -> None:
    def echo(text: str) -> str:
        return text

    turn = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "echo", "input": {"text": "x"}}],
    }
    agent, _ = make(host, turn, "done", tools=[echo])
    recorder = Recorder()
    result = await start(agent, "hi", observers=(recorder,))
    assert [e[0] for e in recorder.log] == [
        "before_call",
        "after_call",
        "before_tool",
        "after_tool",
        "before_call",
        "after_call",
    ]
    assert recorder.log[3] == ("after_tool", "t1", "x")
    assert result.success


async def test_usage_sums_every_call_of_the_run(host: PluginHost) -> None:
    def noop() -> str:
        return ""

    turn = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "noop", "input": {}}],
    }
    agent, _ = make(host, turn, "done", tools=[noop])
    recorder = Recorder()
    result = await start(agent, "hi", observers=(recorder,))
    per_call = [e[1] for e in recorder.log if e[0] == "after_call"]
    assert result.usage == per_call[0] + per_call[1]


async def test_start_in_stream_mode_returns_an_agent_stream(host: PluginHost) -> None:
    agent, _ = make(host, "streamed")
    async with start(
        agent, [{"role": "user", "content": [{"type": "text", "text": "x"}]}], mode="stream"
    ) as events:
        types = [event.type async for event in events]
    assert types[-1] == "done" and "text" in types


async def test_a_stalled_stream_past_call_timeout_after_output_ends_as_timeout(
    host: PluginHost,
) -> None:
    provider = SlowStream()
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    events = [e async for e in start(agent, "hi", mode="stream", call_timeout=0.02)]
    result = events[-1].data
    assert result.status.code == "timeout"
    assert isinstance(result.status.error, RunTimeoutError)
    assert result.status.error.scope == "call"
    assert provider.calls == 1 and provider.closed == 1  # output was shown: no retry


async def test_a_pass_through_middleware_changes_nothing(host: PluginHost) -> None:
    class PassThrough:
        @hookimpl(wrapper=True)
        def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
            return (yield)

    agent, provider = make(host, "ok")
    result = await start(agent, "hi", observers=(PassThrough(),))
    assert result.success and provider.requests[0].max_tokens is None
