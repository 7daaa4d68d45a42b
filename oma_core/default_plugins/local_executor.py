"""The built-in "local" executor: every task's agent run on the caller's event loop.

It is the asyncio path the team runner always had, registered like any executor plugin: its
session hands back the orchestrator's own in-process ``run_agent``, so choosing it adds
nothing to a task's cost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from .._executors import EXECUTOR_FEATURES, ExecutionContext, ExecutorSpec, TaskRunner
from ..errors import PluginError
from ..hookspecs import hookimpl

__all__ = ["LocalExecutor", "oma_register_executors"]


class LocalExecutor:
    """Runs each attempt with ``context.run_local``: in this process, on this event loop."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        if options:
            raise PluginError(
                f"the local executor takes no executor_options, got {sorted(options)}",
                name="local",
            )

    @asynccontextmanager
    async def session(self, context: ExecutionContext) -> AsyncIterator[TaskRunner]:
        yield context.run_local


@hookimpl
def oma_register_executors() -> list[ExecutorSpec]:
    return [
        ExecutorSpec(
            "local",
            LocalExecutor,
            supports=EXECUTOR_FEATURES,
            description="every task on the caller's event loop (asyncio)",
        )
    ]
