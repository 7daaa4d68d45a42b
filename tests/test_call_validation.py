"""Input is checked when a run is called, before any hook, provider call, progress event or
evaluation.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import Any

import pytest

from oma_core import (
    Agent,
    AgentConfig,
    EvalCase,
    InvalidMessageError,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    hookimpl,
    load_messages,
)
from oma_core.testing import ScriptedProvider


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _tool_call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return _assistant({"type": "tool_use", "id": call_id, "name": name, "input": args})


def _agent(
    responses: list[Any], host: PluginHost | None = None, **config: Any
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="a", provider=provider, **config), plugins=host)
    return agent, provider


def _collect(into: list[Any]) -> Callable[[EvalCase], float]:
    """A scorer that keeps every case it sees."""

    def scorer(case: EvalCase) -> float:
        into.append(case)
        return 1.0

    return scorer


def _host(*plugins: object) -> PluginHost:
    host = PluginHost(load_entrypoints=False)
    for plugin in plugins:
        host.register(plugin)
    return host


class _Recorder:
    """An in-process plugin recording before_run and progress calls."""

    def __init__(self) -> None:
        self.before_run: list[Any] = []
        self.progress: list[Any] = []

    @hookimpl
    def oma_before_run(self, ctx: Any) -> None:
        self.before_run.append(ctx)

    @hookimpl
    def oma_progress(self, event: Any) -> None:
        self.progress.append(event)


def _assistant_says(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [_text(text)]}


def _scripted(responses: list[Any], **config: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="vision", provider=provider, **config), plugins=_host())
    return agent, provider


def test_run_with_a_mapping_raises_at_the_call_site() -> None:
    agent, _ = _agent(["ok"])
    with pytest.raises(InvalidMessageError, match="messages must be a list, got dict"):
        agent.run(_user("x"))  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["run", "stream"])
def test_an_empty_conversation_is_refused_by_run_and_stream(method: str) -> None:
    agent, _ = _agent(["ok"])
    with pytest.raises(InvalidMessageError):
        getattr(agent, method)([])


def test_stream_validates_when_called_before_iteration() -> None:
    agent, _ = _agent(["ok"])
    with pytest.raises(InvalidMessageError, match=r"messages\[1\]\.content must be a list"):
        agent.stream([_user("x"), {"role": "assistant", "content": "nope"}])


def test_uncloneable_data_is_refused_at_the_call_site() -> None:
    agent, _ = _agent(["ok"])
    conv = [_user("x"), _tool_call("t", {"when": {1, 2}})]
    with pytest.raises(
        InvalidMessageError, match="messages must contain cloneable structured data"
    ):
        agent.run(conv)


async def test_invalid_input_runs_no_hook_no_progress_no_evaluation_no_history() -> None:
    recorder = _Recorder()
    host = _host(recorder)
    own_hook_calls: list[Any] = []
    progress: list[Any] = []
    scored: list[Any] = []
    provider = ScriptedProvider(["ok"])
    config = AgentConfig(name="a", provider=provider, before_run=own_hook_calls.append)
    oma = OpenMultiAgent(
        on_progress=progress.append,
        evaluation=OnlineEvaluationConfig(scorers=[_collect(scored)]),
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
        ({"role": "user", "content": [_text("x")]}, "messages must be a list, got dict"),
        ([], "at least one"),
        (
            [_user("a"), {"role": "user", "content": "b"}],
            "messages[1].content must be a list of content blocks, got str",
        ),
        (None, "got None"),
    ],
)
def test_run_and_run_agent_refuse_malformed_conversations(value: Any, message: str) -> None:
    agent, _ = _scripted([])
    with pytest.raises(InvalidMessageError, match=re.escape(message)):
        agent.run(value)
    with pytest.raises(InvalidMessageError, match=re.escape(message)):
        _ = OpenMultiAgent(plugins=_host()).run_agent(AgentConfig(name="v"), value)


@pytest.mark.parametrize(
    ("bad", "bad_blocks"),
    [
        pytest.param(
            _user({"type": "text", "text": print}), [{"type": "text", "text": print}], id="function"
        ),
        pytest.param(
            _user({"type": "text", "text": b"x"}), [{"type": "text", "text": b"x"}], id="bytes"
        ),
        pytest.param(
            {"role": "system", "content": [_text("x")]}, [{"type": "system"}], id="role-and-type"
        ),
        pytest.param({"role": "user", "content": "plain"}, [_assistant_says("x")], id="shape"),
        pytest.param(_user({"type": "image"}), [{"type": "image"}], id="no-source"),
        pytest.param(
            _user({"type": "text", "text": "x", "cache_control": {}}),
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
        evaluation=OnlineEvaluationConfig(scorers=[_collect(scored)]),
        plugins=_host(),
    )
    config = AgentConfig(name="v", provider=provider, before_run=hook_calls.append)
    agent = Agent(config, plugins=_host())
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
        load_messages([_user("x"), {"role": "assistant", "content": [call]}])
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
        data: Any = [_user("x"), {"role": "assistant", "content": [call]}]
    elif where == "text":
        data = [_user({"type": "text", "text": value})]
    elif where == "block":
        data = [_user("x", value)]
    elif where == "content":
        data = [{"role": "user", "content": value}]
    else:
        data = [_user("x"), value]
    agent, provider = _scripted(["never"])
    with pytest.raises(
        InvalidMessageError, match="messages must contain cloneable structured data"
    ):
        agent.run(data)
    assert provider.requests == []


async def test_stream_validates_when_called_before_the_iterator_starts() -> None:
    agent, provider = _scripted(["never"])
    with pytest.raises(InvalidMessageError, match="messages must be a list, got dict"):
        agent.stream(_user("not wrapped in a list"))  # type: ignore[arg-type]
    assert provider.requests == []
