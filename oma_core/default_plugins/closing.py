"""The built-in closing middleware: what a one-off agent's run made is closed as it ends.

``OpenMultiAgent.run_agent`` runs a fresh agent made for that run; a provider the run made
(one no pool shares) and a backend it started are closed when the run ends, before its
outcome is reported — also when it fails or is cancelled. An agent's own runs leave them
open for the next run (``Agent.aclose`` closes them).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Generator
from typing import TYPE_CHECKING, Any

from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from .._calls import RunContext, RunEvents
    from .._results import StreamEvent

__all__ = ["oma_run"]

_log = logging.getLogger("oma.agent")


@hookimpl(wrapper=True, trylast=True)
def oma_run(run: RunContext) -> Generator[None, Any, Any]:
    """Close the run's target when the run ends, if it was made for this run."""
    events = yield
    if not getattr(run.target, "close_after_run", False):
        return events
    return _closing(events, run)


async def _closing(events: RunEvents, run: RunContext) -> AsyncGenerator[StreamEvent, None]:
    closed = False
    try:
        async for event in events:
            if event.type == "done":
                closed = True
                await _close(run)
            yield event
    finally:
        if not closed:
            await events.aclose()
            await _close(run)


async def _close(run: RunContext) -> None:
    try:
        await run.target.aclose()
    except Exception as error:  # closing is best effort; the run's outcome stands
        _log.warning("closing agent %r failed: %s", run.config.name, type(error).__name__)
