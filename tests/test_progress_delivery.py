"""How progress events reach observers: in order, each its own copy, async ones awaited, failures
isolated.
"""

from __future__ import annotations

import asyncio
from typing import Any

from _builders import (
    HookRecorder,
    agent_config,
    builtin_host,
    make_orchestrator,
    reference_conversation,
    user_turn,
)

from oma_core import (
    AgentConfig,
    OpenMultiAgent,
    ProgressEvent,
    dump_messages,
    hookimpl,
    load_messages,
)
from oma_core._delivery import ProgressDispatcher
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderRequest, ProviderResponse
from oma_core.testing import ScriptedProvider


def _event() -> ProgressEvent:
    return ProgressEvent("agent_start", "a", None, {"prompt": "hi", "extra": {"k": [1]}})


async def test_a_raising_observer_never_fails_the_run_and_is_counted() -> None:
    def broken(event: ProgressEvent) -> None:
        raise RuntimeError("observer bug")

    oma = make_orchestrator(on_progress=broken)
    result = await oma.run_agent(agent_config(ScriptedProvider(["ok"])), "hi")
    assert result.success
    assert oma.progress_stats().failed == 2  # agent_start and agent_complete

    calls: list[str] = []

    def observer(event: ProgressEvent) -> None:
        calls.append(event.type)
        raise RuntimeError("observer broke")

    oma = OpenMultiAgent(on_progress=observer)
    result = await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    assert result.success and result.output == "r"
    assert "agent_start" in calls and "agent_complete" in calls


async def test_a_slow_async_observer_is_cut_off_and_counted() -> None:
    async def stuck(event: ProgressEvent) -> None:
        await asyncio.sleep(30)

    oma = make_orchestrator(on_progress=stuck, observer_timeout=0.05)
    result = await asyncio.wait_for(oma.run_agent(agent_config(ScriptedProvider(["ok"])), "hi"), 5)
    assert result.success
    assert oma.progress_stats().timed_out == 2

    never = asyncio.Event()

    async def slow(event: ProgressEvent) -> None:
        await never.wait()  # an observer that never returns: the run must not wait for it

    oma = OpenMultiAgent(on_progress=slow, observer_timeout=0.05)
    run = oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    result = await asyncio.wait_for(run, 60)
    assert result.success


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
    await make_orchestrator(plugins=host).run_agent(agent_config(ScriptedProvider(["ok"])), "hi")
    assert plugin.events == ["agent_start", "agent_complete"]


async def test_sync_observers_see_agent_start_before_the_provider_is_called() -> None:
    order: list[str] = []

    class Recording(ScriptedProvider):
        async def complete(self, request: ProviderRequest) -> ProviderResponse:
            order.append("provider")
            return await super().complete(request)

    await make_orchestrator(on_progress=lambda event: order.append(event.type)).run_agent(
        AgentConfig("a", provider=Recording(["ok"])), "hi"
    )
    assert order == ["agent_start", "provider", "agent_complete"]


async def test_each_observer_gets_its_own_copy_of_the_event() -> None:
    seen: list[dict[str, Any]] = []

    def vandal(event: ProgressEvent) -> None:
        event.data["prompt"] = "changed"
        event.data["extra"] = True

    class Plugin:
        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            seen.append(dict(event.data))

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="watcher")
    provider = ScriptedProvider(["ok"])
    await make_orchestrator(on_progress=vandal, plugins=host).run_agent(
        AgentConfig("a", provider=provider), "hi"
    )
    assert seen[0] == {"prompt": "hi"}
    assert provider.text_of(0) == "hi"


async def test_observers_registered_after_the_first_run_are_picked_up() -> None:
    seen: list[str] = []

    class Plugin:
        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            seen.append(event.type)

    host = PluginHost(load_entrypoints=False)
    oma = make_orchestrator(plugins=host)
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    host.register(Plugin(), name="late")
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    assert seen == ["agent_start", "agent_complete"]
    host.unregister(name="late")
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    assert seen == ["agent_start", "agent_complete"]


async def test_async_and_sync_observers_all_finish_before_run_agent_returns() -> None:
    seen: list[tuple[str, str]] = []

    async def slow(event: ProgressEvent) -> None:
        await asyncio.sleep(0.01)
        seen.append(("async", event.type))

    class Plugin:
        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            seen.append(("sync", event.type))

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="sync")
    oma = make_orchestrator(on_progress=slow, plugins=host)
    await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
    assert sorted(seen) == sorted(
        [
            ("async", "agent_start"),
            ("async", "agent_complete"),
            ("sync", "agent_start"),
            ("sync", "agent_complete"),
        ]
    )
    assert oma.progress_stats().delivered == 4

    seen: list[str] = []

    async def observer(event: ProgressEvent) -> None:
        await asyncio.sleep(0.01)
        seen.append(event.type)

    await make_orchestrator(on_progress=observer).run_agent(
        agent_config(ScriptedProvider(["ok"])), "hi"
    )
    assert seen == ["agent_start", "agent_complete"]

    seen: list[str] = []

    async def observer(event: ProgressEvent) -> None:
        await asyncio.sleep(0.01)
        seen.append(event.type)

    oma = OpenMultiAgent(on_progress=observer)
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    assert "agent_start" in seen and "agent_complete" in seen


async def test_an_observer_raising_cancelled_error_itself_does_not_cancel_the_run() -> None:
    async def rogue_async(event: ProgressEvent) -> None:
        raise asyncio.CancelledError

    def rogue_sync(event: ProgressEvent) -> None:
        raise asyncio.CancelledError

    for rogue in (rogue_async, rogue_sync):
        oma = make_orchestrator(on_progress=rogue)
        result = await oma.run_agent(AgentConfig("a", provider=ScriptedProvider(["ok"])), "hi")
        assert result.success
        assert oma.progress_stats().failed == 2


async def test_sync_observers_are_called_in_order_as_the_event_happens() -> None:
    seen: list[str] = []
    dispatcher = ProgressDispatcher()
    pending: list[asyncio.Task[None]] = []
    dispatcher.emit(_event(), [lambda e: seen.append("one"), lambda e: seen.append("two")], pending)
    assert seen == ["one", "two"]
    assert pending == []
    assert dispatcher.stats.delivered == 2


async def test_each_observer_gets_its_own_data_dicts() -> None:
    received: list[ProgressEvent] = []

    def vandal(event: ProgressEvent) -> None:
        event.data["prompt"] = "changed"
        event.data["extra"]["k"].append(2)
        received.append(event)

    ProgressDispatcher().emit(_event(), [vandal, received.append, received.append], [])
    assert received[1].data == {"prompt": "hi", "extra": {"k": [1]}}
    assert received[2].data == {"prompt": "hi", "extra": {"k": [1]}}
    assert received[1].data is not received[2].data


async def test_a_raising_observer_is_counted_and_the_next_still_runs() -> None:
    seen: list[str] = []

    def broken(event: ProgressEvent) -> None:
        raise RuntimeError("boom")

    dispatcher = ProgressDispatcher()
    dispatcher.emit(_event(), [broken, lambda e: seen.append(e.type)], [])
    assert seen == ["agent_start"]
    assert dispatcher.stats.failed == 1


async def test_async_observers_are_awaited_by_drain() -> None:
    seen: list[str] = []

    async def slow(event: ProgressEvent) -> None:
        await asyncio.sleep(0.01)
        seen.append(event.type)

    dispatcher = ProgressDispatcher()
    pending: list[asyncio.Task[None]] = []
    dispatcher.emit(_event(), [slow], pending)
    assert seen == []
    await dispatcher.drain(pending)
    assert seen == ["agent_start"]
    assert dispatcher.stats.delivered == 1


async def test_a_slow_async_observer_times_out_and_is_counted() -> None:
    never = asyncio.Event()

    async def stuck(event: ProgressEvent) -> None:
        await never.wait()

    dispatcher = ProgressDispatcher(timeout=0.05)
    pending: list[asyncio.Task[None]] = []
    dispatcher.emit(_event(), [stuck], pending)
    await asyncio.wait_for(dispatcher.drain(pending), 60)  # drained by the timeout, not the wait
    assert dispatcher.stats.timed_out == 1


async def test_a_raising_async_observer_is_counted() -> None:
    async def broken(event: ProgressEvent) -> None:
        raise ValueError("nope")

    dispatcher = ProgressDispatcher()
    pending: list[asyncio.Task[None]] = []
    dispatcher.emit(_event(), [broken], pending)
    await dispatcher.drain(pending)
    assert dispatcher.stats.failed == 1


async def test_cancel_stops_running_async_observers() -> None:
    async def stuck(event: ProgressEvent) -> None:
        await asyncio.sleep(10)

    pending: list[asyncio.Task[None]] = []
    ProgressDispatcher().emit(_event(), [stuck], pending)
    tasks = list(pending)
    await ProgressDispatcher.cancel(pending)
    assert all(task.cancelled() for task in tasks)


async def test_an_observer_mutating_the_event_changes_nothing() -> None:
    def meddle(event: ProgressEvent) -> None:
        if event.type == "agent_start" and isinstance(event.data, dict):
            event.data["prompt"] = "meddled"

    provider = ScriptedProvider(["r"])
    await OpenMultiAgent(on_progress=meddle).run_agent(
        AgentConfig(name="v", provider=provider), "hi"
    )
    assert dump_messages(provider.requests[0].messages) == [user_turn("hi")]


async def test_package_progress_hooks_observe_run_agent() -> None:
    recorder = HookRecorder()
    oma = OpenMultiAgent(plugins=builtin_host(recorder))
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    types = [e.type for e in recorder.progress]
    assert "agent_start" in types and "agent_complete" in types
    assert len(recorder.before_run) == 1


async def test_sync_observers_see_events_in_order_as_they_happen() -> None:
    events: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=events.append)
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    types = [e.type for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_complete"


async def test_on_progress_runs_before_the_package_observers_for_each_event() -> None:
    order: list[str] = []

    class Hook:
        @hookimpl
        def oma_progress(self, event: Any) -> None:
            order.append(f"hook:{event.type}")

    oma = OpenMultiAgent(
        on_progress=lambda event: order.append(f"on:{event.type}"), plugins=builtin_host(Hook())
    )
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    assert order[:2] == ["on:agent_start", "hook:agent_start"]
    assert order[-2:] == ["on:agent_complete", "hook:agent_complete"]


async def test_one_observer_mutating_its_event_does_not_change_what_another_sees() -> None:
    seen: list[dict[str, Any]] = []

    class Watcher:
        @hookimpl
        def oma_progress(self, event: ProgressEvent) -> None:
            if event.type == "agent_start":
                seen.append(dict(event.data))

    def meddle(event: ProgressEvent) -> None:
        event.data.clear()

    oma = OpenMultiAgent(on_progress=meddle, plugins=builtin_host(Watcher()))
    conversation = reference_conversation()
    await oma.run_agent(AgentConfig(name="v"), conversation)
    assert seen == [{"messages": load_messages(conversation)}]
