"""Call middleware: every model call and tool call passes through ``oma_model_call`` /
``oma_tool_call``, composed by pluggy; the core's budgets, tracing and progress use the same
door as the two test distributions (``oma-cachecalls``, ``oma-logcalls``) found through entry
points."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Generator
from contextlib import aclosing
from typing import Any

import oma_cachecalls
import oma_logcalls
import pytest
from _builders import Recorder, make, start

from oma_core import (
    Agent,
    AgentConfig,
    BackendSpec,
    Budget,
    OpenMultiAgent,
    PluginHost,
    ProviderError,
    RunSettings,
    hookimpl,
    tool,
)
from oma_core.errors import PluginError
from oma_core.testing import ScriptedProvider
from oma_core.toolkit import (
    BackendRequest,
    BackendResult,
    CallEvent,
    ModelCall,
    RunContext,
    TextDelta,
)


@pytest.fixture(autouse=True)
def _fresh_records() -> None:
    oma_cachecalls.CACHE.clear()
    oma_cachecalls.HITS.clear()
    oma_logcalls.RECORDS.clear()


def _run(provider: ScriptedProvider, **metadata: Any) -> Any:
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=PluginHost())
    return agent.run("hello", settings=RunSettings(metadata=metadata))


# -- the door, from outside: distributions found through entry points ------------------------


def test_the_middleware_distributions_load_through_entry_points() -> None:
    host = PluginHost()
    assert host.failures == []
    hooks = {info.name: info.hooks for info in host.plugin_info()}
    assert "oma_model_call" in hooks["cachecalls"]
    assert set(hooks["logcalls"]) == {"oma_model_call", "oma_tool_call"}


async def test_a_cache_plugin_answers_a_repeated_request_without_calling_the_provider() -> None:
    provider = ScriptedProvider(["the answer"])
    first = await _run(provider, cache=True)
    second = await _run(provider, cache=True)
    assert first.output == second.output == "the answer"
    assert len(provider.requests) == 1  # the second run never reached the provider
    assert [oma_cachecalls.HITS[0]] == oma_cachecalls.HITS
    assert second.usage.total_tokens == 0


async def test_a_cache_plugin_is_inert_for_runs_that_do_not_ask_for_it() -> None:
    provider = ScriptedProvider(["one", "two"])
    assert (await _run(provider)).output == "one"
    assert (await _run(provider)).output == "two"
    assert oma_cachecalls.HITS == []


async def test_a_log_plugin_sees_every_attempt_of_a_retried_call() -> None:
    provider = ScriptedProvider([ProviderError("busy", status_code=503), "ok"])
    oma = OpenMultiAgent(retry_delay=0, plugins=PluginHost())
    config = AgentConfig(name="a", provider=provider)
    result = await oma.run_agent(config, "hi", metadata={"log_calls": True}, run_id="r1")
    assert result.output == "ok"
    calls = [r for r in oma_logcalls.RECORDS if r["kind"] == "model"]
    assert [(r["attempt"], r["outcome"]) for r in calls] == [(1, "ProviderError"), (2, "ok")]
    assert {r["run_id"] for r in calls} == {"r1"}


async def test_a_log_plugin_sees_streamed_chunks_and_tool_calls() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    call = {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}}
    provider = ScriptedProvider([{"role": "assistant", "content": [call]}, "three"])
    agent = Agent(AgentConfig(name="a", provider=provider, tools=[add]), plugins=PluginHost())
    events = [
        e async for e in agent.stream("1+2?", settings=RunSettings(metadata={"log_calls": True}))
    ]
    assert events[-1].data.output == "three"
    kinds = [r["kind"] for r in oma_logcalls.RECORDS]
    assert kinds == ["model", "tool", "model"]
    run_id = oma_logcalls.RECORDS[0]["run_id"]
    assert oma_logcalls.RECORDS[1] == {
        "kind": "tool",
        "run_id": run_id,
        "tool": "add",
        "error": False,
    }
    assert oma_logcalls.RECORDS[2]["chunks"] >= 1


async def test_a_tryfirst_log_plugin_sees_a_call_the_budget_refuses() -> None:
    provider = ScriptedProvider(["never sent"])
    spent = Budget(max_tokens=10)
    spent.charge(10)
    oma = OpenMultiAgent(plugins=PluginHost())
    config = AgentConfig(name="a", provider=provider)
    result = await oma.run_agent(config, "hi", budget=spent, metadata={"log_calls": True})
    assert result.status.code == "budget_exhausted"
    assert provider.requests == []
    assert [r["outcome"] for r in oma_logcalls.RECORDS] == ["BudgetExceededError"]


async def test_budgets_clamp_the_request_the_inner_middleware_and_provider_see() -> None:
    provider = ScriptedProvider(["ok"])
    oma = OpenMultiAgent(plugins=PluginHost())
    config = AgentConfig(name="a", provider=provider, max_tokens=500)
    await oma.run_agent(config, "hi", max_token_budget=40, metadata={"log_calls": True})
    assert provider.requests[0].max_tokens is not None
    assert provider.requests[0].max_tokens <= 40
    assert oma_logcalls.RECORDS[0]["max_tokens"] == provider.requests[0].max_tokens


# -- composition: pluggy's order ----------------------------------------------------------------


class _Tagger:
    """An in-process wrapper that records when its calls start and end."""

    def __init__(self, name: str, trace: list[str]) -> None:
        self.name = name
        self.trace = trace

    async def around(
        self, events: AsyncGenerator[CallEvent, None]
    ) -> AsyncGenerator[CallEvent, None]:
        self.trace.append(f"{self.name}>")
        async with aclosing(events) as inner:
            async for event in inner:
                yield event
        self.trace.append(f"<{self.name}")


def _wrapper(tagger: _Tagger, **order: bool) -> object:
    class Plugin:
        @hookimpl(wrapper=True, **order)
        def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
            events = yield
            return tagger.around(events)

    return Plugin()


async def test_wrappers_compose_tryfirst_outermost_and_later_registered_outside() -> None:
    trace: list[str] = []
    host = PluginHost(load_entrypoints=False)
    host.register(_wrapper(_Tagger("last", trace), trylast=True), "last")
    host.register(_wrapper(_Tagger("plain1", trace)), "plain1")
    host.register(_wrapper(_Tagger("plain2", trace)), "plain2")
    host.register(_wrapper(_Tagger("first", trace), tryfirst=True), "first")
    agent = Agent(AgentConfig(name="a", provider=ScriptedProvider(["x"])), plugins=host)
    assert (await agent.run("hi")).output == "x"
    assert trace == [
        "first>",
        "plain2>",
        "plain1>",
        "last>",
        "<last",
        "<plain1",
        "<plain2",
        "<first",
    ]


async def test_a_wrapper_can_replace_the_request_before_it_is_sent() -> None:
    class Lowercase:
        @hookimpl(wrapper=True)
        def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
            events = yield
            import attrs

            call.request = attrs.evolve(call.request, temperature=0.0)
            return events

    host = PluginHost(load_entrypoints=False)
    host.register(Lowercase(), "lower")
    provider = ScriptedProvider(["x"])
    config = AgentConfig(name="a", provider=provider, temperature=0.9)
    await Agent(config, plugins=host).run("hi")
    assert provider.requests[0].temperature == 0.0


def test_a_wrapper_of_a_hook_that_may_not_be_wrapped_is_refused() -> None:
    class Bad:
        @hookimpl(wrapper=True)
        def oma_progress(self, event: Any) -> Generator[None, Any, Any]:
            return (yield)

    host = PluginHost(load_entrypoints=False)
    with pytest.raises(PluginError, match="oma_progress cannot be a hook wrapper"):
        host.register(Bad(), "bad")


# -- the clock: limits never come from float arithmetic on a large clock ------------------------


class _FarClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose monotonic clock reads 10**6 s more than the machine's."""

    def time(self) -> float:
        return super().time() + 1e6


class _StallingBackend:
    kind = "stall"
    display_name = "Stall"

    def __init__(self) -> None:
        self.requests: list[BackendRequest] = []

    async def run(self, request: BackendRequest) -> AsyncGenerator[Any, None]:
        self.requests.append(request)
        yield TextDelta("thinking")
        await asyncio.sleep(30)
        yield BackendResult("never")

    async def aclose(self) -> None:
        pass


def test_a_call_timeout_is_exact_when_the_loop_clock_is_large() -> None:
    backend = _StallingBackend()

    class Backends:
        @hookimpl
        def oma_register_backends(self) -> list[BackendSpec]:
            return [BackendSpec("stall", "Stall", factory=lambda options: backend)]

    host = PluginHost(load_entrypoints=False)
    host.register(Backends(), "stall")

    async def main() -> Any:
        assert asyncio.get_running_loop().time() > 1e6
        agent = Agent(AgentConfig(name="b", backend={"kind": "stall"}), plugins=host)
        return await agent.run("go", settings=RunSettings(call_timeout=0.2))

    with asyncio.Runner(loop_factory=_FarClockLoop) as runner:
        result = runner.run(main())
    assert backend.requests[0].timeout == 0.2  # exactly the limit, not 0.20000000000004547
    assert result.status.code == "timeout"
    assert result.status.error.timeout == 0.2


def test_a_model_call_timeout_is_reported_exactly_when_the_loop_clock_is_large() -> None:
    from oma_core.testing import Delayed

    provider = ScriptedProvider([Delayed(30, "late")])

    async def main() -> Any:
        agent = Agent(AgentConfig(name="a", provider=provider, max_retries=0))
        return await agent.run("go", settings=RunSettings(call_timeout=0.05, timeout=60))

    with asyncio.Runner(loop_factory=_FarClockLoop) as runner:
        result = runner.run(main())
    assert result.status.code == "timeout"
    assert result.status.error.scope == "call"
    assert result.status.error.timeout == 0.05


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


async def test_a_pass_through_middleware_changes_nothing(host: PluginHost) -> None:
    class PassThrough:
        @hookimpl(wrapper=True)
        def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
            return (yield)

    agent, provider = make(host, "ok")
    result = await start(agent, "hi", observers=(PassThrough(),))
    assert result.success and provider.requests[0].max_tokens is None


# -- oma_run: middleware around a whole run ----------------------------------------------------


class _RunWatcher:
    """Records what a run wrapper sees: the input, then every event type, ``done`` last."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    @hookimpl(wrapper=True)
    def oma_run(self, run: RunContext) -> Generator[None, Any, Any]:
        events = yield
        return self._watched(events, run)

    async def _watched(self, events: Any, run: RunContext) -> AsyncGenerator[Any, None]:
        self.seen.append(("input", run.input, run.stream))
        async with aclosing(events) as inner:
            async for event in inner:
                self.seen.append(event.type)
                yield event


async def test_a_run_wrapper_sees_the_input_and_every_event_done_last() -> None:
    host = PluginHost(load_entrypoints=False)
    watcher = _RunWatcher()
    host.register(watcher, name="watcher")
    agent = Agent(AgentConfig(name="a", provider=ScriptedProvider(["hello"])), plugins=host)
    result = await agent.run("hi")
    assert result.output == "hello"
    assert watcher.seen == [("input", "hi", False), "done"]


async def test_a_run_wrapper_sees_a_streamed_run_and_its_error_before_done() -> None:
    host = PluginHost(load_entrypoints=False)
    watcher = _RunWatcher()
    host.register(watcher, name="watcher")
    provider = ScriptedProvider([ProviderError("no", status_code=400)])
    agent = Agent(AgentConfig(name="a", provider=provider), plugins=host)
    async with agent.stream("hi") as events:
        types = [event.type async for event in events]
    assert types == ["error", "done"]
    assert watcher.seen == [("input", "hi", True), "error", "done"]


async def test_run_agent_is_one_agent_run_through_the_same_run_wrappers() -> None:
    host = PluginHost(load_entrypoints=False)
    watcher = _RunWatcher()
    host.register(watcher, name="watcher")
    order: list[str] = []
    oma = OpenMultiAgent(plugins=host, on_progress=lambda event: order.append(event.type))
    await oma.run_agent(AgentConfig(name="a", provider=ScriptedProvider(["ok"])), "hi")
    assert watcher.seen == [("input", "hi", False), "done"]
    assert order == ["agent_start", "agent_complete"]


async def test_a_run_wrapper_can_answer_without_running() -> None:
    class Refuser:
        @hookimpl(wrapper=True, tryfirst=True)
        def oma_run(self, run: RunContext) -> Generator[None, Any, Any]:
            events = yield
            return self._refused(events, run)

        async def _refused(self, events: Any, run: RunContext) -> AsyncGenerator[Any, None]:
            from oma_core import RunResult, RunStatus, StreamEvent, Usage

            await events.aclose()
            yield StreamEvent("done", RunResult(True, "cached", [], Usage(), RunStatus("ok", None)))

    host = PluginHost(load_entrypoints=False)
    host.register(Refuser(), name="refuser")
    provider = ScriptedProvider(["never"])
    result = await Agent(AgentConfig(name="a", provider=provider), plugins=host).run("hi")
    assert result.output == "cached" and provider.requests == []
