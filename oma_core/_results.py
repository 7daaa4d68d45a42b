"""What a run hands back: ``RunResult`` and its ``RunStatus``, or ``StreamEvent``s.

``AgentStream`` is the object ``Agent.stream`` returns: an async iterator and an async context
manager in one, so ``async with agent.stream(x) as events`` closes the provider stream for sure.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias

import attrs

from .messages import LLMMessage
from .providers import Usage

__all__ = [
    "AgentStream",
    "EventType",
    "OutputT",
    "RunResult",
    "RunStatus",
    "StatusCode",
    "StreamEvent",
]

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from ._approvals import ApprovalRequest

    #: The output type of an agent and its results (``AgentConfig.output_type``); ``Any``
    #: when none is given, so a bare ``Agent``/``RunResult`` annotation means ``[Any]``.
    OutputT = TypeVar("OutputT", default=Any)
else:  # the default is for type checkers only: typing_extensions is not imported at run time
    from typing import TypeVar

    OutputT = TypeVar("OutputT")

StatusCode: TypeAlias = Literal["ok", "error", "timeout", "budget_exhausted", "suspended"]
EventType: TypeAlias = Literal[
    "text", "reasoning", "tool_use", "tool_result", "partial", "error", "done"
]


@attrs.frozen
class RunStatus:
    """How a run ended: ``code`` is ok / error / timeout / budget_exhausted, or suspended (it
    waits for approvals: ``RunResult.pending``); ``error`` is the exception that ended it (None
    when ok or suspended)."""

    code: StatusCode = "ok"
    error: BaseException | None = None


@attrs.frozen
class RunResult(Generic[OutputT]):
    """The outcome of one run.

    ``output`` is the text of the last assistant turn; ``messages`` the turns this run produced
    (assistant turns and tool-result turns, not the input); ``usage`` sums every model call,
    retried and cut-short attempts included. ``structured`` is the validated output when the
    run had an output type (an instance of it; a dict or list for a JSON Schema dict), else
    None; ``output`` stays the raw text. ``run_id`` is the run's id (what ``resume`` takes),
    set on the results of ``OpenMultiAgent.run_agent`` and ``resume`` with a run store (None
    without one); ``pending`` the ``ApprovalRequest``s a suspended run waits for. ``model`` is
    ``provider:model`` of the model whose reply came last (a fallback's when one answered;
    an external backend's kind), None when no model replied in this run.
    """

    success: bool
    output: str
    messages: list[LLMMessage]
    usage: Usage = Usage()
    status: RunStatus = RunStatus()
    structured: OutputT | None = None
    run_id: str | None = None
    pending: tuple[ApprovalRequest, ...] = ()
    model: str | None = None


@attrs.frozen(init=False)
class StreamEvent:
    """One event of ``Agent.stream``.

    ``text``/``reasoning``: a str delta; ``tool_use``: a ``ToolUseBlock``; ``tool_result``: a
    ``ToolResultBlock``; ``partial`` (runs with an output type): the JSON value of the reply so
    far (dicts, lists and scalars, an unfinished string as far as it got), each new one after a
    text event (in tool mode, a piece of the output tool's arguments) that changed it, checked
    leniently (only that it parses); ``error``: the exception that failed the run; ``done``
    (always last, exactly once): the ``RunResult``, whose ``structured`` is the strictly
    validated output.
    """

    type: EventType
    data: Any = None

    def __init__(self, type: EventType, data: Any = None) -> None:
        # One per streamed chunk: the fields set through their slots, as attrs' frozen
        # ``__init__`` does, with two calls fewer.
        _SET_TYPE(self, type)
        _SET_DATA(self, data)


_SET_TYPE = StreamEvent.__dict__["type"].__set__
_SET_DATA = StreamEvent.__dict__["data"].__set__


class AgentStream:
    """An async iterator of ``StreamEvent`` that is also an async context manager.

    Nothing starts before the first event is requested; leaving the ``async with`` block (or
    ``aclose``) stops the run and closes the provider or backend stream. ``aclose`` may be
    called from any task, once or more, during or after iteration: called while another task
    waits for the next event, it interrupts that wait (that task's ``async for`` simply ends)
    and returns once the run has stopped.
    """

    __slots__ = ("_closing", "_gen", "_reader", "_start", "_stopped")

    def __init__(
        self,
        gen: AsyncIterator[StreamEvent] | None = None,
        *,
        start: Callable[[], AsyncIterator[StreamEvent]] | None = None,
    ) -> None:
        # ``start`` makes the events when the first one is requested (a run starts then),
        # without a generator of its own between them and the caller.
        self._gen: Any = gen
        self._start = start
        self._reader: asyncio.Task[Any] | None = None
        self._closing = False
        self._stopped: asyncio.Event | None = None

    def __aiter__(self) -> AgentStream:
        return self

    async def __anext__(self) -> StreamEvent:
        if self._closing:
            raise StopAsyncIteration
        gen = self._gen
        if gen is None:
            assert self._start is not None, "AgentStream needs gen or start"
            gen = self._gen = self._start()
        task = asyncio.current_task()
        self._reader = task
        try:
            event: StreamEvent = await gen.__anext__()
            return event
        except asyncio.CancelledError:
            # Cancelled by ``aclose`` from another task (and by nobody else): the run stopped.
            if self._closing and task is not None and task.uncancel() == 0:
                raise StopAsyncIteration from None
            raise
        finally:
            self._reader = None
            if self._stopped is not None:
                self._stopped.set()

    async def aclose(self) -> None:
        """Stop the run if it is still going and close the provider or backend stream."""
        self._closing = True
        reader = self._reader
        if reader is not None and reader is not asyncio.current_task():
            stopped = self._stopped = asyncio.Event()
            reader.cancel()
            await stopped.wait()
        if self._gen is not None:
            await self._gen.aclose()

    async def __aenter__(self) -> AgentStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
