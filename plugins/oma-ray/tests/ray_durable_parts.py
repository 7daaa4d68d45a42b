"""The team of the durable Ray tests (tests/test_ray_durable_team_runs.py and the driver they
kill, ray_durable_driver.py): a provider and a tool the workers import from this folder."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import ClassVar

import attrs

from oma_core import AgentConfig, Capabilities, LLMMessage, TextBlock, ToolUseBlock, Usage, tool
from oma_core.teams import TaskSpec, Team
from oma_core.toolkit import ProviderRequest, ProviderResponse

PLAN = (
    TaskSpec("first", "first", "worker"),
    TaskSpec("second", "second", "worker"),
    TaskSpec("sum", "sum", "worker", depends_on=("first", "second")),
)


@tool
def effect(workdir: str, label: str) -> str:
    """Record a side effect: one line in ``workdir``'s ``effects`` file."""
    with (Path(workdir) / "effects").open("a") as out:
        out.write(label + "\n")
    return f"{label} recorded"


@attrs.frozen
class ByTask:
    """Each task calls ``effect`` once, then answers ``<title> done``; with ``hold``, task
    "second" never gets an answer (it is in flight until its driver is killed)."""

    workdir: str
    hold: bool = False
    name: ClassVar[str] = "by-task"
    display_name: ClassVar[str] = "By-task test provider"
    capabilities: ClassVar[Capabilities] = Capabilities.everything()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        first = request.messages[0]
        title = "".join(getattr(block, "text", "") for block in first.content).splitlines()[0]
        turn = sum(1 for message in request.messages if message.role == "assistant")
        if title == "second" and self.hold:
            (Path(self.workdir) / "second-started").write_text(str(os.getpid()))
            await asyncio.Event().wait()
        if title != "sum" and turn == 0:
            arguments = {"workdir": self.workdir, "label": title}
            message = LLMMessage("assistant", (ToolUseBlock(f"{title}-1", "effect", arguments),))
        else:
            message = LLMMessage("assistant", (TextBlock(f"{title} done"),))
        return ProviderResponse(message, Usage(10, 1), stop_reason="end_turn")

    async def aclose(self) -> None:
        return None


def make_team(workdir: str, hold: bool = False) -> Team:
    worker = AgentConfig("worker", provider=ByTask(workdir, hold), tools=[effect], max_retries=0)
    return Team("ray-team", [worker], max_concurrency=2)
