"""Input is checked when a run is called, before any hook, provider call, progress event or
evaluation.
"""

from __future__ import annotations

import asyncio
import datetime
import re
from typing import Any

import pytest
from _builders import (
    HookRecorder,
    agent_config,
    assistant_text,
    builtin_host,
    collecting_scorer,
    make,
    make_orchestrator,
    make_replying_ok,
    scripted_agent,
    text_block,
    tool_call_turn,
    user_turn,
    vision_agent,
)

from oma_core import (
    Agent,
    AgentConfig,
    EvalCase,
    InvalidMessageError,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    load_messages,
)
from oma_core.agent import BeforeRunContext
from oma_core.testing import ScriptedProvider


def test_run_with_a_mapping_raises_at_the_call_site() -> None:
    agent, _ = scripted_agent(["ok"])
    with pytest.raises(InvalidMessageError, match="messages must be a list, got dict"):
        agent.run(user_turn("x"))  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["run", "stream"])
def test_an_empty_conversation_is_refused_by_run_and_stream(method: str) -> None:
    agent, _ = scripted_agent(["ok"])
    with pytest.raises(InvalidMessageError):
        getattr(agent, method)([])


def test_uncloneable_data_is_refused_at_the_call_site() -> None:
    agent, _ = scripted_agent(["ok"])
    conv = [user_turn("x"), tool_call_turn("t", {"when": {1, 2}})]
    with pytest.raises(
        InvalidMessageError, match="messages must contain cloneable structured data"
    ):
        agent.run(conv)


async def test_invalid_input_runs_no_hook_no_progress_no_evaluation_no_history() -> None:
    recorder = HookRecorder()
    host = builtin_host(recorder)
    own_hook_calls: list[Any] = []
    progress: list[Any] = []
    scored: list[Any] = []
    provider = ScriptedProvider(["ok"])
    config = AgentConfig(name="a", provider=provider, before_run=own_hook_calls.append)
    oma = OpenMultiAgent(
        on_progress=progress.append,
        evaluation=OnlineEvaluationConfig(scorers=[collecting_scorer(scored)]),
        plugins=host,
    )
    bad = [{"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]}]
    with pytest.raises(InvalidMessageError):
        _ = oma.run_agent(config, bad)
    agent = Agent(config, plugins=host)
    with pytest.raises(InvalidMessageError):
        agent.run(bad)
    with pytest.raises(InvalidMessageError):
        agent.prompt([{"type": "video"}])
    await oma.evaluation.flush()
    assert recorder.before_run == [] and own_hook_calls == []
    assert recorder.progress == [] and progress == []
    assert scored == [] and oma.evaluation.stats().sampled == 0
    assert agent.get_history() == []
    assert provider.requests == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"role": "user", "content": [text_block("x")]}, "messages must be a list, got dict"),
        ([], "at least one"),
        (
            [user_turn("a"), {"role": "user", "content": "b"}],
            "messages[1].content must be a list of content blocks, got str",
        ),
        (None, "got None"),
    ],
)
def test_run_and_run_agent_refuse_malformed_conversations(value: Any, message: str) -> None:
    agent, _ = vision_agent([])
    with pytest.raises(InvalidMessageError, match=re.escape(message)):
        agent.run(value)
    with pytest.raises(InvalidMessageError, match=re.escape(message)):
        _ = OpenMultiAgent(plugins=builtin_host()).run_agent(AgentConfig(name="v"), value)


@pytest.mark.parametrize(
    ("bad", "bad_blocks"),
    [
        pytest.param(
            user_turn({"type": "text", "text": print}),
            [{"type": "text", "text": print}],
            id="function",
        ),
        pytest.param(
            user_turn({"type": "text", "text": b"x"}), [{"type": "text", "text": b"x"}], id="bytes"
        ),
        pytest.param(
            {"role": "system", "content": [text_block("x")]},
            [{"type": "system"}],
            id="role-and-type",
        ),
        pytest.param({"role": "user", "content": "plain"}, [assistant_text("x")], id="shape"),
        pytest.param(user_turn({"type": "image"}), [{"type": "image"}], id="no-source"),
        pytest.param(
            user_turn({"type": "text", "text": "x", "cache_control": {}}),
            [{"type": "text", "text": "x", "cache_control": {}}],
            id="magic-key",
        ),
    ],
)
async def test_invalid_input_raises_before_hooks_providers_progress_or_evaluation(
    bad: dict[str, Any], bad_blocks: list[Any]
) -> None:
    hook_calls: list[Any] = []
    provider = ScriptedProvider(["never"])
    progress: list[ProgressEvent] = []
    scored: list[EvalCase] = []
    oma = OpenMultiAgent(
        on_progress=progress.append,
        evaluation=OnlineEvaluationConfig(scorers=[collecting_scorer(scored)]),
        plugins=builtin_host(),
    )
    config = AgentConfig(name="v", provider=provider, before_run=hook_calls.append)
    agent = Agent(config, plugins=builtin_host())
    with pytest.raises(InvalidMessageError):
        agent.run([bad])
    with pytest.raises(InvalidMessageError):
        agent.stream([bad])
    with pytest.raises(InvalidMessageError):
        _ = oma.run_agent(config, [bad])
    with pytest.raises(InvalidMessageError):
        agent.prompt(bad_blocks)
    await oma.evaluation.flush()
    assert hook_calls == [] and provider.requests == [] and progress == [] and scored == []
    assert oma.evaluation.stats().sampled == 0
    assert agent.get_history() == []


def test_data_that_cannot_be_cloned_is_an_invalid_message_error() -> None:
    call = {"type": "tool_use", "id": "t", "name": "n", "input": {"when": {1, 2}}}
    with pytest.raises(InvalidMessageError, match="cloneable structured data"):
        load_messages([user_turn("x"), {"role": "assistant", "content": [call]}])
    assert issubclass(InvalidMessageError, ValueError)


@pytest.mark.parametrize(
    "value",
    [print, {1, 2}, b"bytes", datetime.datetime(2026, 1, 1), object()],
    ids=["function", "set", "bytes", "datetime", "object"],
)
@pytest.mark.parametrize("where", ["tool input", "text", "block", "content", "message"])
def test_uncloneable_data_anywhere_is_refused_as_such(value: Any, where: str) -> None:
    if where == "tool input":
        call = {"type": "tool_use", "id": "t", "name": "n", "input": {"x": [value]}}
        data: Any = [user_turn("x"), {"role": "assistant", "content": [call]}]
    elif where == "text":
        data = [user_turn({"type": "text", "text": value})]
    elif where == "block":
        data = [user_turn("x", value)]
    elif where == "content":
        data = [{"role": "user", "content": value}]
    else:
        data = [user_turn("x"), value]
    agent, provider = vision_agent(["never"])
    with pytest.raises(
        InvalidMessageError, match="messages must contain cloneable structured data"
    ):
        agent.run(data)
    assert provider.requests == []


async def test_stream_validates_when_called_before_the_iterator_starts() -> None:
    agent, provider = vision_agent(["never"])
    with pytest.raises(InvalidMessageError, match="messages must be a list, got dict"):
        agent.stream(user_turn("not wrapped in a list"))  # type: ignore[arg-type]
    assert provider.requests == []

    agent, _ = scripted_agent(["ok"])
    with pytest.raises(InvalidMessageError, match=r"messages\[1\]\.content must be a list"):
        agent.stream([user_turn("x"), {"role": "assistant", "content": "nope"}])


async def test_an_empty_conversation_is_refused(host: PluginHost) -> None:
    agent, _ = make(host)
    with pytest.raises(InvalidMessageError):
        agent.run([])


async def test_invalid_run_input_raises_at_the_call_and_nothing_runs(host: PluginHost) -> None:
    calls: list[object] = []
    agent, provider = make(host, "never", before_run=lambda ctx: calls.append(ctx))
    with pytest.raises(InvalidMessageError, match=r"messages\[0\]"):
        agent.run([{"role": "robot", "content": [{"type": "text", "text": "x"}]}])
    with pytest.raises(InvalidMessageError):
        agent.stream([{"role": "user", "content": "not a list"}])
    assert calls == [] and provider.requests == []


async def test_invalid_prompt_input_leaves_hooks_provider_and_history_alone(
    host: PluginHost,
) -> None:
    calls: list[object] = []
    agent, provider = make(host, "never", before_run=lambda ctx: calls.append(ctx))
    with pytest.raises(InvalidMessageError, match=r"messages\[0\]\.content"):
        agent.prompt(
            [
                {
                    "type": "image",
                    "source": {
                        "type": "url",
                        "media_type": "image/png",
                        "url": "file:///etc/passwd",
                    },
                }
            ]
        )
    assert calls == [] and provider.requests == [] and agent.get_history() == []


@pytest.mark.parametrize(
    ("method", "value", "message"),
    [
        ("run", {"role": "user"}, "messages must be a list, got dict"),
        ("stream", None, "messages must be a list, got None"),
        ("run", [{"role": "user", "content": "hi"}], "messages[0].content must be a list"),
        ("stream", [], "messages"),
        ("prompt", None, "messages[0].content must be a str or a list of content blocks, got None"),
        ("prompt", [], "messages[0].content"),
        ("prompt", [{"type": "tool_use", "id": "1", "name": "n", "input": {}}], "messages[0]"),
    ],
)
async def test_invalid_input_raises_at_the_call_site_and_nothing_else_happens(
    host: PluginHost, method: str, value: object, message: str
) -> None:
    hooked: list[BeforeRunContext] = []
    agent, provider = make_replying_ok(host, before_run=hooked.append)
    with pytest.raises(InvalidMessageError) as info:
        getattr(agent, method)(value)
    assert message in str(info.value)
    await asyncio.sleep(0)
    assert hooked == [] and provider.requests == [] and agent.get_history() == []
    assert agent._provider is None  # no provider was even created


async def test_invalid_input_raises_at_the_call_before_any_progress() -> None:
    events: list[ProgressEvent] = []
    oma = make_orchestrator(
        on_progress=events.append, evaluation=OnlineEvaluationConfig([lambda c: 1.0])
    )
    with pytest.raises(InvalidMessageError, match="must be a list"):
        oma.run_agent(agent_config(ScriptedProvider(["x"])), {"role": "user"})  # no await needed
    with pytest.raises(InvalidMessageError):
        oma.run_agent(agent_config(ScriptedProvider(["x"])), [])
    assert events == []
    assert oma.evaluation.stats().sampled == 0


def test_run_agent_is_a_plain_method_that_checks_before_returning() -> None:
    oma = make_orchestrator(evaluation=OnlineEvaluationConfig([lambda case: 1.0]))
    config = AgentConfig("a", provider=ScriptedProvider(["x"]))
    with pytest.raises(InvalidMessageError, match=r"messages\[0\]"):
        oma.run_agent(config, [{"role": "user", "content": "not a list"}])  # no loop needed
    coroutine = oma.run_agent(config, "fine")
    assert asyncio.iscoroutine(coroutine)
    coroutine.close()
    assert oma.evaluation.stats().sampled == 0
