"""``RunSettings``: one frozen object per run, resolved once by ``run_agent`` (defaults, then
``OpenMultiAgent``'s, then the ``AgentConfig``'s, then the call's), read by the loop and by the
call middleware."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from oma_core import (
    Agent,
    AgentConfig,
    Budget,
    OpenMultiAgent,
    PluginHost,
    RunSettings,
    hookimpl,
    tool,
)
from oma_core.retry import RetryPolicy
from oma_core.testing import ScriptedProvider
from oma_core.toolkit import ModelCall, RunContext


class Capture:
    """Middleware that keeps the ``RunContext`` of every call it sees."""

    def __init__(self) -> None:
        self.runs: list[RunContext] = []

    @hookimpl(wrapper=True)
    def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
        self.runs.append(run)
        return (yield)


@pytest.fixture
def capture() -> Capture:
    return Capture()


@pytest.fixture
def host(capture: Capture) -> PluginHost:
    host = PluginHost(load_entrypoints=False)
    host.register(capture, "capture")
    return host


@pytest.mark.parametrize(
    "bad",
    [{"timeout": 0}, {"call_timeout": -1}, {"timeout": float("inf")}, {"max_tool_calls": -1}],
)
def test_bad_settings_are_refused_when_built(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        RunSettings(**bad)


def test_settings_are_frozen() -> None:
    settings = RunSettings(timeout=1.0)
    with pytest.raises(AttributeError):
        settings.timeout = 2.0  # type: ignore[misc]


async def test_run_agent_resolves_the_settings_once_most_specific_winning(
    host: PluginHost, capture: Capture
) -> None:
    oma = OpenMultiAgent(plugins=host, timeout=30, call_timeout=9, max_retries=5)
    config = AgentConfig(name="a", provider=ScriptedProvider(["ok"]), max_retries=4)
    shared = Budget(max_tokens=10_000)
    result = await oma.run_agent(
        config,
        "hi",
        run_id="r1",
        metadata={"k": "v"},
        call_timeout=3,
        max_retries=1,
        budget=shared,
        settings=RunSettings(timeout=20, metadata={"ignored": True}),
    )
    assert result.success
    (run,) = capture.runs
    assert run.run_id == "r1"
    assert run.metadata == {"k": "v"}  # the keyword wins over settings=
    assert run.settings.timeout == 20  # settings= wins over the orchestrator's
    assert run.settings.call_timeout == 3  # the keyword wins over the orchestrator's
    assert run.settings.retry is not None and run.settings.retry.max_retries == 1
    assert run.budgets == (shared,)


async def test_without_call_settings_the_config_beats_the_orchestrator(
    host: PluginHost, capture: Capture
) -> None:
    oma = OpenMultiAgent(plugins=host, max_retries=5, retry_delay=0.25)
    config = AgentConfig(name="a", provider=ScriptedProvider(["ok"]), max_retries=4)
    await oma.run_agent(config, "hi")
    retry = capture.runs[0].settings.retry
    assert retry is not None and (retry.max_retries, retry.delay) == (4, 0.25)


async def test_numeric_caps_make_a_ledger_of_the_run_and_the_lowest_wins(
    host: PluginHost, capture: Capture
) -> None:
    oma = OpenMultiAgent(plugins=host, max_token_budget=500)
    config = AgentConfig(name="a", provider=ScriptedProvider(["ok", "ok"]))
    await oma.run_agent(config, "hi", max_token_budget=200)
    await oma.run_agent(config, "hi", max_token_budget=900)
    first, second = (run.budgets for run in capture.runs)
    assert [b.max_tokens for b in first] == [200]
    assert [b.max_tokens for b in second] == [500]
    assert first[0] is not second[0]  # per run, not shared


async def test_a_plain_agent_run_takes_settings_too(host: PluginHost, capture: Capture) -> None:
    policy = RetryPolicy(max_retries=0)
    agent = Agent(AgentConfig(name="a", provider=ScriptedProvider(["ok"])), plugins=host)
    await agent.run("hi", settings=RunSettings(run_id="x", retry=policy, metadata={"n": 1}))
    (run,) = capture.runs
    assert (run.run_id, run.metadata, run.settings.retry) == ("x", {"n": 1}, policy)


async def test_every_run_gets_its_own_run_id(host: PluginHost, capture: Capture) -> None:
    agent = Agent(AgentConfig(name="a", provider=ScriptedProvider(["a", "b"])), plugins=host)
    await agent.run("hi")
    await agent.run("hi")
    ids = [run.run_id for run in capture.runs]
    assert len(set(ids)) == 2 and all(len(i) == 32 for i in ids)


# -- a per-run setting end to end: max_tool_calls ------------------------------------------------


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def _tool_turn(*ids: str) -> dict[str, Any]:
    calls = [{"type": "tool_use", "id": i, "name": "ping", "input": {}} for i in ids]
    return {"role": "assistant", "content": calls}


async def test_max_tool_calls_answers_the_calls_past_the_cap_without_running_them() -> None:
    provider = ScriptedProvider([_tool_turn("t1", "t2"), _tool_turn("t3"), "done"])
    oma = OpenMultiAgent(plugins=PluginHost(load_entrypoints=False))
    config = AgentConfig(name="a", provider=provider, tools=[ping])
    result = await oma.run_agent(config, "go", settings=RunSettings(max_tool_calls=1))
    assert result.output == "done"
    results = [b for m in result.messages if m.role == "user" for b in m.content]
    assert [(r.tool_use_id, r.is_error) for r in results] == [
        ("t1", False),
        ("t2", True),
        ("t3", True),
    ]
    assert results[0].content == "pong"
    assert "at most 1 tool calls" in str(results[1].content)


async def test_without_max_tool_calls_every_call_runs() -> None:
    provider = ScriptedProvider([_tool_turn("t1", "t2"), "done"])
    agent = Agent(AgentConfig(name="a", provider=provider, tools=[ping]))
    result = await agent.run("go")
    results = [b for m in result.messages if m.role == "user" for b in m.content]
    assert [r.is_error for r in results] == [False, False]


# -- "provider:model" names both -------------------------------------------------------------------


async def test_a_provider_prefix_in_the_model_picks_the_provider() -> None:
    config = AgentConfig(
        name="a", model="scripted:the-model", provider_options={"responses": ["from scripted"]}
    )
    agent = Agent(config, plugins=PluginHost(load_entrypoints=False))
    result = await agent.run("hi")
    assert result.output == "from scripted"
    assert agent.provider().requests[0].model == "the-model"


async def test_a_model_whose_prefix_is_no_provider_is_taken_as_it_is() -> None:
    provider = ScriptedProvider(["ok"])
    config = AgentConfig(name="a", provider=provider, model="ft:gpt-4o:acme")
    await Agent(config).run("hi")
    assert provider.requests[0].model == "ft:gpt-4o:acme"


async def test_an_explicit_provider_and_the_same_prefix_agree() -> None:
    config = AgentConfig(
        name="a",
        provider="scripted",
        model="scripted:m",
        provider_options={"responses": ["ok"]},
    )
    agent = Agent(config, plugins=PluginHost(load_entrypoints=False))
    assert (await agent.run("hi")).output == "ok"
    assert agent.provider().requests[0].model == "m"
