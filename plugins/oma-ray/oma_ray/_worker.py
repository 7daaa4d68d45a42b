"""The worker's side: one attempt of one task, run on a Ray worker, streamed back as it goes.

``run_attempt`` is a Ray generator task. It runs the agent with the worker's own
``OpenMultiAgent`` (built from the driver's ``RunDefaults``, on the worker's installed
plugins) on an event loop in a thread, and yields, in order, what the driver needs:

- ``("event", ProgressEvent)`` for each progress event of the run, as it happens;
- ``("usage", Usage)`` after each model call that completed (so the tokens an attempt spent
  are known to the driver even if this process dies before the run ends);
- ``("result", RunResult)`` last.

Ray cancelling the task interrupts the generator's thread; the run is then cancelled on its
loop (so the provider's connections close as they would locally) before the task ends.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
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
    Usage,
    hookimpl,
)
from oma_core.toolkit import ModelCall, ResponseComplete, RunContext, RunDefaults, RunSettings

from ._budget import RemoteBudget

__all__ = ["run_attempt"]

#: Where this thread's run reports each completed call's usage (set per attempt).
_METER: contextvars.ContextVar[Callable[[Usage], None] | None] = contextvars.ContextVar(
    "oma_ray_meter", default=None
)
_HOST: list[PluginHost] = []
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


def run_attempt(
    config: AgentConfig,
    prompt: str,
    task: str,
    defaults: RunDefaults,
    ledger: Any | None,
    caps: tuple[float | None, float | None],
) -> Iterator[tuple[str, Any]]:
    """Run one attempt; yield its events, its calls' usage and, last, its ``RunResult``."""
    out: queue.Queue[Any] = queue.Queue()
    budget = None if ledger is None else RemoteBudget(ledger, *caps)
    loop = asyncio.new_event_loop()
    job = loop.create_task(_run(config, prompt, task, defaults, budget, out))

    def drive() -> None:
        try:
            result = loop.run_until_complete(job)
        except BaseException as error:  # cancelled (the driver cancelled) or a bug
            out.put(("raise", error))
        else:
            out.put(("result", result))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            out.put(_DONE)

    thread = threading.Thread(target=drive, name="oma-ray-run", daemon=True)
    thread.start()
    try:
        while True:
            try:
                item = out.get(timeout=0.05)  # short waits: Ray's interrupt lands between them
            except queue.Empty:
                continue
            if item is _DONE:
                break
            if item[0] == "raise":
                raise item[1]
            yield item
    except BaseException:  # KeyboardInterrupt / TaskCancelledError: Ray cancelled the task
        if not job.done():
            loop.call_soon_threadsafe(job.cancel)
        thread.join(timeout=30)
        raise
    thread.join()
