"""Delivering progress events to observers, one at a time, each failure isolated.

The rules are stated in ``oma_core.progress``: sync observers in order, async ones started at
once and awaited with a time limit; one that raises or times out is counted and skipped (the
containment itself is ``oma_core._isolation``'s, shared with the evaluation's scorers and sinks).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from ._isolation import settle
from .progress import ProgressEvent, ProgressObserver, ProgressStats

__all__ = ["ProgressDispatcher", "RunEmitter"]

_log = logging.getLogger("oma.progress")


def _fresh(value: Any) -> Any:
    """A copy of ``value`` in which every dict and list is new; immutable leaves are shared."""
    if isinstance(value, dict):
        return {key: _fresh(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_fresh(item) for item in value]
    if isinstance(value, tuple) and any(isinstance(item, dict | list) for item in value):
        return tuple(_fresh(item) for item in value)
    return value


class RunEmitter:
    """Reports the events of one run: ``emit(type, data)``; the async observers it started
    are awaited by ``finish`` (each bounded by the dispatcher's time limit) or stopped by
    ``cancel`` (the run was cancelled from outside)."""

    __slots__ = ("_agent", "_dispatcher", "_observers", "_one", "_run_id", "_task", "pending")

    def __init__(
        self,
        dispatcher: ProgressDispatcher,
        observers: Sequence[ProgressObserver],
        agent: str | None,
        task: str | None,
        run_id: str | None,
    ) -> None:
        self._dispatcher = dispatcher
        self._observers = observers
        # With a single observer (the common case) the event goes straight to it: no copy.
        self._one = observers[0] if len(observers) == 1 else None
        self._agent = agent
        self._task = task
        self._run_id = run_id
        self.pending: list[asyncio.Task[None]] = []

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        event = ProgressEvent(kind, self._agent, self._task, data, self._run_id)
        one = self._one
        if one is None:
            self._dispatcher.emit(event, self._observers, self.pending)
            return
        try:  # the common case, inline: one sync observer
            outcome = one(event)
        except (Exception, asyncio.CancelledError) as error:
            self._dispatcher.failed(one, error)
            return
        if outcome is None:
            self._dispatcher.stats.delivered += 1
        else:
            self._dispatcher.settle(one, outcome, self.pending)

    async def finish(self) -> None:
        """Wait for the async observers started so far."""
        if self.pending:
            await self._dispatcher.drain(self.pending)

    async def cancel(self) -> None:
        """Stop the async observers still running."""
        await ProgressDispatcher.cancel(self.pending)


class ProgressDispatcher:
    """Delivers events to observers and counts their failures; one per ``OpenMultiAgent``.

    ``emit`` is synchronous so it can be called from inside the agent loop (observers, retry
    callbacks); the async observers it starts are collected in ``pending`` and awaited by
    ``drain``, which the orchestrator calls before a run returns.
    """

    def __init__(self, timeout: float | None = 5.0) -> None:
        self.timeout = timeout
        self.stats = ProgressStats()

    def emitter(
        self,
        observers: Sequence[ProgressObserver],
        agent: str | None,
        task: str | None,
        run_id: str | None,
    ) -> RunEmitter:
        """``emit(type, data)`` for one run: builds the event and delivers it like ``emit``;
        the run's progress middleware awaits ``finish()`` (or ``cancel()``) as the run ends."""
        return RunEmitter(self, observers, agent, task, run_id)

    def emit(
        self,
        event: ProgressEvent,
        observers: Sequence[ProgressObserver],
        pending: list[asyncio.Task[None]],
    ) -> None:
        """Call every observer with its own copy of ``event``; start async ones as tasks.

        The dispatcher takes ``event`` over: the first observer may receive it as it is, so
        the caller must not keep using its ``data``.
        """
        if len(observers) == 1:  # the common case, kept cheap: no copy needed
            self.deliver(observers[0], event, pending)
            return
        copies = [event]
        for _ in range(len(observers) - 1):  # copied up front: observer 1 may mutate its copy
            copies.append(
                ProgressEvent(event.type, event.agent, event.task, _fresh(event.data), event.run_id)
            )
        for observer, copy in zip(observers, copies, strict=False):
            self.deliver(observer, copy, pending)

    def deliver(
        self, observer: ProgressObserver, event: ProgressEvent, pending: list[asyncio.Task[None]]
    ) -> None:
        """Call one observer with ``event`` (its own copy), contained; an async one is started
        and added to ``pending``."""
        try:
            outcome = observer(event)
        except (Exception, asyncio.CancelledError) as error:
            self.failed(observer, error)
            return
        self.settle(observer, outcome, pending)

    def settle(
        self, observer: ProgressObserver, outcome: object, pending: list[asyncio.Task[None]]
    ) -> None:
        """Count what ``observer`` returned for an event: nothing (delivered), or an awaitable,
        started as a task bounded by ``timeout`` and added to ``pending``."""
        if outcome is not None and inspect.isawaitable(outcome):
            task = asyncio.ensure_future(self._bounded(observer, outcome))
            if inspect.iscoroutine(outcome):
                # Cancelled before it started: close it so it is not reported as never awaited.
                task.add_done_callback(_closer(outcome))
            pending.append(task)
        else:
            self.stats.delivered += 1

    async def _bounded(self, observer: ProgressObserver, outcome: Awaitable[object]) -> None:
        settled = await settle(outcome, self.timeout)
        if settled.timed_out:
            self.stats.timed_out += 1
            _log.warning("progress observer %s timed out after %s s", _name(observer), self.timeout)
        elif settled.error is not None:
            self.failed(observer, settled.error)
        else:
            self.stats.delivered += 1

    async def drain(self, pending: list[asyncio.Task[None]]) -> None:
        """Wait for the async observers started so far (each is bounded by ``timeout``)."""
        while pending:
            batch = list(pending)
            pending.clear()
            try:
                await asyncio.gather(*batch)
            except asyncio.CancelledError:
                for task in batch:
                    task.cancel()
                await asyncio.gather(*batch, return_exceptions=True)
                raise

    @staticmethod
    async def cancel(pending: list[asyncio.Task[None]]) -> None:
        """Stop the async observers still running (the run was cancelled from outside)."""
        batch = list(pending)
        pending.clear()
        for task in batch:
            task.cancel()
        if batch:
            await asyncio.gather(*batch, return_exceptions=True)

    def failed(self, observer: ProgressObserver, error: BaseException) -> None:
        """Count and log (its type only) an error ``observer`` raised."""
        self.stats.failed += 1
        # The type only: an observer's error text may quote the event, i.e. the input.
        _log.warning("progress observer %s raised %s", _name(observer), type(error).__name__)


def _name(observer: object) -> str:
    return str(getattr(observer, "__qualname__", None) or type(observer).__name__)


def _closer(coroutine: Coroutine[Any, Any, Any]) -> Callable[[object], None]:
    def close(_task: object) -> None:
        coroutine.close()

    return close
