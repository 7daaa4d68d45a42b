"""A call log as middleware: one record per model-call attempt and per tool call.

Inert for everyone else: it records only runs whose metadata has ``"log_calls": True``.
Written as a third party would, against ``oma_core.toolkit`` only. It is ``tryfirst``, so it
sits outside the core's budgets and sees a call even when a budget refuses it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Generator
from contextlib import aclosing
from typing import Any

from oma_core import ToolResultBlock, hookimpl
from oma_core.toolkit import (
    CallEvent,
    ModelCall,
    ResponseComplete,
    RunContext,
    TextDelta,
    ToolInvocation,
)

#: One dict per call: what a log plugin would write to a file or a database.
RECORDS: list[dict[str, Any]] = []


@hookimpl(wrapper=True, tryfirst=True)
def oma_model_call(call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
    events = yield
    if not run.metadata.get("log_calls"):
        return events
    return _logged(events, call, run)


async def _logged(
    events: AsyncGenerator[CallEvent, None], call: ModelCall, run: RunContext
) -> AsyncGenerator[CallEvent, None]:
    record: dict[str, Any] = {
        "kind": call.kind,
        "run_id": run.run_id,
        "agent": run.agent,
        "provider": call.provider,
        "attempt": call.attempt,
        "chunks": 0,
        "outcome": "unfinished",
    }
    RECORDS.append(record)
    try:
        async with aclosing(events) as inner:
            async for event in inner:
                if isinstance(event, TextDelta):
                    record["chunks"] += 1
                elif isinstance(event, ResponseComplete):
                    usage = event.response.usage
                    record["usage"] = (usage.input_tokens, usage.output_tokens)
                    record["max_tokens"] = call.request.max_tokens
                yield event
    except Exception as error:
        record["outcome"] = type(error).__name__
        raise
    record["outcome"] = "ok"


@hookimpl(wrapper=True)
def oma_tool_call(call: ToolInvocation, run: RunContext) -> Generator[None, Any, Any]:
    result = yield
    if not run.metadata.get("log_calls"):
        return result
    return _logged_tool(result, call, run)


async def _logged_tool(
    result: Awaitable[ToolResultBlock], call: ToolInvocation, run: RunContext
) -> ToolResultBlock:
    outcome = await result
    RECORDS.append(
        {"kind": "tool", "run_id": run.run_id, "tool": call.block.name, "error": outcome.is_error}
    )
    return outcome
