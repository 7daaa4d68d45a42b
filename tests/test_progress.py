"""Progress delivery: per-observer copies, order, time limits, failures counted and skipped."""

from __future__ import annotations

import asyncio

from oma_core import ProgressEvent
from oma_core._delivery import ProgressDispatcher


def _event() -> ProgressEvent:
    return ProgressEvent("agent_start", "a", None, {"prompt": "hi", "extra": {"k": [1]}})


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
    async def stuck(event: ProgressEvent) -> None:
        await asyncio.sleep(10)

    dispatcher = ProgressDispatcher(timeout=0.05)
    pending: list[asyncio.Task[None]] = []
    dispatcher.emit(_event(), [stuck], pending)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await dispatcher.drain(pending)
    assert loop.time() - started < 1.0
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
