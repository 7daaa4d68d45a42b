"""Progress events: what agent_start, agent_complete, error and warning events carry, run ids."""

from __future__ import annotations

import json
import math

from _builders import (
    agent_config,
    builtin_host,
    collecting_scorer,
    make_orchestrator,
    named_image,
    reference_conversation,
    three_turn_conversation,
    tool_round,
    user_turn,
)

from oma_core import (
    AgentConfig,
    EvalCase,
    LLMMessage,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    ProgressEvent,
    ProviderError,
    TextBlock,
    dump_messages,
    load_messages,
)
from oma_core.testing import ScriptedProvider


async def test_agent_start_carries_the_prompt_for_string_input() -> None:
    events: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=events.append)
    result = await oma.run_agent(AgentConfig(name="vision", provider=ScriptedProvider(["r"])), "hi")
    assert result.success
    start = next(e for e in events if e.type == "agent_start")
    assert isinstance(start, ProgressEvent)
    assert start.agent == "vision"
    assert start.data == {"prompt": "hi"}
    assert any(e.type == "agent_complete" for e in events)
    assert [e.type for e in events].index("agent_start") < [e.type for e in events].index(
        "agent_complete"
    )

    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=builtin_host())
    await oma.run_agent(AgentConfig(name="vision"), "What is shown?")
    start = next(e for e in progress if e.type == "agent_start")
    assert start.agent == "vision"
    assert start.data == {"prompt": "What is shown?"}


async def test_progress_events_of_run_agent_have_no_task() -> None:
    events: list[ProgressEvent] = []
    await OpenMultiAgent(on_progress=events.append).run_agent(
        AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi"
    )
    assert events and all(e.task is None and e.agent == "v" for e in events)


async def test_agent_start_carries_the_messages_for_structured_input() -> None:
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=builtin_host())
    conversation = reference_conversation()
    await oma.run_agent(AgentConfig(name="vision"), conversation)
    start = next(e for e in progress if e.type == "agent_start")
    assert set(start.data) == {"messages"}
    assert isinstance(start.data["messages"], tuple)
    assert start.data["messages"] == load_messages(conversation)

    events: list[ProgressEvent] = []
    conv = [user_turn("a", named_image("x.png"))]
    oma = OpenMultiAgent(on_progress=events.append)
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), conv)
    start = next(e for e in events if e.type == "agent_start")
    assert set(start.data) == {"messages"}
    assert isinstance(start.data["messages"], tuple)
    assert all(isinstance(m, LLMMessage) for m in start.data["messages"])
    assert dump_messages(start.data["messages"]) == conv


async def test_progress_callback_mutations_cannot_affect_execution_or_evaluation() -> None:
    def meddle(event: ProgressEvent) -> None:
        if event.type == "agent_start":
            event.data["messages"] = (LLMMessage("user", (TextBlock("tampered"),)),)
            event.data.clear()

    cases: list[EvalCase] = []
    provider = ScriptedProvider(["fine"])
    oma = OpenMultiAgent(
        on_progress=meddle,
        evaluation=OnlineEvaluationConfig(
            scorers=[collecting_scorer(cases)], store_payloads="full"
        ),
        plugins=builtin_host(),
    )
    conversation = [user_turn("original question")]
    result = await oma.run_agent(AgentConfig(name="v", provider=provider), conversation)
    await oma.evaluation.flush()
    assert result.success
    assert dump_messages(provider.requests[0].messages) == conversation
    assert json.loads(cases[0].input) == conversation


async def test_string_input_emits_a_prompt_payload() -> None:
    events: list[ProgressEvent] = []
    result = await make_orchestrator(on_progress=events.append).run_agent(
        agent_config(ScriptedProvider(["fine"])), "hello"
    )
    assert result.success and result.output == "fine"
    start = events[0]
    assert (start.type, start.agent, start.task) == ("agent_start", "vision", None)
    assert start.data == {"prompt": "hello"}
    assert events[-1].type == "agent_complete"


async def test_structured_input_emits_a_messages_payload() -> None:
    events: list[ProgressEvent] = []
    await make_orchestrator(on_progress=events.append).run_agent(
        agent_config(ScriptedProvider(["a cat"])), three_turn_conversation()
    )
    assert events[0].data == {"messages": load_messages(three_turn_conversation())}
    assert isinstance(events[0].data["messages"], tuple)


async def test_progress_mutation_reaches_neither_provider_nor_scorer() -> None:
    provider = ScriptedProvider(["ok"])
    cases: list[EvalCase] = []

    def vandal(event: ProgressEvent) -> None:
        if event.type == "agent_start":
            event.data["messages"] = ()
            event.data["extra"] = "x"

    oma = make_orchestrator(
        on_progress=vandal,
        evaluation=OnlineEvaluationConfig(
            [lambda case: cases.append(case) or 1.0], store_payloads="full"
        ),
    )
    conversation = three_turn_conversation()
    await oma.run_agent(agent_config(provider), conversation)
    await oma.evaluation.flush()
    assert provider.requests[0].messages == load_messages(conversation)
    assert json.loads(cases[0].input) == dump_messages(load_messages(conversation))


async def test_a_failed_run_emits_error_then_agent_complete() -> None:
    events: list[ProgressEvent] = []
    provider = ScriptedProvider([ProviderError("bad", status_code=400)])
    await make_orchestrator(on_progress=events.append).run_agent(agent_config(provider), "hi")
    assert [e.type for e in events] == ["agent_start", "error", "agent_complete"]
    assert events[1].data["code"] == "error"
    assert events[2].data["success"] is False


async def test_a_tool_error_result_is_reported_as_a_warning() -> None:
    events: list[ProgressEvent] = []
    provider = ScriptedProvider([tool_round(0), "done"])
    result = await make_orchestrator(on_progress=events.append).run_agent(
        agent_config(provider), "hi"
    )
    assert result.success
    (warning,) = [e for e in events if e.type == "warning"]
    assert warning.data["tool"] == "missing"


async def test_run_id_is_on_every_event_and_generated_when_not_given() -> None:
    events: list[ProgressEvent] = []
    oma = make_orchestrator(on_progress=events.append)
    await oma.run_agent(agent_config(ScriptedProvider(["a"])), "hi", run_id="mine")
    await oma.run_agent(agent_config(ScriptedProvider(["b"])), "hi")
    assert [e.run_id for e in events[:2]] == ["mine", "mine"]
    generated = {e.run_id for e in events[2:]}
    assert len(generated) == 1 and None not in generated and "mine" not in generated


async def test_agent_complete_carries_the_outcome() -> None:
    events: list[ProgressEvent] = []
    result = await make_orchestrator(on_progress=events.append).run_agent(
        AgentConfig("a", provider=ScriptedProvider(["fine"])), "hi", run_id="r1"
    )
    complete = events[-1]
    assert complete.type == "agent_complete" and complete.run_id == "r1"
    assert complete.data == {
        "success": True,
        "output": "fine",
        "usage": result.usage,
        "status": "ok",
    }
    assert not math.isnan(result.usage.total_tokens)
