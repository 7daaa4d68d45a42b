"""The built-in toolset middleware: a toolset's tools in every model call and tool call.

An agent's ``AgentConfig.tools`` may hold toolsets (``oma_core.tools.Toolset``, e.g. an MCP
server); the agent keeps a ``ToolsetEntry`` in their place. For each model call this wrapper
awaits every toolset's ``list_tools()`` (inside the call, so under its time limit; a toolset
answers from its cache unless its list changed), puts their definitions in the request in
place of the entries, and keeps the listed tools in ``run.state``; each tool call of that run
then sees them among the agent's tools, so the call goes through ``oma_tool_call`` — budgets,
spans and logs — like a local one. Two tools of the same name are a ``ToolError``.

It is the outermost wrapper (``tryfirst``, registered after the budgets), so every layer
below, and the provider, sees the full request. An agent without toolsets costs one check.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import attrs

from .. import hookimpl
from ..tools import ToolsetEntry, entry_name, is_toolset, list_toolsets

if TYPE_CHECKING:
    from ..calls import CallEvent, ModelCall, RunContext, ToolInvocation
    from ..tools import Tool

__all__ = ["oma_model_call", "oma_tool_call"]

#: run.state key: the tools the run's toolsets listed for its latest model call
STATE_KEY = "oma.toolsets"


@hookimpl(wrapper=True, tryfirst=True)
def oma_model_call(call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
    """List the run's toolsets and put their tools in the request."""
    events = yield
    tools = run.config.tools
    if not tools or call.kind != "model":
        return events
    toolsets = [item for item in tools if is_toolset(item)]
    if not toolsets:
        return events
    return _with_toolsets(events, call, run, toolsets)


async def _with_toolsets(
    events: AsyncGenerator[CallEvent, None],
    call: ModelCall,
    run: RunContext,
    toolsets: list[Any],
) -> AsyncGenerator[CallEvent, None]:
    async with aclosing(events) as inner:
        request = call.request
        entries = {entry_name(t) for t in toolsets}
        kept = tuple(d for d in request.tools if d.name not in entries)
        listed = await list_toolsets([d.name for d in kept], toolsets)
        run.state[STATE_KEY] = listed
        definitions = tuple(found.definition() for found in listed.values())
        call.request = attrs.evolve(request, tools=kept + definitions)
        async for event in inner:
            yield event


@hookimpl(wrapper=True, tryfirst=True)
def oma_tool_call(call: ToolInvocation, run: RunContext) -> Generator[None, Any, Any]:
    """Give the tool call the tools the run's toolsets listed (before the call is made)."""
    listed: dict[str, Tool] | None = run.state.get(STATE_KEY)
    if listed:
        own = {n: t for n, t in call.tools.items() if not isinstance(t, ToolsetEntry)}
        call.tools = {**own, **listed}
    return (yield)
