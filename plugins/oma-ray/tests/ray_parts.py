"""Providers, tools and hooks the Ray tests pickle to workers (importable there: conftest puts
this folder on the workers' PYTHONPATH)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import attrs

from oma_core import Capabilities, LLMMessage, TextBlock, ToolResultBlock, ToolUseBlock, Usage, tool
from oma_core.toolkit import ProviderRequest, ProviderResponse

CALL = Usage(4, 1)


def _calls_so_far(request: ProviderRequest) -> int:
    return sum(
        isinstance(block, ToolResultBlock)
        for message in request.messages
        for block in message.content
    )


@attrs.frozen
class ToolLoop:
    """Asks for ``tool_name`` ``rounds`` times (with ``arguments``), then answers; every call
    reports ``CALL``."""

    tool_name: str
    rounds: int = 1
    arguments: dict[str, Any] = attrs.field(factory=dict)
    name: ClassVar[str] = "tool-loop"
    display_name: ClassVar[str] = "Tool loop test provider"
    capabilities: ClassVar[Capabilities] = Capabilities.everything()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        done = _calls_so_far(request)
        if done >= self.rounds:
            message = LLMMessage("assistant", (TextBlock(f"finished after {done}"),))
        else:
            call = ToolUseBlock(f"call_{done}", self.tool_name, dict(self.arguments))
            message = LLMMessage("assistant", (call,))
        return ProviderResponse(message, CALL, stop_reason="end_turn")

    async def aclose(self) -> None:
        return None


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _exists(path: Path) -> bool:
    return path.exists()


@tool
async def hold(workdir: str) -> str:
    """Write this process's pid, then wait to be killed, unless the test already killed one."""
    _write(Path(workdir, "pid"), str(os.getpid()))
    if _exists(Path(workdir, "killed")):
        return "resumed"
    await asyncio.sleep(3600)
    return "never"


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


def attach(block: Any) -> Callable[[Any], dict[str, Any]]:
    """A before_run hook that appends ``block`` (an image) to the task's turn."""

    def hook(ctx: Any) -> dict[str, Any]:
        last = ctx.messages[-1]
        turn = LLMMessage(last.role, (*last.content, block))
        return {"messages": [*ctx.messages[:-1], turn]}

    return hook


@attrs.frozen
class Raising:
    """Raises ``error`` (pickled to the worker with the provider) on every call."""

    error: BaseException
    name: ClassVar[str] = "raising"
    display_name: ClassVar[str] = "Raising test provider"

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        raise self.error

    async def aclose(self) -> None:
        return None


def refuse(ctx: Any) -> None:
    """A before_run hook that fails the run."""
    raise ValueError("this hook refuses every run")
