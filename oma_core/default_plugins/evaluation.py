"""The built-in evaluation middleware: a finished run's sample goes to online evaluation.

A wrapper of ``oma_run``: when the run ends (its ``done``), the input, the output, the run id,
the metadata, the status and the agent's name are queued on ``RunSettings.evaluator``
(``OpenMultiAgent``'s evaluator), which samples, scores in the background and never blocks
or fails the run. A run cancelled from outside is not sampled.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import TYPE_CHECKING, Any

from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from .._calls import RunContext, RunEvents
    from .._results import StreamEvent

__all__ = ["oma_run"]


@hookimpl(wrapper=True)
def oma_run(run: RunContext) -> Generator[None, Any, Any]:
    """Queue the run's sample as it ends."""
    events = yield
    if run.settings.evaluator is None:
        return events
    return _sampled(events, run)


async def _sampled(events: RunEvents, run: RunContext) -> AsyncGenerator[StreamEvent, None]:
    evaluator = run.settings.evaluator
    assert evaluator is not None
    try:
        async for event in events:
            if event.type == "done":
                result = event.data
                evaluator.submit(
                    run.input,
                    result.output,
                    run_id=run.run_id,
                    metadata=run.settings.metadata,
                    status=result.status.code,
                    agent=run.config.name,
                )
            yield event
    except BaseException:
        await events.aclose()
        raise
