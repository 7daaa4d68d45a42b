"""The built-in progress middleware: a run's own progress events, as the run goes.

A wrapper of ``oma_run`` reports ``agent_start`` as the run starts, then, as it ends (before
its ``done`` is handed on, so before ``run_agent`` returns), ``error`` for a failed run and
``agent_complete``, and awaits the async observers the run started (each bounded by
``observer_timeout``); a run cancelled from outside stops them. A wrapper of ``oma_tool_call``
reports ``warning`` for a tool that returned an error result. Both report to
``RunSettings.progress`` and do nothing without it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any

from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from .._calls import RunContext, RunEvents, ToolInvocation
    from .._results import StreamEvent
    from ..messages import ToolResultBlock

__all__ = ["oma_run", "oma_tool_call"]


@hookimpl(wrapper=True)
def oma_run(run: RunContext) -> Generator[None, Any, Any]:
    """``agent_start``, then ``error`` (failed) and ``agent_complete`` before ``done``."""
    events = yield
    emit = run.settings.progress
    if emit is None:
        return events
    return _reported(events, run, emit)


async def _reported(
    events: RunEvents, run: RunContext, emit: Callable[[str, dict[str, Any]], None]
) -> AsyncGenerator[StreamEvent, None]:
    input = run.input
    emit("agent_start", {"prompt": input} if isinstance(input, str) else {"messages": input})
    try:
        async for event in events:
            if event.type == "done":
                result = event.data
                failure = result.status.error
                if failure is not None:
                    emit("error", {"error": failure, "code": result.status.code})
                emit(
                    "agent_complete",
                    {
                        "success": result.success,
                        "output": result.output,
                        "usage": result.usage,
                        "status": result.status.code,
                    },
                )
                if getattr(emit, "pending", None):  # async observers still running
                    await emit.finish()  # type: ignore[attr-defined]
            yield event
    except BaseException:  # cancelled from outside, or closed early: stop the observers
        cancel = getattr(emit, "cancel", None)
        if cancel is not None:
            await cancel()
        await events.aclose()
        raise


@hookimpl(wrapper=True)
def oma_tool_call(call: ToolInvocation, run: RunContext) -> Generator[None, Any, Any]:
    """A ``warning`` event for a tool that returned an error result."""
    result = yield
    emit = run.settings.progress
    if emit is None:
        return result
    return _warn_on_error(result, call, emit)


async def _warn_on_error(
    result: Awaitable[ToolResultBlock],
    call: ToolInvocation,
    emit: Callable[[str, dict[str, Any]], None],
) -> ToolResultBlock:
    outcome = await result
    if outcome.is_error:
        name = call.block.name
        emit("warning", {"message": f"tool {name!r} returned an error result", "tool": name})
    return outcome
