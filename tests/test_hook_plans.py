"""A run's hooks leave out the built-in wrappers that would do nothing for it (no progress, no
evaluator, no tracer, no budgets, nothing to close): the same events and results, for less,
and still through pluggy (``tests/test_architecture.py`` watches a run for a call of a
built-in implementation from anywhere else). These tests hold the built-in wrappers to
handing back what they got when idle, and the plans to following every change of the
plugins."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from contextlib import aclosing
from typing import Any

import pytest

from oma_core import Agent, AgentConfig, PluginHost, RunSettings, hookimpl, tracing
from oma_core.default_plugins import budgets, closing, evaluation, progress
from oma_core.testing import ScriptedProvider
from oma_core.toolkit import RunContext

#: (module, hook, the arguments before ``run``) of every built-in wrapper a plan may leave out.
_IDLE_WRAPPERS = [
    (progress, "oma_run", ()),
    (progress, "oma_tool_call", ("call",)),
    (evaluation, "oma_run", ()),
    (tracing, "oma_run", ()),
    (tracing, "oma_model_call", ("call",)),
    (tracing, "oma_tool_call", ("call",)),
    (budgets, "oma_model_call", ("call",)),
    (closing, "oma_run", ()),
]


@pytest.mark.parametrize(
    ("module", "hook", "before"),
    _IDLE_WRAPPERS,
    ids=[f"{m.__name__.rpartition('.')[2]}.{h}" for m, h, _ in _IDLE_WRAPPERS],
)
def test_a_builtin_wrapper_hands_back_what_it_got_for_a_run_with_nothing_for_it(
    module: Any, hook: str, before: tuple[str, ...]
) -> None:
    run = RunContext("r1", AgentConfig(name="a"), RunSettings(), target=object())
    wrapper = getattr(module, hook)(*before, run)
    next(wrapper)
    inner = object()
    with pytest.raises(StopIteration) as stopped:
        wrapper.send(inner)
    assert stopped.value.value is inner


class _Watcher:
    def __init__(self) -> None:
        self.runs: list[str] = []

    @hookimpl(wrapper=True)
    def oma_run(self, run: RunContext) -> Generator[None, Any, Any]:
        events = yield
        return self._watched(events, run)

    async def _watched(self, events: Any, run: RunContext) -> AsyncGenerator[Any, None]:
        self.runs.append(run.run_id)
        async with aclosing(events) as inner:
            async for event in inner:
                yield event


async def test_a_wrapper_registered_after_a_run_wraps_the_next_runs() -> None:
    host = PluginHost(load_entrypoints=False)
    agent = Agent(AgentConfig(name="a", provider=ScriptedProvider(["one", "two"])), plugins=host)
    assert (await agent.run("hi")).output == "one"
    watcher = _Watcher()
    host.register(watcher, name="watcher")
    second = await agent.run("hi", settings=RunSettings(run_id="second"))
    assert second.output == "two" and watcher.runs == ["second"]


async def test_a_wrapper_unregistered_after_a_run_no_longer_wraps_the_next_runs() -> None:
    host = PluginHost(load_entrypoints=False)
    watcher = _Watcher()
    host.register(watcher, name="watcher")
    agent = Agent(AgentConfig(name="a", provider=ScriptedProvider(["one", "two"])), plugins=host)
    await agent.run("hi", settings=RunSettings(run_id="first"))
    host.unregister(name="watcher")
    assert (await agent.run("hi")).output == "two"
    assert watcher.runs == ["first"]


async def test_with_pluggy_call_monitoring_on_every_run_hook_call_is_seen() -> None:
    host = PluginHost(load_entrypoints=False)
    seen: list[str] = []
    undo = host.pm.add_hookcall_monitoring(
        lambda name, impls, kwargs: seen.append(name), lambda *args: None
    )
    agent = Agent(AgentConfig(name="a", provider=ScriptedProvider(["ok"])), plugins=host)
    try:
        assert (await agent.run("hi")).success
    finally:
        undo()
    assert "oma_run" in seen and "oma_model_call" in seen
