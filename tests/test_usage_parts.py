"""``Usage``'s cache and reasoning counts are kept and summed wherever usage is: a call, a run
of several calls, a team's tasks, and what budgets are charged."""

from __future__ import annotations

import math

from oma_core import Agent, AgentConfig, LLMMessage, TextBlock, Usage, tool
from oma_core._usage import charged_usage, reported_usage
from oma_core.orchestrator import OpenMultiAgent
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderRequest, ProviderResponse
from oma_core.teams import TaskSpec, Team

CALL = Usage(10, 4, cache_read_tokens=6, cache_write_tokens=2, reasoning_tokens=3)


class _Counted:
    """A provider whose every call reports ``CALL``; the first call of a run asks for the
    ``noop`` tool when ``tool_round`` is set."""

    def __init__(self, *, tool_round: bool = False) -> None:
        self.tool_round = tool_round
        self.calls = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        self.calls += 1
        if self.tool_round and len(request.messages) == 1:
            call = {"type": "tool_use", "id": "t1", "name": "noop", "input": {}}
            return ProviderResponse(LLMMessage("assistant", [call]), CALL)
        return ProviderResponse(LLMMessage("assistant", [TextBlock("done")]), CALL)


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


def test_adding_usages_adds_every_count() -> None:
    total = CALL + CALL
    assert total == Usage(20, 8, 12, 4, 6)
    assert Usage() + CALL == CALL
    assert CALL.total_tokens == 14  # the parts are inside input and output already


async def test_a_run_sums_every_calls_counts() -> None:
    provider = _Counted(tool_round=True)
    async with Agent(AgentConfig("a", provider=provider, tools=[noop])) as agent:
        result = await agent.run("go")
    assert provider.calls == 2
    assert result.usage == CALL + CALL


async def test_a_team_sums_its_tasks_counts() -> None:
    team = Team("t", [AgentConfig("a", provider=_Counted())])
    tasks = [TaskSpec(f"task {i}", f"Do {i}.") for i in range(3)]
    oma = OpenMultiAgent(plugins=PluginHost(load_entrypoints=False))
    outcome = await oma.run_tasks(team, tasks)
    assert outcome.success
    assert outcome.usage == CALL + CALL + CALL


def test_reported_and_charged_usage_keep_the_parts_and_zero_bad_ones() -> None:
    assert reported_usage(CALL) is CALL
    bad = Usage(10, 4, cache_read_tokens=-1, cache_write_tokens=math.nan, reasoning_tokens=True)  # type: ignore[arg-type]
    assert reported_usage(bad) == Usage(10, 4)
    request = ProviderRequest(None, (LLMMessage("user", [TextBlock("hi")]),))
    assert charged_usage(request, CALL) == CALL
