"""Durable team runs in one process: what a team checkpoint holds, approvals inside a team
(one task waits, an independent one finishes), a cancelled run_team resumed without planning
again, resume's errors (a missing or mismatched team, a tampered checkpoint), structured
outputs read back."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import attrs
import pytest
from _waiting import until

from oma_core import AgentConfig, OpenMultiAgent, load_messages, tool
from oma_core._checkpoints import decode, encode
from oma_core.capabilities import Capabilities
from oma_core.errors import (
    CheckpointError,
    ResumeMissingError,
    UnknownApprovalError,
    UnknownRunError,
)
from oma_core.providers import ProviderRequest, ProviderResponse, Usage
from oma_core.stores import MemoryRunStore, StoredRun
from oma_core.teams import TaskSpec, Team


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    content = [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]
    return {"role": "assistant", "content": content}


def _text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


class ByPrompt:
    """Answers a request with ``scripts[first line of its prompt][its turn]``: the same in
    every life of a run. ``asked`` counts the calls by first line; a run named in ``hold``
    waits at its first call until ``release`` is set."""

    capabilities = Capabilities.everything()

    def __init__(self, scripts: Mapping[str, list[Any]], hold: str | None = None) -> None:
        self.scripts = scripts
        self.asked: dict[str, int] = {}
        self.hold = hold
        self.release = asyncio.Event()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        text = "".join(getattr(block, "text", "") for block in request.messages[0].content)
        name = "plan" if text.startswith("Goal:") else text.splitlines()[0]
        if text.endswith("Write the final answer to the goal."):
            name = "final"
        turn = sum(1 for message in request.messages if message.role == "assistant")
        self.asked[name] = self.asked.get(name, 0) + 1
        if name == self.hold:
            await self.release.wait()
        (message,) = load_messages([self.scripts[name][turn]])
        return ProviderResponse(message, Usage(10, 1), "end_turn")


PAID: list[str] = []


def _pay(amount: int) -> str:
    """Pay an invoice."""
    PAID.append(f"paid {amount}")
    return f"paid {amount}"


def _team(provider: ByPrompt) -> Team:
    payer = AgentConfig(
        name="payer", provider=provider, tools=[tool(_pay, name="pay", needs_approval=True)]
    )
    return Team("office", [payer, AgentConfig(name="writer", provider=provider)])


SCRIPTS = {
    "pay": [_call("p1", "pay", amount=5), _text("invoice paid")],
    "note": [_text("note written")],
    "report": [_text("report: paid and noted")],
}
PLAN = (
    TaskSpec("pay", "pay", "payer"),
    TaskSpec("note", "note", "writer"),
    TaskSpec("report", "report", "writer", depends_on=("pay", "note")),
)


async def test_a_task_waiting_for_approval_does_not_stop_an_independent_one() -> None:
    PAID.clear()
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    provider = ByPrompt(SCRIPTS)
    first = await oma.run_tasks(_team(provider), PLAN, run_id="office-1")
    assert first.suspended and not first.success and first.run_id == "office-1"
    statuses = {title: task.status for title, task in first.tasks.items()}
    assert statuses == {"pay": "waiting", "note": "completed", "report": "pending"}
    (request,) = first.pending
    assert (request.call_id, request.tool, request.arguments) == ("p1", "pay", {"amount": 5})
    assert request.run_id == "office-1/1" and PAID == []
    kept = await store.load("office-1")
    assert kept is not None and (kept.kind, kept.status, kept.pending) == ("tasks", "suspended", 1)

    with pytest.raises(UnknownApprovalError):
        await oma.resume("office-1", team=_team(provider), approvals={"nope": True})
    done = await oma.resume("office-1", team=_team(provider), approvals={"p1": True})
    assert done.success and not done.pending and PAID == ["paid 5"]
    assert done.tasks["report"].output == "report: paid and noted"
    assert provider.asked == {"pay": 2, "note": 1, "report": 1}  # "note" was not rerun
    assert done.usage == Usage(40, 4)  # every call once, over both lives
    kept = await store.load("office-1")
    assert kept is not None and (kept.status, kept.pending) == ("ok", 0)


async def test_a_denied_call_in_a_team_is_answered_with_the_reason() -> None:
    PAID.clear()
    oma = OpenMultiAgent(store="memory")
    provider = ByPrompt(SCRIPTS)
    await oma.run_tasks(_team(provider), PLAN, run_id="office-2")
    done = await oma.resume("office-2", team=_team(provider), approvals={"p1": False})
    assert done.success and PAID == []
    result = done.tasks["pay"].result
    assert result is not None
    answered = [block for message in result.messages for block in message.content]
    assert any(getattr(block, "is_error", False) for block in answered)


async def test_a_cancelled_run_team_resumes_without_planning_again() -> None:
    plan = {
        "tasks": [{"title": "note", "description": "note", "assignee": "writer", "depends_on": []}]
    }
    import json

    scripts = {**SCRIPTS, "plan": [_text(json.dumps(plan))], "final": [_text("all done")]}
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    provider = ByPrompt(scripts, hold="note")
    run = asyncio.create_task(oma.run_team(_team(provider), "office work", run_id="lead"))
    await until(lambda: provider.asked.get("note") == 1)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    provider.release.set()
    done = await oma.resume("lead", team=_team(provider))
    assert done.success and done.output == "all done" and done.run_id == "lead"
    assert provider.asked == {"plan": 1, "note": 2, "final": 1}
    assert [task.title for task in done.plan or ()] == ["note"]


async def test_a_resume_names_the_missing_team_or_agents() -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    provider = ByPrompt(SCRIPTS)
    await oma.run_tasks(_team(provider), PLAN, run_id="office-3")
    with pytest.raises(ResumeMissingError) as caught:
        await oma.resume("office-3")  # its agents have tools and a provider object
    assert "pay" in caught.value.missing
    lone = Team("office", [AgentConfig(name="writer", provider=provider)])
    with pytest.raises(ResumeMissingError, match="payer"):
        await oma.resume("office-3", team=lone)
    bare = Team("office", [AgentConfig(name="payer", provider=provider), lone.agents[0]])
    with pytest.raises(ResumeMissingError, match="pay"):
        await oma.resume("office-3", team=bare)
    with pytest.raises(UnknownRunError):
        await oma.resume("office-404", team=_team(provider))


async def test_a_tampered_or_other_version_team_checkpoint_fails_closed() -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    provider = ByPrompt(SCRIPTS)
    await oma.run_tasks(_team(provider), PLAN, run_id="office-4")
    kept = await store.load("office-4")
    assert kept is not None
    for bad in (
        kept.checkpoint.replace(b'"note"', b'"n0te"'),
        kept.checkpoint.replace(b'"oma_checkpoint":1', b'"oma_checkpoint":2'),
    ):
        assert bad != kept.checkpoint
        await store.save(attrs.evolve(kept, checkpoint=bad))
        with pytest.raises(CheckpointError):
            await oma.resume("office-4", team=_team(provider))
    state = decode("office-4", kept.checkpoint)
    del state["tasks"]  # digested anew: a checkpoint that is not a team run's
    await store.save(attrs.evolve(kept, checkpoint=encode(state)))
    with pytest.raises(CheckpointError, match="team run"):
        await oma.resume("office-4", team=_team(provider))


@attrs.frozen
class Total:
    total: int


async def test_a_finished_task_is_read_back_with_its_structured_output() -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    provider = ByPrompt({"count": [_text('{"total": 3}')], "use": [_text("used")]})
    team = Team("t", [AgentConfig(name="writer", provider=provider)])
    plan = (
        TaskSpec("count", "count", output_type=Total),
        TaskSpec("use", "use", depends_on="count"),
    )
    first = await oma.run_tasks(team, plan, run_id="typed")
    assert first.tasks["count"].structured == Total(3)
    read = await oma.resume("typed")  # finished: read back, no team needed
    assert read.tasks["count"].structured is None  # without its output type
    assert read.tasks["count"].output == '{"total": 3}' and read.success
    again = await oma.resume("typed", tasks=plan)
    assert again.tasks["count"].structured == Total(3)
    child = await oma.resume("typed/1")  # the task's own run: structured needs its type
    assert child.structured is None and child.output == '{"total": 3}'
    # under way again (what a crash leaves after "count" finished): "use" runs, "count" is
    # read back, validated against the output type given again
    kept = await store.load("typed")
    assert kept is not None
    state = decode("typed", kept.checkpoint)
    state["status"], state["tasks"]["use"]["status"] = "running", "running"
    state["tasks"]["use"]["run"] = None
    await store.save(StoredRun("typed", "tasks", "running", encode(state), 0.0, 0.0))
    with pytest.raises(ResumeMissingError, match="count"):
        await oma.resume("typed", team=team)  # the output type is not in the checkpoint
    resumed = await oma.resume("typed", team=team, tasks=plan)
    assert resumed.tasks["count"].structured == Total(3) and resumed.success
    assert provider.asked == {"count": 1, "use": 1}  # "use" was finished: its run read back


async def test_a_team_of_plain_configs_is_rebuilt_from_its_checkpoint() -> None:
    store = MemoryRunStore()
    oma = OpenMultiAgent(store=store)
    team = Team("t", [AgentConfig(name="echoer", provider="echo")])
    first = await oma.run_tasks(team, [TaskSpec("say", "hello")], run_id="plain")
    assert first.success
    kept = await store.load("plain")
    assert kept is not None
    state = decode("plain", kept.checkpoint)
    state["status"], state["tasks"]["say"]["status"] = "running", "running"
    state["tasks"]["say"]["run"] = None
    await store.save(StoredRun("plain", "tasks", "running", encode(state), 0.0, 0.0))
    again = await oma.resume("plain")
    assert again.success and again.tasks["say"].output == first.tasks["say"].output


async def test_a_team_run_says_it_suspended_and_that_it_resumed() -> None:
    from oma_core import ProgressEvent

    events: list[ProgressEvent] = []
    oma = OpenMultiAgent(events.append, store="memory")
    provider = ByPrompt(SCRIPTS)
    await oma.run_tasks(_team(provider), PLAN, run_id="office-5")
    team_events = [event for event in events if event.task is None]
    assert [(e.type, e.agent, e.run_id) for e in team_events] == [
        ("run_suspended", None, "office-5")
    ]
    assert team_events[0].data == {"pending": ["p1"]}
    asked = [(e.type, e.run_id) for e in events if e.type == "approval_requested"]
    assert asked == [("approval_requested", "office-5/1")]  # said by the task run, as before
    events.clear()
    await oma.resume("office-5", team=_team(provider), approvals={"p1": True})
    first = events[0]
    assert (first.type, first.agent, first.task, first.run_id) == (
        "run_resumed",
        None,
        None,
        "office-5",
    )
    assert first.data == {"tasks": {"note": "completed", "pay": "waiting", "report": "pending"}}
    resumed = [(e.type, e.task, e.run_id) for e in events if e.type == "run_resumed"]
    assert resumed == [("run_resumed", None, "office-5"), ("run_resumed", "pay", "office-5/1")]
    assert "run_suspended" not in [event.type for event in events]  # it finished
