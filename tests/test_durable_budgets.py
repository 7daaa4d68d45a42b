"""A shared ``Budget`` (``budget=``) across the lives of a durable run: a resume goes on from
what was spent — rebuilt from the checkpoints, or the budget given again charged up to that
spend — so a cap the first life had nearly used stops the resumed run where one
uninterrupted run would have stopped. A budget charges each call here 11 tokens for a tool
call, 12 for a text answer (its text's estimate is above the 1 output token reported)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from oma_core import AgentConfig, OpenMultiAgent, load_messages, tool
from oma_core.budgets import Budget
from oma_core.capabilities import Capabilities
from oma_core.providers import ProviderRequest, ProviderResponse, Usage
from oma_core.stores import MemoryRunStore
from oma_core.teams import TaskSpec, Team, TeamRunResult


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]
    return {"role": "assistant", "content": content}


def _text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


class Scripted:
    """Answers ``scripts[first line of the prompt][turn]`` (usage: 10 in, 1 out); the call
    ``hold`` (a first line and a turn) waits until ``release`` is set (``held`` says it is
    there): where a test interrupts a run."""

    capabilities = Capabilities.everything()

    def __init__(
        self, scripts: Mapping[str, list[Any]], hold: tuple[str, int] | None = None
    ) -> None:
        self.scripts = scripts
        self.hold = hold
        self.held = asyncio.Event()
        self.release = asyncio.Event()
        self.asked: list[tuple[str, int]] = []

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        text = "".join(getattr(block, "text", "") for block in request.messages[0].content)
        name = text.splitlines()[0]
        turn = sum(1 for message in request.messages if message.role == "assistant")
        self.asked.append((name, turn))
        if (name, turn) == self.hold:
            self.held.set()
            await self.release.wait()
        (message,) = load_messages([self.scripts[name][turn]])
        return ProviderResponse(message, Usage(10, 1), "end_turn")


def _look(topic: str) -> str:
    """Look a topic up."""
    return f"found {topic}"


def _team(provider: Scripted) -> Team:
    writer = AgentConfig(name="writer", provider=provider, tools=[tool(_look, name="look")])
    return Team("desk", [writer])


SCRIPTS = {
    "a": [_text("a done")],
    "b": [_text("b done")],
    "c": [_call("l1", "look", topic="c"), _text("c done")],
}
PLAN = (
    TaskSpec("a", "a"),
    TaskSpec("b", "b", depends_on="a"),
    TaskSpec("c", "c", depends_on="b"),
)


async def _interrupted(store: MemoryRunStore, run_id: str, cap: int) -> None:
    """A first life of the plan under ``Budget(max_tokens=cap)`` cancelled while task "c"
    waits for its second model call: a, b and c's first turn spent 35 tokens, c's first
    turn in c's own checkpoint only (the team run's says 24)."""
    provider = Scripted(SCRIPTS, hold=("c", 1))
    oma = OpenMultiAgent(store=store)
    budget = Budget(max_tokens=cap)
    run = asyncio.create_task(oma.run_tasks(_team(provider), PLAN, budget=budget, run_id=run_id))
    await provider.held.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run


def _stopped_at_the_cap(result: TeamRunResult) -> None:
    assert not result.success
    assert [result.tasks[title].status for title in "abc"] == ["completed", "completed", "failed"]
    c = result.tasks["c"].result
    assert c is not None and c.status.code == "budget_exhausted"


async def test_a_resumed_team_run_stops_at_the_cap_its_first_life_nearly_spent() -> None:
    store = MemoryRunStore()
    await _interrupted(store, "desk-1", cap=40)
    provider = Scripted(SCRIPTS)
    # rebuilt from the checkpoints: 35 spent, so c's second call (47) passes the cap of 40;
    # had only the team run's own checkpoint counted (24), it would not have (36)
    resumed = await OpenMultiAgent(store=store).resume("desk-1", team=_team(provider))
    _stopped_at_the_cap(resumed)
    assert provider.asked == [("c", 1)]  # a and b read back, c's first turn not asked again


async def test_the_cap_holds_only_because_the_first_lives_spend_counts() -> None:
    store = MemoryRunStore()
    await _interrupted(store, "desk-2", cap=50)  # 35 + 12 = 47: within it
    resumed = await OpenMultiAgent(store=store).resume("desk-2", team=_team(Scripted(SCRIPTS)))
    assert resumed.success and resumed.tasks["c"].output == "c done"


async def test_a_budget_given_again_goes_on_from_what_was_spent() -> None:
    store = MemoryRunStore()
    await _interrupted(store, "desk-3", cap=40)
    again = Budget(max_tokens=40)  # a new process's: it has spent nothing yet
    oma = OpenMultiAgent(store=store)
    resumed = await oma.resume("desk-3", team=_team(Scripted(SCRIPTS)), budget=again)
    _stopped_at_the_cap(resumed)
    assert again.used_tokens == 47  # the first life's 35 and the resumed call's 12


PAY_SCRIPTS = {
    "pay": [_call("p1", "pay", amount=5), _text("paid")],
    "note": [_text("noted")],
    "report": [_text("reported")],
}
PAY_PLAN = (
    TaskSpec("pay", "pay"),
    TaskSpec("note", "note"),
    TaskSpec("report", "report", depends_on=("pay", "note")),
)


def _pay(amount: int) -> str:
    """Pay an invoice."""
    return f"paid {amount}"


async def test_the_same_budget_given_again_in_the_same_process_is_not_charged_twice() -> None:
    provider = Scripted(PAY_SCRIPTS)
    payer = AgentConfig(
        name="payer", provider=provider, tools=[tool(_pay, name="pay", needs_approval=True)]
    )
    team = Team("office", [payer], max_concurrency=1)
    budget = Budget(max_tokens=50)
    oma = OpenMultiAgent(store="memory")
    first = await oma.run_tasks(team, PAY_PLAN, budget=budget, run_id="office")
    assert first.suspended and budget.used_tokens == 23
    done = await oma.resume("office", team=team, approvals={"p1": True}, budget=budget)
    # within 50: the 23 of the first life were not counted again (46 more would pass it)
    assert done.success and budget.used_tokens == 23 + 23


async def test_a_resumed_agent_run_goes_on_from_what_its_budget_had_spent() -> None:
    scripts = {"look it up": SCRIPTS["c"]}
    store = MemoryRunStore()
    provider = Scripted(scripts, hold=("look it up", 1))
    config = AgentConfig(name="writer", provider=provider, tools=[tool(_look, name="look")])
    oma = OpenMultiAgent(store=store)
    budget = Budget(max_tokens=20)
    run = asyncio.create_task(oma.run_agent(config, "look it up", budget=budget, run_id="one"))
    await provider.held.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    again = AgentConfig(name="writer", provider=Scripted(scripts), tools=[tool(_look, name="look")])
    resumed = await OpenMultiAgent(store=store).resume("one", config=again)
    assert resumed.status.code == "budget_exhausted"  # 11 + 12 passes 20; 12 alone would not
