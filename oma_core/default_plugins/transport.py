"""The innermost call middleware: where a model call reaches its provider or backend.

Registered like any plugin, ``trylast``, so every wrapper (budgets, tracing, a cache, a log)
sits around it. It turns a ``ModelCall`` into the call's events — through the provider's
``stream`` when the caller streams (or the provider has only that), through ``complete``
otherwise — and a ``ToolInvocation`` into the tool's result. Nothing is sent until the events
are iterated, and the provider's or backend's stream is closed however iteration ends.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from .._tool_context import running
from ..errors import BackendError
from ..hookspecs import hookimpl
from ..messages import LLMMessage, TextBlock
from ..providers import ProviderResponse, ResponseComplete, TextDelta

if TYPE_CHECKING:
    from .._calls import CallEvent, CallEvents, ModelCall, RunContext, ToolInvocation
    from ..messages import ToolResultBlock

__all__ = ["oma_model_call", "oma_tool_call"]


@hookimpl(trylast=True)
def oma_model_call(call: ModelCall, run: RunContext) -> CallEvents:
    if call.kind == "backend":
        return _backend_events(call)
    provider = call.target
    if getattr(provider, "complete", None) is not None and not (
        call.stream and hasattr(provider, "stream")
    ):
        return _Whole(call)  # type: ignore[return-value]
    # The provider's own stream, no generator of ours around it: the run stops reading at
    # ``ResponseComplete`` and closes it however iteration ends (one hop fewer per chunk).
    return provider.stream(call.request)  # type: ignore[no-any-return]


@hookimpl(trylast=True)
def oma_tool_call(call: ToolInvocation, run: RunContext) -> Awaitable[ToolResultBlock]:
    from ..tools import call_tool

    # run inside the call's context: ``current_tool_call``, ``report_tool_progress``
    return running(call.block, run.settings.progress, call_tool(call.tools, call.block))


class _Whole:
    """The events of a call answered whole (``complete``): one ``ResponseComplete``.

    An async iterator rather than an async generator: the common, non-streaming call is the
    hot path, and this is the cheap shape of "one awaited answer".
    """

    __slots__ = ("_call", "_done")

    def __init__(self, call: ModelCall) -> None:
        self._call = call
        self._done = False

    def __aiter__(self) -> _Whole:
        return self

    async def __anext__(self) -> ResponseComplete:
        if self._done:
            raise StopAsyncIteration
        self._done = True
        call = self._call  # its request is read now: a wrapper may have replaced it
        response: ProviderResponse = await call.target.complete(call.request)
        return ResponseComplete(response)

    async def aclose(self) -> None:
        self._done = True


async def _backend_events(call: ModelCall) -> AsyncGenerator[CallEvent, None]:
    """One turn of an external agent, ended by a ``ResponseComplete`` of its answer."""
    from ..backends import BackendResult

    backend: Any = call.target
    assert call.backend_request is not None
    parts: list[str] = []
    async with aclosing(backend.run(call.backend_request)) as events:
        async for event in events:
            if isinstance(event, BackendResult):
                output = event.output if event.output or not parts else "".join(parts)
                message = LLMMessage("assistant", (TextBlock(output),))
                yield ResponseComplete(ProviderResponse(message, event.usage, event.stop_reason))
                return
            if isinstance(event, TextDelta):
                parts.append(event.text)
            yield event
    raise BackendError(
        f"the external agent backend {call.provider!r} ended without a result",
        backend=call.provider,
    )
