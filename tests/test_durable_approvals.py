"""Approvals in ``run_agent``: a call of a ``needs_approval`` tool suspends the run after the
turn's other calls ran; ``resume(approvals=...)`` runs it or answers it denied; a decision is
bound to the call reviewed, the first stored wins, and nothing runs on a mismatch."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from oma_core import AgentConfig, OpenMultiAgent, tool
from oma_core._approvals import Approval, call_digest, decision_record
from oma_core._checkpoints import decode
from oma_core.errors import (
    ApprovalMismatchError,
    ApprovalUnavailableError,
    LeaseHeldError,
    UnknownApprovalError,
)
from oma_core.messages import ToolResultBlock, ToolUseBlock
from oma_core.progress import ProgressEvent
from oma_core.stores import MemoryRunStore, RunStore, SQLiteRunStore, StoredRun

TURN = {
    "role": "assistant",
    "content": [
        {"type": "tool_use", "id": "c1", "name": "lookup", "input": {"who": "bob"}},
        {"type": "tool_use", "id": "c2", "name": "send", "input": {"to": "bob@example.com"}},
    ],
}


class World:
    """The tools' side effects, counted."""

    def __init__(self) -> None:
        self.looked_up: list[str] = []
        self.sent: list[str] = []

    def config(self, *answers: str) -> AgentConfig:
        """The agent; its model asks for ``TURN``'s calls, then gives ``answers``."""
        return self.resumed(TURN, *answers)

    def resumed(self, *answers: Any) -> AgentConfig:
        """The agent for a resume: its model's turns from where the run was."""

        def lookup(who: str) -> str:
            """Find someone's address."""
            self.looked_up.append(who)
            return f"{who}@example.com"

        def send(to: str) -> str:
            """Send the email."""
            self.sent.append(to)
            return f"sent to {to}"

        return AgentConfig(
            name="mailer",
            provider="scripted",
            provider_options={"responses": list(answers)},
            tools=[tool(lookup), tool(send, needs_approval=True)],
        )


async def _suspended(store: RunStore, world: World, events: list[ProgressEvent]) -> Any:
    oma = OpenMultiAgent(events.append, store=store)
    result = await oma.run_agent(world.config(), "email bob")
    assert result.status.code == "suspended", result.status
    return result


async def test_a_call_needing_approval_suspends_the_run_after_the_other_calls_ran() -> None:
    world, events, store = World(), [], MemoryRunStore()
    result = await _suspended(store, world, events)
    assert world.looked_up == ["bob"] and world.sent == []
    (request,) = result.pending
    assert (request.call_id, request.tool, request.arguments) == (
        "c2",
        "send",
        {"to": "bob@example.com"},
    )
    assert request.run_id == result.run_id and request.agent == "mailer"
    block = ToolUseBlock("c2", "send", {"to": "bob@example.com"})
    assert request.digest == call_digest(result.run_id, block)
    kinds = [event.type for event in events]
    assert "approval_requested" in kinds and kinds.index("approval_requested") < kinds.index(
        "run_suspended"
    )
    kept = await store.load(result.run_id)
    assert kept is not None and (kept.status, kept.pending) == ("suspended", 1)


async def test_an_approved_call_runs_once_and_the_run_goes_on() -> None:
    world, events, store = World(), [], MemoryRunStore()
    first = await _suspended(store, world, events)
    oma = OpenMultiAgent(events.append, store=store)
    result = await oma.resume(first.run_id, config=world.resumed("sent it"), approvals={"c2": True})
    assert result.status.code == "ok" and result.output == "sent it"
    assert world.sent == ["bob@example.com"] and world.looked_up == ["bob"]
    assert "run_resumed" in [event.type for event in events]
    results = [b for m in result.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(b.tool_use_id, b.is_error) for b in results] == [("c1", False), ("c2", False)]


async def test_a_denied_call_is_answered_with_an_error_result_giving_the_reason() -> None:
    world, events, store = World(), [], MemoryRunStore()
    first = await _suspended(store, world, events)
    oma = OpenMultiAgent(store=store)
    decision = {"c2": Approval(False, reason="not before Monday")}
    result = await oma.resume(first.run_id, config=world.resumed("ok, later"), approvals=decision)
    assert result.status.code == "ok" and world.sent == []
    denied = [
        block
        for message in result.messages
        for block in message.content
        if isinstance(block, ToolResultBlock) and block.tool_use_id == "c2"
    ]
    assert len(denied) == 1 and denied[0].is_error
    assert "not before Monday" in str(denied[0].content)


async def test_a_decision_made_for_other_arguments_fails_closed_and_nothing_runs() -> None:
    world, events, store = World(), [], MemoryRunStore()
    first = await _suspended(store, world, events)
    reviewed = ToolUseBlock("c2", "send", {"to": "mallory@example.com"})
    await store.decide(
        first.run_id, "c2", decision_record(Approval(True), call_digest(first.run_id, reviewed))
    )
    with pytest.raises(ApprovalMismatchError) as caught:
        await OpenMultiAgent(store=store).resume(first.run_id, config=world.resumed("x"))
    assert (caught.value.run_id, caught.value.call_id) == (first.run_id, "c2")
    assert world.sent == [] and world.looked_up == ["bob"]


async def test_a_decision_for_an_unknown_call_is_refused() -> None:
    world, events, store = World(), [], MemoryRunStore()
    first = await _suspended(store, world, events)
    with pytest.raises(UnknownApprovalError) as caught:
        await OpenMultiAgent(store=store).resume(
            first.run_id, config=world.resumed("x"), approvals={"c2": True, "c9": True}
        )
    assert caught.value.call_id == "c9" and world.sent == []
    assert await store.decisions(first.run_id) == {}  # refused whole: nothing stored
    with pytest.raises(TypeError, match="c2"):
        await OpenMultiAgent(store=store).resume(first.run_id, approvals={"c2": "yes"})


async def test_of_two_resumes_with_different_decisions_the_first_stored_wins() -> None:
    world, events, store = World(), [], MemoryRunStore()
    first = await _suspended(store, world, events)
    oma = OpenMultiAgent(store=store)
    denied = await oma.resume(
        first.run_id, config=world.resumed("not sent"), approvals={"c2": False}
    )
    late = await oma.resume(first.run_id, config=world.resumed("sent"), approvals={"c2": True})
    assert denied.output == late.output == "not sent"
    assert world.sent == []
    assert (await store.decisions(first.run_id))["c2"]["approve"] is False


async def test_two_concurrent_resumes_with_different_decisions_one_wins(tmp_path: Path) -> None:
    world, events = World(), []
    store = SQLiteRunStore(tmp_path / "runs.db")
    try:
        first = await _suspended(store, world, events)

        async def resume(approve: bool) -> Any:
            oma = OpenMultiAgent(store=store)
            config = world.resumed("sent" if approve else "not sent")
            try:
                return await oma.resume(first.run_id, config=config, approvals={"c2": approve})
            except LeaseHeldError as error:
                return error

        outcomes = await asyncio.gather(resume(True), resume(False))
        kept = (await store.decisions(first.run_id))["c2"]["approve"]
        assert world.sent == (["bob@example.com"] if kept else [])
        results = [outcome for outcome in outcomes if not isinstance(outcome, LeaseHeldError)]
        assert results and {result.output for result in results} == {"sent" if kept else "not sent"}
        final = await OpenMultiAgent(store=store).resume(first.run_id)
        assert final.output == ("sent" if kept else "not sent")
    finally:
        await store.aclose()


async def test_without_a_store_a_call_needing_approval_fails_the_run_before_any_call_runs() -> None:
    world = World()
    result = await OpenMultiAgent().run_agent(world.config(), "email bob")
    assert result.status.code == "error"
    assert isinstance(result.status.error, ApprovalUnavailableError)
    assert result.status.error.tool == "send"
    assert world.looked_up == [] and world.sent == []


async def test_a_callable_rule_decides_per_call() -> None:
    world, store = World(), MemoryRunStore()
    config = world.config()
    send = config.tools[1]
    gated = tool(
        send.function,  # type: ignore[union-attr]
        name="send",
        needs_approval=lambda block: block.input["to"].endswith("@elsewhere.com"),
    )
    config = AgentConfig(
        name="mailer",
        provider="scripted",
        provider_options={"responses": [TURN, "done"]},
        tools=[config.tools[0], gated],
    )
    result = await OpenMultiAgent(store=store).run_agent(config, "email bob")
    assert result.status.code == "ok" and world.sent == ["bob@example.com"]


class _Rounds(MemoryRunStore):
    """A memory store that keeps the call ids of each checkpoint's round under way."""

    def __init__(self) -> None:
        super().__init__()
        self.rounds: list[set[str]] = []

    async def save(self, run: StoredRun) -> None:
        state = decode(run.run_id, run.checkpoint)
        self.rounds.append({block["tool_use_id"] for block in state["round"]})
        await super().save(run)


async def test_results_after_a_waiting_call_stay_checkpointed_while_it_runs() -> None:
    world, store = World(), _Rounds()
    turn = {
        "role": "assistant",
        "content": [
            *TURN["content"],
            {"type": "tool_use", "id": "c3", "name": "lookup", "input": {"who": "eve"}},
        ],
    }
    config = world.resumed(turn)
    first = await OpenMultiAgent(store=store).run_agent(config, "email bob")
    assert first.status.code == "suspended" and world.looked_up == ["bob", "eve"]
    store.rounds.clear()
    result = await OpenMultiAgent(store=store).resume(
        first.run_id, config=world.resumed("sent"), approvals={"c2": True}
    )
    assert result.output == "sent" and world.sent == ["bob@example.com"]
    assert world.looked_up == ["bob", "eve"]  # c1 and c3 not run again
    assert {"c1", "c2", "c3"} in store.rounds  # c2's checkpoint kept c3's result


async def test_a_suspended_run_s_span_is_not_marked_as_an_error() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    world = World()
    oma = OpenMultiAgent(store="memory", tracer_provider=tracing)
    result = await oma.run_agent(world.config("sent"), "email bob")
    assert result.status.code == "suspended"
    (span,) = [s for s in exporter.get_finished_spans() if s.attributes.get("oma.status")]
    assert span.attributes["oma.status"] == "suspended" and span.attributes["oma.pending"] == 1
    assert span.status.status_code is not StatusCode.ERROR
    done = await oma.resume(
        result.run_id or "", config=world.resumed("sent"), approvals={"c2": True}
    )
    assert done.status.code == "ok"
