"""The worker's side: one attempt of one task, run on a Ray worker, streamed back as it goes.

``run_attempt`` is a Ray generator task. It runs the agent with the worker's own
``OpenMultiAgent`` (built from the driver's ``RunDefaults``, on the worker's installed
plugins) on an event loop in a thread, and yields, in order, lists of what the driver needs
(one list holds what happened since the last; the end of a run is one list):

- ``("event", ProgressEvent)`` for each progress event of the run, as it happens;
- ``("usage", Usage)`` after each model call that completed (so the tokens an attempt spent
  are known to the driver even if this process dies before the run ends);
- ``("budget", (used_tokens, used_cost))`` after each charge of a shared budget: the ledger's
  figures then;
- ``("result", RunResult)`` last.

The worker process keeps one event loop in a thread for its life. Ray cancelling the task
interrupts the generator; the run is then cancelled on that loop (so the provider's
connections close as they would locally) before the task ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import signal
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from oma_core import (
    AgentConfig,
    Budget,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    RunResult,
    RunSettings,
    Usage,
    hookimpl,
)
from oma_core.toolkit import ModelCall, ResponseComplete, RunContext, RunDefaults

from ._budget import RemoteBudget

__all__ = ["run_attempt"]

#: Where this thread's run reports each completed call's usage (set per attempt).
_METER: contextvars.ContextVar[Callable[[Usage], None] | None] = contextvars.ContextVar(
    "oma_ray_meter", default=None
)
_HOST: list[PluginHost] = []
_LOOP: list[asyncio.AbstractEventLoop] = []
_DONE = object()


class _Meter:
    """Call middleware registered on the worker's host only: reports each call's usage."""

    @hookimpl(wrapper=True)
    def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
        events = yield
        report = _METER.get()
        if report is None:
            return events
        return _metered(events, report)


async def _metered(events: Any, report: Callable[[Usage], None]) -> Any:
    async for event in events:
        if isinstance(event, ResponseComplete) and isinstance(event.response.usage, Usage):
            report(event.response.usage)
        yield event


def _host() -> PluginHost:
    """This worker process's plugin host: its installed plugins, plus the meter."""
    if not _HOST:
        host = PluginHost()
        host.register(_Meter(), name="oma_ray.meter")
        _HOST.append(host)
    return _HOST[0]


async def _run(
    config: AgentConfig,
    prompt: str,
    task: str,
    defaults: RunDefaults,
    budget: Budget | None,
    out: queue.Queue[Any],
) -> RunResult:
    _METER.set(lambda usage: out.put(("usage", usage)))

    def forward(event: ProgressEvent) -> None:
        out.put(("event", event))

    oma = OpenMultiAgent(on_progress=forward, plugins=_host(), **defaults.keywords())
    try:
        return await oma.run_agent(
            config,
            prompt,
            metadata={"task": task},
            budget=budget,
            settings=RunSettings(task=task),
        )
    finally:
        await oma.aclose()


def _loop() -> asyncio.AbstractEventLoop:
    """This worker process's event loop, running in a thread of its own for the process's
    life (a Ray worker runs one task at a time; starting a loop per attempt costs more)."""
    if not _LOOP:
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="oma-ray-loop", daemon=True).start()
        _LOOP.append(loop)
    return _LOOP[0]


def run_attempt(
    config: AgentConfig,
    prompt: str,
    task: str,
    defaults: RunDefaults,
    ledger: Any | None,
    caps: tuple[float | None, float | None],
) -> Iterator[list[tuple[str, Any]]]:
    """Run one attempt; yield its events, its calls' usage and, last, its ``RunResult``."""
    _interruptible()
    out: queue.Queue[Any] = queue.Queue()
    budget = None
    if ledger is not None:
        budget = RemoteBudget(ledger, *caps, on_charge=lambda state: out.put(("budget", state)))

    async def attempt() -> None:
        try:
            result = await _run(config, prompt, task, defaults, budget, out)
        except BaseException as error:  # cancelled (the driver cancelled) or a bug
            out.put(("raise", error))
        else:
            out.put(("result", result))
        finally:
            out.put(_DONE)

    job = asyncio.run_coroutine_threadsafe(attempt(), _loop())
    finished = False
    try:
        while not finished:
            try:
                item = out.get(timeout=0.05)  # short waits: Ray's interrupt lands between them
            except queue.Empty:
                continue
            batch = [item]  # and whatever else already happened: one object, not several
            while True:
                try:
                    batch.append(out.get_nowait())
                except queue.Empty:
                    break
            if batch[-1] is _DONE:
                finished = True
                batch.pop()
            for kind, value in batch:
                if kind == "raise":
                    raise value
            if batch:
                yield batch
    except BaseException:  # KeyboardInterrupt / TaskCancelledError: Ray cancelled the task
        if not finished:
            job.cancel()  # cancels the run on its loop: its finally blocks and cleanup run
            _wait_for_cleanup(out)
        raise


def _wait_for_cleanup(out: queue.Queue[Any]) -> None:
    """Until the cancelled run's cleanup is done (up to 30 s). A further interrupt (Ray may
    deliver its cancellation more than once) does not cut the wait short: the worker must not
    move on, or exit, while the run's ``finally`` blocks are still to run."""
    for _ in range(600):
        try:
            if out.get(timeout=0.05) is _DONE:
                return
        except queue.Empty:
            continue
        except KeyboardInterrupt:
            continue


def _interruptible() -> None:
    """Let ``ray.cancel`` reach this task. Ray interrupts a running task the way a SIGINT
    would, which does nothing in a process that ignores SIGINT; a worker inherits that from a
    cluster started by a driver that ignores it (one run in the background, as CI runs are).
    Python's own handler is restored, in the task's (main) thread only."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL):
        signal.signal(signal.SIGINT, signal.default_int_handler)
