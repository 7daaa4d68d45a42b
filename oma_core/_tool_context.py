"""The tool call being run, as the tool sees it: which call it is, and where its progress goes.

The built-in tool-call middleware (``default_plugins/transport``) runs every tool inside
``running(block, emit)``, a context variable that follows the call into the tool's own
coroutine, the threads ``asyncio.to_thread`` starts for a sync tool, and the tasks it creates.
So a tool (or a toolset's tool, such as an MCP server's) can ask ``current_tool_call()`` for
its ``ToolUseBlock`` and report progress with ``report_tool_progress``, without a parameter
for either in its signature. Outside a tool call both are inert: None, and nothing reported.
"""

from __future__ import annotations

import asyncio
import math
import numbers
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from .errors import ToolError

if TYPE_CHECKING:
    from .messages import ToolUseBlock

__all__ = ["current_tool_call", "report_tool_progress", "running"]

T = TypeVar("T")

#: ``_settings.ProgressEmitter``, not imported (``_settings`` imports ``progress``, our user)
_Emitter = Callable[[str, dict[str, Any]], None]


@attrs.frozen
class _Running:
    block: ToolUseBlock
    emit: _Emitter | None
    loop: asyncio.AbstractEventLoop


_current: ContextVar[_Running | None] = ContextVar("oma_tool_call", default=None)


def current_tool_call() -> ToolUseBlock | None:
    """The ``ToolUseBlock`` of the tool call being run, inside a tool; None elsewhere."""
    running = _current.get()
    return None if running is None else running.block


def report_tool_progress(
    progress: float, total: float | None = None, message: str | None = None
) -> None:
    """Report how far the running tool has got, as a ``tool_progress`` progress event.

    Its data is ``{"tool": name, "call_id": id, "progress": progress, "total": total,
    "message": message}``. Does nothing outside a tool call, or when nobody observes the run
    (no ``on_progress``, no ``oma_progress`` plugin). Callable from the thread of a sync
    tool: the event is then handed to the run's event loop, in order.
    """
    if not _number(progress) or (total is not None and not _number(total)):
        raise ToolError(
            f"report_tool_progress takes numbers, got progress={progress!r}, total={total!r}"
        )
    if message is not None and not isinstance(message, str):
        raise ToolError(f"report_tool_progress's message must be a str, got {message!r}")
    running = _current.get()
    if running is None or running.emit is None:
        return
    block = running.block
    data = {
        "tool": block.name,
        "call_id": block.id,
        "progress": progress,
        "total": total,
        "message": message,
    }
    try:
        in_loop = asyncio.get_running_loop() is running.loop
    except RuntimeError:  # a worker thread: no loop of its own
        in_loop = False
    if in_loop:
        running.emit("tool_progress", data)
    elif not running.loop.is_closed():
        running.loop.call_soon_threadsafe(running.emit, "tool_progress", data)


async def running(block: ToolUseBlock, emit: _Emitter | None, call: Awaitable[T]) -> T:
    """Await ``call`` (a tool's invocation) as the tool call ``block`` of a run reporting
    to ``emit``; the context is reset after, whatever happens."""
    token = _current.set(_Running(block, emit, asyncio.get_running_loop()))
    try:
        return await call
    finally:
        _current.reset(token)


def _number(value: Any) -> bool:
    """A finite real number (numpy's too), not a bool."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )
