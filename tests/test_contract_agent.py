"""The agent, orchestration and plugin promises of DESIGN.md sections 5, 6 and 8.

Written from the contract text alone: each test quotes (in its name) the sentence it holds the
implementation to. Everything runs in process on ``ScriptedProvider``, small in-process
plugins and the built-in ``echo`` provider; nothing touches the network.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import hashlib
import inspect
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Literal

import attrs
import pluggy
import pytest

import oma_core
from oma_core import (
    Agent,
    AgentConfig,
    BackendSpec,
    Budget,
    Capabilities,
    EvalCase,
    InvalidMessageError,
    LLMMessage,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    ProviderError,
    ProviderSpec,
    RunResult,
    RunStatus,
    StreamEvent,
    TaskSpec,
    Team,
    TeamRunResult,
    TextBlock,
    UnsupportedContentBlockError,
    Usage,
    dump_messages,
    hookimpl,
    load_messages,
    tool,
)
from oma_core.backends import BackendRequest, BackendResult
from oma_core.evaluation import StorePayloads
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ResponseComplete,
    TextDelta,
    ToolCall,
)
from oma_core.testing import Delayed, ScriptedProvider

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode("ascii")
PNG_BYTES = len(base64.b64decode(PNG))


def _img(name: str) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "url", "media_type": "image/png", "url": f"https://example.com/{name}"},
    }


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


def _sent(provider: ScriptedProvider, index: int = 0) -> list[dict[str, Any]]:
    return dump_messages(provider.requests[index].messages)


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


# -------------------------------------------------------------------------------------------
# section 8: names
# -------------------------------------------------------------------------------------------

SECTION_8_NAMES = [
    "Agent",
    "AgentConfig",
    "RunResult",
    "RunStatus",
    "Usage",
    "StreamEvent",
    "ProgressEvent",
    "OpenMultiAgent",
    "OnlineEvaluationConfig",
    "EvalCase",
    "Budget",
    "LLMMessage",
    "TextBlock",
    "ImageBlock",
    "VideoBlock",
    "ToolUseBlock",
    "ToolResultBlock",
    "ReasoningBlock",
    "Base64Source",
    "UrlSource",
    "load_messages",
    "dump_messages",
    "estimate_tokens",
    "image_url",
    "image_base64",
    "video_url",
    "video_base64",
    "IMAGE_MEDIA_TYPES",
    "OmaError",
    "InvalidMessageError",
    "UnsupportedContentBlockError",
    "ProviderError",
    "BudgetExceededError",
    "hookimpl",
    "ProviderSpec",
    "BackendSpec",
    "Capabilities",
    "PluginHost",
    "Team",
    "TaskSpec",
    "TeamRunResult",
    "tool",
]


@pytest.mark.parametrize("name", SECTION_8_NAMES)
def test_every_section_8_name_is_exported_from_oma_core(name: str) -> None:
    assert name in oma_core.__all__
    assert getattr(oma_core, name) is not None


def test_testing_exports_scripted_provider_and_delayed() -> None:
    import oma_core.testing as testing

    assert testing.ScriptedProvider is ScriptedProvider
    assert testing.Delayed is Delayed


def test_hookimpl_is_pluggys_marker_for_the_oma_project() -> None:
    assert isinstance(hookimpl, pluggy.HookimplMarker)
    assert hookimpl.project_name == "oma"


# -------------------------------------------------------------------------------------------
# AgentConfig
# -------------------------------------------------------------------------------------------

AGENT_CONFIG_PARAMS: list[tuple[str, Any]] = [
    ("name", inspect.Parameter.empty),
    ("model", None),
    ("provider", "echo"),
    ("base_url", None),
    ("api_key", None),
    ("system_prompt", None),
    ("description", None),
    ("history", ()),
    ("before_run", None),
    ("tools", ()),
    ("max_turns", 10),
    ("max_history_tokens", None),
    ("max_retries", None),
    ("retry_delay", None),
    ("retry_backoff", None),
    ("backend", None),
    ("provider_options", {}),
]


def test_agent_config_signature_lists_the_contract_parameters_in_order() -> None:
    params = list(inspect.signature(AgentConfig).parameters)
    names = [name for name, _ in AGENT_CONFIG_PARAMS]
    assert params[: len(names)] == names


def test_agent_config_defaults_are_the_contract_defaults() -> None:
    config = AgentConfig(name="n")
    for name, default in AGENT_CONFIG_PARAMS[1:]:
        value = getattr(config, name)
        if isinstance(default, tuple):
            assert tuple(value) == default, name
        elif isinstance(default, dict):
            assert dict(value) == default, name
        else:
            assert value == default, name


def test_agent_config_takes_name_model_provider_positionally() -> None:
    config = AgentConfig("n", "m", "scripted")
    assert (config.name, config.model, config.provider) == ("n", "m", "scripted")


def test_an_invalid_history_makes_agent_construction_raise() -> None:
    with pytest.raises(InvalidMessageError):
        Agent(AgentConfig(name="a", history=[{"role": "robot", "content": [_text("x")]}]))


# -------------------------------------------------------------------------------------------
# run / prompt / history
# -------------------------------------------------------------------------------------------


async def test_run_with_a_string_sends_one_user_text_message() -> None:
    agent, provider = _agent(["hello"])
    result = await agent.run("What is shown?")
    assert isinstance(result, RunResult)
    assert result.success and result.output == "hello"
    assert result.status == RunStatus("ok", None) or (
        result.status.code == "ok" and result.status.error is None
    )
    assert _sent(provider) == [_user("What is shown?")]


async def test_run_with_messages_sends_the_complete_conversation() -> None:
    conv = [_user("a", _img("x.png")), _assistant("b"), _user("c")]
    agent, provider = _agent(["ok"])
    await agent.run(conv)
    assert _sent(provider) == conv


async def test_run_is_fresh_and_neither_reads_nor_updates_history() -> None:
    agent, provider = _agent(["r1", "r2"], history=[_user("old"), _assistant("older")])
    await agent.run("x")
    assert _sent(provider) == [_user("x")]
    assert dump_messages(agent.get_history()) == [_user("old"), _assistant("older")]
    async for _ in agent.stream("y"):
        pass
    assert _sent(provider, 1) == [_user("y")]
    assert len(agent.get_history()) == 2


async def test_history_seeds_prompt_and_prompt_appends_turn_and_reply() -> None:
    agent, provider = _agent(["r1", "r2"], history=[_user("old"), _assistant("older")])
    first = await agent.prompt("q1")
    assert first.success
    assert _sent(provider) == [_user("old"), _assistant("older"), _user("q1")]
    await agent.prompt([_img("p.png"), _text("q2")])
    assert _sent(provider, 1) == [
        _user("old"),
        _assistant("older"),
        _user("q1"),
        _assistant("r1"),
        _user(_img("p.png"), "q2"),
    ]
    assert dump_messages(agent.get_history())[-2:] == [_user(_img("p.png"), "q2"), _assistant("r2")]


async def test_a_failed_prompt_leaves_history_as_it_was() -> None:
    agent, _ = _agent(["r1", ProviderError("bad request", status_code=400)])
    await agent.prompt("q1")
    before = dump_messages(agent.get_history())
    result = await agent.prompt("q2")
    assert not result.success
    assert dump_messages(agent.get_history()) == before


async def test_invalid_prompt_blocks_raise_as_messages_0_content_and_append_nothing() -> None:
    agent, provider = _agent(["r"])
    with pytest.raises(InvalidMessageError) as info:
        agent.prompt([{"type": "text"}])
    assert str(info.value).startswith("messages[0].content[0]")
    with pytest.raises(InvalidMessageError):
        agent.prompt([{"type": "tool_use", "id": "1", "name": "n", "input": {}}])
    assert agent.get_history() == []
    assert provider.requests == []


async def test_get_history_returns_a_new_list_each_time() -> None:
    agent, _ = _agent(["r"])
    await agent.prompt("q")
    history = agent.get_history()
    assert isinstance(history, list)
    assert all(isinstance(m, LLMMessage) for m in history)
    history.clear()
    assert len(agent.get_history()) == 2
    assert agent.get_history() is not agent.get_history()


async def test_mutating_run_result_messages_changes_no_history() -> None:
    agent, _ = _agent(["r"])
    result = await agent.prompt("q")
    result.messages.clear() if isinstance(result.messages, list) else None
    assert len(agent.get_history()) == 2


def test_run_sync_and_prompt_sync_wrap_the_async_calls() -> None:
    agent, provider = _agent(["a", "b"])
    assert agent.run_sync("x").output == "a"
    assert agent.prompt_sync("y").output == "b"
    assert len(agent.get_history()) == 2
    assert len(provider.requests) == 2


# -------------------------------------------------------------------------------------------
# validation and copying at call time
# -------------------------------------------------------------------------------------------


async def test_mutating_input_after_run_is_called_changes_nothing() -> None:
    conv = [_user("orig", _img("a.png"))]
    agent, provider = _agent(["ok"])
    coro = agent.run(conv)
    conv[0]["content"][0]["text"] = "changed"
    conv[0]["content"][1]["source"]["url"] = "https://evil.example/b.png"
    conv.append(_assistant("extra"))
    await coro
    assert _sent(provider) == [_user("orig", _img("a.png"))]


async def test_mutating_input_after_stream_is_called_changes_nothing() -> None:
    conv = [_user("orig")]
    agent, provider = _agent(["ok"])
    events = agent.stream(conv)
    conv[0]["content"][0]["text"] = "changed"
    async for _ in events:
        pass
    assert _sent(provider) == [_user("orig")]


async def test_mutating_blocks_after_prompt_is_called_changes_nothing() -> None:
    blocks = [_text("orig")]
    agent, provider = _agent(["ok"])
    coro = agent.prompt(blocks)
    blocks[0]["text"] = "changed"
    blocks.append(_text("more"))
    await coro
    assert _sent(provider) == [_user("orig")]
    assert dump_messages(agent.get_history())[0] == _user("orig")


async def test_mutating_input_after_run_agent_is_called_changes_nothing() -> None:
    conv = [_user("orig")]
    provider = ScriptedProvider(["ok"])
    oma = OpenMultiAgent()
    coro = oma.run_agent(AgentConfig(name="a", provider=provider), conv)
    conv[0]["content"][0]["text"] = "changed"
    await coro
    assert dump_messages(provider.requests[0].messages) == [_user("orig")]


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


# -------------------------------------------------------------------------------------------
# before_run
# -------------------------------------------------------------------------------------------


async def test_before_run_context_carries_messages_prompt_and_agent() -> None:
    seen: list[Any] = []
    conv = [_user("old"), _assistant("r"), _user("a", _img("x.png"), "b")]
    agent, _ = _agent(["ok"], before_run=seen.append)
    await agent.run(conv)
    (ctx,) = seen
    assert isinstance(ctx.messages, tuple)
    assert all(isinstance(m, LLMMessage) for m in ctx.messages)
    assert dump_messages(ctx.messages) == conv
    assert ctx.prompt == "ab"
    agent_view = ctx.agent
    name = agent_view.name if hasattr(agent_view, "name") else agent_view.config.name
    assert name == "a"


async def test_before_run_prompt_is_empty_for_an_image_only_turn() -> None:
    seen: list[Any] = []
    agent, _ = _agent(["ok"], before_run=seen.append)
    await agent.run([_user(_img("x.png"))])
    assert seen[0].prompt == ""


async def test_before_run_returning_none_leaves_the_input_unchanged() -> None:
    agent, provider = _agent(["ok"], before_run=lambda ctx: None)
    await agent.run([_user("t1", "t2")])
    assert _sent(provider) == [_user("t1", "t2")]


async def test_before_run_worked_example_replaces_first_text_and_drops_the_others() -> None:
    agent, provider = _agent(["ok"], before_run=lambda ctx: {"prompt": "new"})
    await agent.run([_user(_img("A.png"), "t1", _img("B.png"), "t2")])
    assert _sent(provider) == [_user(_img("A.png"), "new", _img("B.png"))]


async def test_before_run_evolved_context_rewrites_the_prompt() -> None:
    agent, provider = _agent(["ok"], before_run=lambda ctx: attrs.evolve(ctx, prompt="new"))
    await agent.run([_user("old"), _assistant("r"), _user("t1")])
    assert _sent(provider) == [_user("old"), _assistant("r"), _user("new")]


async def test_before_run_prepends_a_text_block_to_a_turn_without_text() -> None:
    agent, provider = _agent(["ok"], before_run=lambda ctx: {"prompt": "new"})
    await agent.run([_user(_img("A.png"))])
    assert _sent(provider) == [_user("new", _img("A.png"))]


async def test_before_run_appends_a_user_turn_when_there_is_none() -> None:
    def hook(ctx: Any) -> Mapping[str, Any]:
        return {"messages": [_assistant("only")], "prompt": "new"}

    agent, provider = _agent(["ok"], before_run=hook)
    await agent.run("original")
    assert _sent(provider) == [_assistant("only"), _user("new")]


async def test_before_run_messages_replace_first_then_prompt_applies() -> None:
    def hook(ctx: Any) -> Mapping[str, Any]:
        return {
            "messages": [_user("m1"), _assistant("m2"), _user("x", _img("A.png"), "y")],
            "prompt": "P",
        }

    agent, provider = _agent(["ok"], before_run=hook)
    await agent.run("original")
    assert _sent(provider) == [_user("m1"), _assistant("m2"), _user("P", _img("A.png"))]


async def test_before_run_prompt_equal_to_the_received_one_changes_nothing() -> None:
    agent, provider = _agent(["ok"], before_run=lambda ctx: {"prompt": ctx.prompt})
    await agent.run([_user("t1", _img("A.png"), "t2")])
    assert _sent(provider) == [_user("t1", _img("A.png"), "t2")]


async def test_before_run_async_hook_is_awaited() -> None:
    async def hook(ctx: Any) -> Mapping[str, Any]:
        await asyncio.sleep(0)
        return {"prompt": "async"}

    agent, provider = _agent(["ok"], before_run=hook)
    await agent.run("x")
    assert _sent(provider) == [_user("async")]


class _PromptSuffix:
    def __init__(self, suffix: str, log: list[str]) -> None:
        self.suffix = suffix
        self.log = log

    @hookimpl
    def oma_before_run(self, ctx: Any) -> Mapping[str, Any]:
        self.log.append(f"{self.suffix}<-{ctx.prompt}")
        return {"prompt": ctx.prompt + self.suffix}


async def test_package_hooks_run_in_pluggy_order_then_the_agents_own_hook() -> None:
    log: list[str] = []
    host = _host(_PromptSuffix("A", log), _PromptSuffix("B", log))

    def own(ctx: Any) -> Mapping[str, Any]:
        log.append(f"own<-{ctx.prompt}")
        return {"prompt": ctx.prompt + "!"}

    agent, provider = _agent(["ok"], host=host, before_run=own)
    await agent.run("p")
    # pluggy calls the plugin registered last first
    assert log == ["B<-p", "A<-pB", "own<-pBA"]
    assert _sent(provider) == [_user("pBA!")]


async def test_a_raising_before_run_hook_fails_the_run_without_raising() -> None:
    def hook(ctx: Any) -> None:
        raise RuntimeError("hook broke")

    agent, provider = _agent(["ok"], before_run=hook)
    result = await agent.run("x")
    assert not result.success
    assert result.status.code == "error"
    assert result.status.error is not None
    assert provider.requests == []


async def test_a_package_hook_that_raises_fails_the_run_without_raising() -> None:
    class Broken:
        @hookimpl
        def oma_before_run(self, ctx: Any) -> None:
            raise RuntimeError("package hook broke")

    agent, provider = _agent(["ok"], host=_host(Broken()))
    result = await agent.run("x")
    assert not result.success and provider.requests == []


@pytest.mark.parametrize(
    "returned",
    [42, {"messages": [{"role": "robot", "content": [_text("x")]}]}, {"prompt": 7}],
    ids=["int", "invalid-messages", "non-string-prompt"],
)
async def test_a_before_run_hook_returning_garbage_fails_the_run(returned: Any) -> None:
    agent, provider = _agent(["ok"], before_run=lambda ctx: returned)
    result = await agent.run("x")
    assert not result.success
    assert result.status.code == "error"
    assert provider.requests == []


async def test_a_raising_hook_in_stream_yields_error_then_done() -> None:
    def hook(ctx: Any) -> None:
        raise RuntimeError("hook broke")

    agent, _ = _agent(["ok"], before_run=hook)
    events = [event async for event in agent.stream("x")]
    assert [e.type for e in events][-2:] == ["error", "done"]
    assert isinstance(events[-2].data, BaseException)
    assert isinstance(events[-1].data, RunResult) and not events[-1].data.success


async def test_a_hook_rewrite_mutates_neither_caller_data_nor_the_stored_prompt_turn() -> None:
    conv = [_user("orig")]
    agent, provider = _agent(["ok", "ok2"], before_run=lambda ctx: {"prompt": "rewritten"})
    await agent.run(conv)
    assert conv == [_user("orig")]
    await agent.prompt("mine")
    assert _sent(provider, 1) == [_user("rewritten")]
    assert dump_messages(agent.get_history())[0] == _user("mine")


# -------------------------------------------------------------------------------------------
# stream events and RunResult
# -------------------------------------------------------------------------------------------


async def test_stream_ends_with_exactly_one_done_carrying_the_run_result() -> None:
    agent, _ = _agent(["hello there"])
    events = [event async for event in agent.stream("x")]
    assert all(isinstance(e, StreamEvent) for e in events)
    assert [e.type for e in events].count("done") == 1
    assert events[-1].type == "done"
    assert isinstance(events[-1].data, RunResult)
    assert events[-1].data.output == "hello there"
    assert "".join(e.data for e in events if e.type == "text") == "hello there"
    allowed = {"text", "reasoning", "tool_use", "tool_result", "error", "done"}
    assert {e.type for e in events} <= allowed


async def test_a_failed_stream_yields_an_error_event_with_the_exception_before_done() -> None:
    boom = ProviderError("bad request", status_code=400)
    agent, _ = _agent([boom])
    events = [event async for event in agent.stream("x")]
    types = [e.type for e in events]
    assert types.count("done") == 1 and types[-1] == "done"
    assert types.count("error") == 1 and types.index("error") < types.index("done")
    assert events[types.index("error")].data is boom
    assert events[-1].data.success is False


async def test_stream_works_as_an_async_context_manager() -> None:
    agent, _ = _agent(["hi"])
    async with agent.stream([_user("x")]) as events:
        collected = [event async for event in events]
    assert collected[-1].type == "done"


async def test_stream_context_exits_cleanly_when_left_early() -> None:
    agent, _ = _agent([Delayed(0.05, "hi")])
    async with agent.stream("x") as events:
        async for _ in events:
            break
    # a second stream still works: the first was closed
    agent2, _ = _agent(["again"])
    assert (await agent2.run("x")).output == "again"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_stream_reports_tool_use_and_tool_result_events() -> None:
    agent, _ = _agent([_tool_call("add", {"a": 1, "b": 2}), "3"], tools=[add])
    events = [event async for event in agent.stream("x")]
    types = [e.type for e in events]
    assert "tool_use" in types and "tool_result" in types
    assert types.index("tool_use") < types.index("tool_result") < types.index("done")


async def test_run_result_messages_are_the_produced_turns_only() -> None:
    agent, _ = _agent([_tool_call("add", {"a": 2, "b": 3}), "five"], tools=[add])
    result = await agent.run([_user("2+3?")])
    assert isinstance(result.messages, list)
    dumped = dump_messages(result.messages)
    assert [m["role"] for m in dumped] == ["assistant", "user", "assistant"]
    assert dumped[0]["content"][0]["type"] == "tool_use"
    tool_result = dumped[1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == "c1"
    assert "5" in json.dumps(tool_result["content"])
    assert not tool_result.get("is_error", False)
    assert dumped[2] == _assistant("five")
    assert result.output == "five"


async def test_run_result_usage_is_a_usage_with_token_counts() -> None:
    agent, _ = _agent(["ok"])
    result = await agent.run("x")
    assert isinstance(result.usage, Usage)
    assert isinstance(result.usage.input_tokens, int)
    assert isinstance(result.usage.output_tokens, int)


async def test_a_provider_error_is_a_failed_result_with_the_exception() -> None:
    boom = ProviderError("bad request", status_code=400)
    agent, _ = _agent([boom])
    result = await agent.run("x")
    assert result.success is False
    assert isinstance(result.status, RunStatus)
    assert result.status.code == "error"
    assert result.status.error is boom


# -------------------------------------------------------------------------------------------
# external backends
# -------------------------------------------------------------------------------------------


class _TinyBackend:
    kind = "tiny"
    display_name = "Tiny"

    def __init__(self, log: list[BackendRequest]) -> None:
        self.log = log
        self.closed = 0
        self.turn_closed = 0
        self.started = asyncio.Event()

    async def run(self, request: BackendRequest) -> AsyncIterator[Any]:
        self.log.append(request)
        try:
            yield TextDelta("re:" + request.prompt)
            if request.prompt == "hang":
                self.started.set()
                await asyncio.sleep(30)
            yield BackendResult(output="re:" + request.prompt)
        finally:
            self.turn_closed += 1

    async def aclose(self) -> None:
        self.closed += 1


class _TinyBackendPlugin:
    def __init__(self) -> None:
        self.requests: list[BackendRequest] = []
        self.built = 0
        self.backend: _TinyBackend | None = None
        self.made = asyncio.Event()

    def _factory(self, options: Mapping[str, Any]) -> _TinyBackend:
        self.built += 1
        self.backend = _TinyBackend(self.requests)
        self.made.set()
        return self.backend

    @hookimpl
    def oma_register_backends(self) -> list[BackendSpec]:
        return [BackendSpec(kind="tiny", display_name="Tiny", factory=self._factory)]


def _backend_agent(**config: Any) -> tuple[Agent, _TinyBackendPlugin, PluginHost]:
    plugin = _TinyBackendPlugin()
    host = _host(plugin)
    agent = Agent(AgentConfig(name="ext", backend={"kind": "tiny"}, **config), plugins=host)
    return agent, plugin, host


async def test_external_backend_runs_string_prompts() -> None:
    agent, plugin, _ = _backend_agent()
    result = await agent.run("hello")
    assert result.success and result.output == "re:hello"
    assert plugin.requests[0].prompt == "hello"
    assert plugin.requests[0].continue_session is False


async def test_external_backend_refuses_structured_input_before_anything_starts() -> None:
    agent, plugin, host = _backend_agent()
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.run([_user("x")])
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.stream([_user("x")])
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.prompt([_text("x")])
    progress: list[Any] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=host)
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        _ = oma.run_agent(AgentConfig(name="ext", backend={"kind": "tiny"}), [_user("x")])
    assert plugin.built == 0 and plugin.requests == [] and progress == []
    assert agent.get_history() == []


async def test_a_hook_changing_messages_fails_an_external_run() -> None:
    agent, plugin, _ = _backend_agent(before_run=lambda ctx: {"messages": [_user("other")]})
    result = await agent.run("hello")
    assert not result.success
    assert "cannot be forwarded without loss" in str(result.status.error)
    assert plugin.requests == []


async def test_a_hook_rewriting_the_prompt_reaches_an_external_backend() -> None:
    agent, plugin, _ = _backend_agent(before_run=lambda ctx: {"prompt": ctx.prompt + "!"})
    result = await agent.run("hello")
    assert result.success
    assert plugin.requests[0].prompt == "hello!"


async def test_history_does_not_seed_an_external_backend() -> None:
    agent, plugin, _ = _backend_agent(history=[_user("secret old turn"), _assistant("r")])
    result = await agent.prompt("now")
    assert result.success
    assert plugin.requests[0].prompt == "now"
    assert plugin.requests[0].continue_session is True


# -------------------------------------------------------------------------------------------
# ScriptedProvider
# -------------------------------------------------------------------------------------------


async def test_scripted_plays_strings_messages_and_dicts_in_order() -> None:
    message = load_messages([_assistant("from object")])[0]
    agent, provider = _agent(["one", message, _assistant("from dict")])
    outputs = [(await agent.run("x")).output for _ in range(3)]
    assert outputs == ["one", "from object", "from dict"]
    assert len(provider.requests) == 3


async def test_scripted_raises_an_exception_instance_when_reached() -> None:
    boom = ProviderError("nope", status_code=400)
    agent, _ = _agent(["first", boom])
    assert (await agent.run("x")).success
    result = await agent.run("y")
    assert result.status.error is boom


async def test_scripted_delayed_waits_before_answering() -> None:
    agent, _ = _agent([Delayed(0.2, "late")])
    start = time.monotonic()
    result = await agent.run("x")
    assert result.output == "late"
    assert time.monotonic() - start >= 0.19


async def test_an_exhausted_script_raises_an_error_that_says_so() -> None:
    agent, _ = _agent(["only"])
    await agent.run("x")
    result = await agent.run("y")
    assert not result.success
    assert re.search(r"exhaust|no more|ran out|empty", str(result.status.error), re.I)


async def test_scripted_records_messages_system_prompt_and_tools() -> None:
    agent, provider = _agent(["ok"], system_prompt="be brief", tools=[add])
    await agent.run("x")
    (request,) = provider.requests
    assert isinstance(request.messages, tuple)
    assert all(isinstance(m, LLMMessage) for m in request.messages)
    assert request.system_prompt == "be brief"
    assert [t.name for t in request.tools] == ["add"]


async def test_the_registered_scripted_provider_reads_provider_options_responses() -> None:
    agent = Agent(
        AgentConfig(name="s", provider="scripted", provider_options={"responses": ["a", "b"]})
    )
    assert (await agent.run("x")).output == "a"
    assert (await agent.run("y")).output == "b"


# -------------------------------------------------------------------------------------------
# echo
# -------------------------------------------------------------------------------------------


async def test_echo_describes_roles_block_types_text_and_media() -> None:
    conv = [
        _user(
            "hello echo",
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        ),
        _assistant("reply"),
        _user(
            {
                "type": "video",
                "source": {
                    "type": "url",
                    "media_type": "video/mp4",
                    "url": "https://example.com/clip.mp4",
                },
            }
        ),
    ]
    result = await Agent(AgentConfig(name="e")).run(conv)
    out = result.output
    assert result.success
    for piece in ("user", "assistant", "text", "image", "video", "hello echo", "reply"):
        assert piece in out
    assert "image/png" in out and "base64" in out and str(PNG_BYTES) in out
    assert "video/mp4" in out and "https://example.com/clip.mp4" in out and "url" in out
    assert PNG not in out


async def test_echo_shortens_text_past_200_characters() -> None:
    out = (await Agent(AgentConfig(name="e")).run("a" * 300 + " " + "b" * 200)).output
    assert "a" * 150 in out
    assert "a" * 201 not in out and "b" * 200 not in out
    full = (await Agent(AgentConfig(name="e")).run("c" * 200)).output
    assert "c" * 200 in full


async def test_echo_streams_in_chunks() -> None:
    events = [e async for e in Agent(AgentConfig(name="e")).stream("hello " * 20)]
    texts = [e for e in events if e.type == "text"]
    assert len(texts) > 1
    assert "".join(e.data for e in texts) == events[-1].data.output


# -------------------------------------------------------------------------------------------
# capabilities
# -------------------------------------------------------------------------------------------


class _TextOnlyPlugin:
    def __init__(self) -> None:
        self.provider = ScriptedProvider(["never"])

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        return [
            ProviderSpec(
                name="textonly",
                display_name="Text Only",
                factory=lambda settings: self.provider,
                capabilities=Capabilities.text_only(),
            )
        ]


async def test_an_unsupported_block_fails_before_any_io_and_is_never_retried() -> None:
    plugin = _TextOnlyPlugin()
    agent = Agent(
        AgentConfig(name="t", provider="textonly", max_retries=3, retry_delay=0.01),
        plugins=_host(plugin),
    )
    result = await agent.run([_user("look", _img("a.png"))])
    assert not result.success
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert str(error).startswith('Text Only cannot represent the "image" content block')
    assert plugin.provider.requests == []


async def test_a_supported_request_reaches_a_text_only_provider() -> None:
    plugin = _TextOnlyPlugin()
    agent = Agent(AgentConfig(name="t", provider="textonly"), plugins=_host(plugin))
    assert (await agent.run("only text")).output == "never"


# -------------------------------------------------------------------------------------------
# retries
# -------------------------------------------------------------------------------------------


def _unavailable() -> ProviderError:
    return ProviderError("unavailable", status_code=503)


async def test_default_ladder_retries_twice_with_equal_jitter_from_half_a_second() -> None:
    agent, provider = _agent([_unavailable(), "ok"])
    start = time.monotonic()
    result = await agent.run("x")
    elapsed = time.monotonic() - start
    assert result.success and len(provider.requests) == 2
    # equal jitter on 0.5 s: between 0.25 and 0.5 s
    assert 0.24 <= elapsed <= 0.9


async def test_default_ladder_gives_up_after_two_retries() -> None:
    agent, provider = _agent(
        [_unavailable(), _unavailable(), _unavailable(), "never"], retry_delay=0.01
    )
    result = await agent.run("x")
    assert not result.success and len(provider.requests) == 3
    assert isinstance(result.status.error, ProviderError)


async def test_a_non_retryable_error_is_not_retried() -> None:
    agent, provider = _agent([ProviderError("bad", status_code=400), "never"], retry_delay=0.01)
    result = await agent.run("x")
    assert not result.success and len(provider.requests) == 1


async def test_retry_settings_most_specific_wins() -> None:
    errors = [_unavailable() for _ in range(6)]
    oma = OpenMultiAgent(max_retries=4, retry_delay=0.01)
    # AgentConfig beats the OpenMultiAgent default
    provider = ScriptedProvider([*errors, "never"])
    await oma.run_agent(AgentConfig(name="a", provider=provider, max_retries=1), "x")
    assert len(provider.requests) == 2
    # the run_agent call beats both
    provider = ScriptedProvider([*errors, "never"])
    await oma.run_agent(AgentConfig(name="a", provider=provider, max_retries=1), "x", max_retries=0)
    assert len(provider.requests) == 1
    # the OpenMultiAgent default applies when the config says nothing
    provider = ScriptedProvider([*errors, "ok"])
    result = await oma.run_agent(AgentConfig(name="a", provider=provider), "x")
    assert len(provider.requests) == 5 and not result.success


async def test_retry_backoff_multiplies_the_delay() -> None:
    agent, provider = _agent(
        [_unavailable(), _unavailable(), "ok"], retry_delay=0.1, retry_backoff=3.0
    )
    start = time.monotonic()
    assert (await agent.run("x")).success
    elapsed = time.monotonic() - start
    # 0.05..0.1 then 0.15..0.3
    assert 0.2 <= elapsed <= 0.8
    assert len(provider.requests) == 3


async def test_a_server_retry_after_is_honoured() -> None:
    slow = ProviderError("slow down", status_code=429, retry_after=0.4)
    agent, _ = _agent([slow, "ok"], retry_delay=0.01)
    start = time.monotonic()
    assert (await agent.run("x")).success
    assert time.monotonic() - start >= 0.39


def test_retry_after_ms_wins_over_retry_after() -> None:
    from oma_core import parse_retry_after

    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"Retry-After": "3"}) == 3.0


# -------------------------------------------------------------------------------------------
# tools
# -------------------------------------------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.define
class Point:
    x: int
    y: int


received: dict[str, Any] = {}


@tool
def describe(
    s: str,
    i: int,
    f: float,
    b: bool,
    mode: Literal["fast", "slow"],
    color: Color,
    xs: list[int],
    d: dict[str, float],
    p: Point,
    o: int | None = None,
) -> str:
    """Describe the arguments."""
    received.update(s=s, i=i, f=f, b=b, mode=mode, color=color, xs=xs, d=d, p=p, o=o)
    return "described"


def _schema(provider: ScriptedProvider, name: str) -> dict[str, Any]:
    for definition in provider.requests[0].tools:
        if definition.name == name:
            return dict(definition.input_schema)
    raise AssertionError(f"no tool {name}")


async def test_tool_schema_follows_the_typed_signature() -> None:
    agent, provider = _agent(["ok"], tools=[describe])
    await agent.run("x")
    schema = _schema(provider, "describe")
    assert schema["type"] == "object"
    props = schema["properties"]
    assert props["s"]["type"] == "string"
    assert props["i"]["type"] == "integer"
    assert props["f"]["type"] == "number"
    assert props["b"]["type"] == "boolean"
    assert set(props["mode"]["enum"]) == {"fast", "slow"}
    assert set(props["color"]["enum"]) == {"red", "blue"}
    assert props["xs"]["type"] == "array" and props["xs"]["items"]["type"] == "integer"
    assert props["d"]["type"] == "object"
    assert props["p"]["type"] == "object" and set(props["p"]["properties"]) == {"x", "y"}
    assert "o" in props
    assert set(schema["required"]) == {"s", "i", "f", "b", "mode", "color", "xs", "d", "p"}
    assert provider.requests[0].tools[0].description.startswith("Describe the arguments")


async def test_tool_arguments_are_converted_to_the_annotated_types() -> None:
    args = {
        "s": "x",
        "i": 1,
        "f": 2.5,
        "b": True,
        "mode": "fast",
        "color": "blue",
        "xs": [1, 2],
        "d": {"k": 1.0},
        "p": {"x": 1, "y": 2},
    }
    agent, _ = _agent([_tool_call("describe", args), "done"], tools=[describe])
    result = await agent.run("x")
    assert result.success
    assert received["color"] is Color.BLUE
    assert received["p"] == Point(1, 2)
    assert received["o"] is None and received["xs"] == [1, 2]


async def test_an_async_tool_is_awaited() -> None:
    @tool
    async def shout(text: str) -> str:
        """Shout."""
        await asyncio.sleep(0)
        return text.upper()

    agent, _ = _agent([_tool_call("shout", {"text": "hey"}), "done"], tools=[shout])
    result = await agent.run("x")
    assert "HEY" in json.dumps(dump_messages(result.messages)[1]["content"][0]["content"])


async def test_bad_tool_arguments_become_an_error_tool_result() -> None:
    agent, provider = _agent([_tool_call("add", {"a": "one"}), "recovered"], tools=[add])
    result = await agent.run("x")
    assert result.success and result.output == "recovered"
    tool_result = dump_messages(result.messages)[1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["is_error"] is True
    assert isinstance(tool_result["content"], str)
    assert len(provider.requests) == 2


async def test_a_raising_tool_becomes_an_error_tool_result() -> None:
    @tool
    def fail(x: int) -> int:
        """Always fails."""
        raise RuntimeError("tool exploded")

    agent, _ = _agent([_tool_call("fail", {"x": 1}), "after"], tools=[fail])
    result = await agent.run("x")
    assert result.success
    tool_result = dump_messages(result.messages)[1]["content"][0]
    assert tool_result["is_error"] is True
    assert "tool exploded" in tool_result["content"]


async def test_max_turns_ends_an_endless_tool_loop() -> None:
    calls = [_tool_call("add", {"a": 1, "b": 1}, call_id=f"c{i}") for i in range(5)]
    agent, provider = _agent([*calls, "never"], tools=[add], max_turns=2)
    result = await agent.run("x")
    assert not result.success and result.status.code == "error"
    assert len(provider.requests) == 2


# -------------------------------------------------------------------------------------------
# OpenMultiAgent, progress
# -------------------------------------------------------------------------------------------


def test_open_multi_agent_signature_has_the_contract_parameters() -> None:
    params = inspect.signature(OpenMultiAgent).parameters
    expected = [
        "on_progress",
        "evaluation",
        "max_retries",
        "retry_delay",
        "retry_backoff",
        "max_token_budget",
        "max_cost_budget",
        "estimate_cost",
    ]
    assert list(params)[: len(expected)] == expected
    assert all(params[name].default is None for name in expected)


def test_run_agent_signature_has_the_contract_parameters() -> None:
    params = inspect.signature(OpenMultiAgent.run_agent).parameters
    assert list(params)[:3] == ["self", "config", "input"]
    for name in (
        "run_id",
        "metadata",
        "max_retries",
        "max_token_budget",
        "max_cost_budget",
        "budget",
        "timeout",
        "call_timeout",
    ):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params[name].default is None, name


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


async def test_agent_start_carries_message_tuple_for_structured_input() -> None:
    events: list[ProgressEvent] = []
    conv = [_user("a", _img("x.png"))]
    oma = OpenMultiAgent(on_progress=events.append)
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), conv)
    start = next(e for e in events if e.type == "agent_start")
    assert set(start.data) == {"messages"}
    assert isinstance(start.data["messages"], tuple)
    assert all(isinstance(m, LLMMessage) for m in start.data["messages"])
    assert dump_messages(start.data["messages"]) == conv


async def test_an_observer_mutating_the_event_changes_nothing() -> None:
    def meddle(event: ProgressEvent) -> None:
        if event.type == "agent_start" and isinstance(event.data, dict):
            event.data["prompt"] = "meddled"

    provider = ScriptedProvider(["r"])
    await OpenMultiAgent(on_progress=meddle).run_agent(
        AgentConfig(name="v", provider=provider), "hi"
    )
    assert dump_messages(provider.requests[0].messages) == [_user("hi")]


async def test_async_observers_are_awaited_before_run_agent_returns() -> None:
    seen: list[str] = []

    async def observer(event: ProgressEvent) -> None:
        await asyncio.sleep(0.01)
        seen.append(event.type)

    oma = OpenMultiAgent(on_progress=observer)
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    assert "agent_start" in seen and "agent_complete" in seen


async def test_a_raising_observer_never_fails_the_run() -> None:
    calls: list[str] = []

    def observer(event: ProgressEvent) -> None:
        calls.append(event.type)
        raise RuntimeError("observer broke")

    oma = OpenMultiAgent(on_progress=observer)
    result = await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    assert result.success and result.output == "r"
    assert "agent_start" in calls and "agent_complete" in calls


async def test_package_progress_hooks_observe_run_agent() -> None:
    recorder = _Recorder()
    oma = OpenMultiAgent(plugins=_host(recorder))
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    types = [e.type for e in recorder.progress]
    assert "agent_start" in types and "agent_complete" in types
    assert len(recorder.before_run) == 1


async def test_sync_observers_see_events_in_order_as_they_happen() -> None:
    events: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=events.append)
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    types = [e.type for e in events]
    assert types[0] == "agent_start" and types[-1] == "agent_complete"


# -------------------------------------------------------------------------------------------
# online evaluation
# -------------------------------------------------------------------------------------------


def test_online_evaluation_config_defaults() -> None:
    config = OnlineEvaluationConfig(scorers=[lambda case: 1.0])
    assert config.sample == 1.0
    assert config.store_payloads == "none"


@pytest.mark.parametrize("mode", ["all", "", "FULL", None])
def test_any_other_store_payloads_value_is_refused(mode: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        OnlineEvaluationConfig(scorers=[], store_payloads=mode)


async def _evaluate(
    input: Any, store_payloads: StorePayloads = "none", output: str = "the answer", **kwargs: Any
) -> tuple[EvalCase, OpenMultiAgent]:
    cases: list[EvalCase] = []

    def scorer(case: EvalCase) -> float:
        cases.append(case)
        return 1.0

    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(scorers=[scorer], store_payloads=store_payloads)
    )
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider([output])), input, **kwargs)
    await oma.evaluation.flush()
    assert len(cases) == 1
    return cases[0], oma


async def test_eval_case_under_none_holds_a_string_placeholder() -> None:
    case, oma = await _evaluate("hello world!", run_id="r1", metadata={"k": "v"})
    assert case.input == "[string input omitted; 12 characters]"
    assert case.output == "the answer"
    assert case.run_id == "r1"
    assert case.metadata == {"k": "v"}
    stats = oma.evaluation.stats()
    assert stats.sampled == 1 and stats.scored == 1
    assert stats.dropped == 0 and stats.failed == 0
    oma.evaluation.shutdown()


async def test_eval_case_under_none_holds_an_array_placeholder() -> None:
    case, _ = await _evaluate([_user("a"), _assistant("b"), _user("c")])
    assert case.input == "[array input omitted; 3 items]"
    assert case.output == "the answer"


async def test_eval_case_under_full_holds_the_input_json() -> None:
    conv = [_user("a", _img("x.png?sig=1"))]
    case, _ = await _evaluate(conv, "full")
    assert json.loads(case.input) == conv


async def test_full_payloads_are_cut_at_8192_characters_with_a_marker() -> None:
    conv = [_user("z" * 20_000)]
    case, _ = await _evaluate(conv, "full")
    whole = json.dumps(conv)
    assert len(case.input) > 8192
    assert case.input[:8192] == whole[:8192]
    assert "z" * 8000 in case.input
    assert len(case.input) < 8192 + 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(case.input)


async def test_redacted_payloads_replace_media_and_strip_url_queries() -> None:
    conv = [
        _user(
            "look",
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            _img("x.png?signature=secret"),
        )
    ]
    case, _ = await _evaluate(conv, "redacted")
    assert PNG not in case.input and "secret" not in case.input
    data = json.loads(case.input)
    blocks = data[0]["content"]
    assert blocks[0] == _text("look")
    digest = hashlib.sha256(base64.b64decode(PNG)).hexdigest()
    expected = {"media_type": "image/png", "bytes": PNG_BYTES, "sha256": digest}
    # the payload (the source, or its data) is replaced by the media summary
    source = blocks[1]["source"]
    assert (
        source == expected
        or source.get("data") == expected
        or ({k: source.get(k) for k in expected} == expected)
    )
    assert blocks[2]["source"]["url"] == "https://example.com/x.png"


async def test_evaluation_output_is_the_run_output_in_every_mode() -> None:
    for mode in ("none", "full", "redacted"):
        case, _ = await _evaluate("hi", mode, output="same output")
        assert case.output == "same output"


async def test_sampling_zero_scores_nothing() -> None:
    scored: list[Any] = []
    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[_collect(scored)], sample=0.0))
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    await oma.evaluation.flush()
    assert scored == [] and oma.evaluation.stats().scored == 0


async def test_a_failing_scorer_is_counted_and_never_fails_the_run() -> None:
    def bad(case: EvalCase) -> float:
        raise RuntimeError("scorer broke")

    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[bad]))
    result = await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    await oma.evaluation.flush()
    assert result.success
    assert oma.evaluation.stats().failed >= 1


async def test_async_scorers_and_the_result_hook_receive_the_sample() -> None:
    results: list[Any] = []

    class Sink:
        @hookimpl
        def oma_evaluation_result(self, result: Any) -> None:
            results.append(result)

    async def scorer(case: EvalCase) -> float:
        await asyncio.sleep(0)
        return 0.5

    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[scorer]), plugins=_host(Sink()))
    await oma.run_agent(
        AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hello", run_id="z"
    )
    await oma.evaluation.flush()
    assert len(results) == 1
    assert results[0].run_id == "z"
    assert results[0].input == "[string input omitted; 5 characters]"


# -------------------------------------------------------------------------------------------
# budgets, limits, cancellation
# -------------------------------------------------------------------------------------------


class _CostlyProvider:
    """A provider reporting 100 + 100 tokens per call, always calling the ``add`` tool."""

    name = "costly"
    display_name = "Costly"

    def __init__(self, tool_calls: bool = True) -> None:
        self.calls = 0
        self.tool_calls = tool_calls

    def _response(self) -> ProviderResponse:
        self.calls += 1
        if self.tool_calls:
            message = load_messages([_tool_call("add", {"a": 1, "b": 1}, f"c{self.calls}")])[0]
        else:
            message = load_messages([_assistant("fine")])[0]
        return ProviderResponse(message=message, usage=Usage(100, 100))

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self._response()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        response = self._response()
        for block in response.message.content:
            if block.type == "tool_use":
                yield ToolCall(block)
            elif isinstance(block, TextBlock):
                yield TextDelta(block.text)
        yield ResponseComplete(response)

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        return None


def test_budget_defaults() -> None:
    budget = Budget()
    assert budget.max_tokens is None and budget.max_cost is None
    assert Budget(max_tokens=5).max_tokens == 5


async def test_a_per_run_token_budget_ends_the_run_as_budget_exhausted() -> None:
    provider = _CostlyProvider()
    oma = OpenMultiAgent()
    config = AgentConfig(name="v", provider=provider, tools=[add], max_turns=10)
    result = await oma.run_agent(config, "go", max_token_budget=300)
    assert not result.success
    assert result.status.code == "budget_exhausted"
    # soft cap: at most one call past the limit
    assert provider.calls == 2


async def test_an_orchestrator_token_budget_applies_per_run() -> None:
    oma = OpenMultiAgent(max_token_budget=300)
    for _ in range(2):
        provider = _CostlyProvider(tool_calls=False)
        result = await oma.run_agent(AgentConfig(name="v", provider=provider), "go")
        assert result.success


async def test_a_shared_budget_object_spans_runs() -> None:
    budget = Budget(max_tokens=300)
    oma = OpenMultiAgent()
    provider = _CostlyProvider(tool_calls=False)
    config = AgentConfig(name="v", provider=provider)
    first = await oma.run_agent(config, "one", budget=budget)
    second = await oma.run_agent(config, "two", budget=budget)
    assert first.success
    third = await oma.run_agent(config, "three", budget=budget)
    assert third.status.code == "budget_exhausted"
    calls_before_third = 2
    assert provider.calls == calls_before_third
    assert second.status.code in ("ok", "budget_exhausted")


async def test_a_run_timeout_ends_with_status_timeout() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late")])
    start = time.monotonic()
    result = await OpenMultiAgent().run_agent(
        AgentConfig(name="v", provider=provider), "x", timeout=0.1
    )
    assert time.monotonic() - start < 1.5
    assert not result.success and result.status.code == "timeout"


async def test_a_call_timeout_ends_with_status_timeout() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late"), Delayed(2.0, "late"), Delayed(2.0, "x")])
    start = time.monotonic()
    result = await OpenMultiAgent().run_agent(
        AgentConfig(name="v", provider=provider), "x", call_timeout=0.1, max_retries=0
    )
    assert time.monotonic() - start < 1.5
    assert result.status.code == "timeout"


async def test_cancelling_run_propagates_cancelled_error() -> None:
    agent, _ = _agent([Delayed(5.0, "late")])
    task = asyncio.ensure_future(agent.run("x"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_run_agent_propagates_cancelled_error() -> None:
    provider = ScriptedProvider([Delayed(5.0, "late")])
    task = asyncio.ensure_future(
        OpenMultiAgent().run_agent(AgentConfig(name="v", provider=provider), "x")
    )
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancelling_a_stream_consumer_propagates_cancelled_error() -> None:
    agent, _ = _agent([Delayed(5.0, "late")])

    async def consume() -> None:
        async for _ in agent.stream("x"):
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -------------------------------------------------------------------------------------------
# teams
# -------------------------------------------------------------------------------------------


def test_team_and_task_spec_defaults() -> None:
    team = Team("t", [AgentConfig(name="w")])
    assert team.max_concurrency == 4
    spec = TaskSpec("title", "description")
    assert spec.assignee is None and tuple(spec.depends_on) == () and spec.max_retries == 0


async def test_run_tasks_runs_dependencies_and_reports_statuses() -> None:
    worker = ScriptedProvider(["first done", "second done"])
    team = Team("t", [AgentConfig(name="w", provider=worker)])
    result = await OpenMultiAgent().run_tasks(
        team,
        [
            TaskSpec("one", "do one", assignee="w"),
            TaskSpec("two", "do two", assignee="w", depends_on=("one",)),
        ],
    )
    assert isinstance(result, TeamRunResult)
    assert result.success
    assert result.tasks["one"].status == "completed"
    assert result.tasks["two"].status == "completed"
    assert len(worker.requests) == 2


async def test_a_failed_task_skips_its_dependents() -> None:
    worker = ScriptedProvider([ProviderError("bad", status_code=400)])
    team = Team("t", [AgentConfig(name="w", provider=worker)])
    result = await OpenMultiAgent().run_tasks(
        team,
        [TaskSpec("one", "do one"), TaskSpec("two", "do two", depends_on=["one"])],
    )
    assert not result.success
    assert result.tasks["one"].status == "failed"
    assert result.tasks["two"].status == "skipped"


PLAN = {
    "tasks": [
        {"title": "research", "description": "find facts", "assignee": "w", "depends_on": []},
        {
            "title": "write",
            "description": "write it up",
            "assignee": None,
            "depends_on": ["research"],
        },
    ]
}


@pytest.mark.parametrize("fenced", [False, True], ids=["bare", "fenced"])
async def test_run_team_plans_runs_and_answers(fenced: bool) -> None:
    text = json.dumps(PLAN)
    plan_text = f"Here is the plan:\n```json\n{text}\n```\n" if fenced else text
    coordinator = AgentConfig(name="boss", provider=ScriptedProvider([plan_text, "final answer"]))
    worker = ScriptedProvider(["facts", "essay"])
    team = Team("t", [AgentConfig(name="w", provider=worker)])
    result = await OpenMultiAgent().run_team(team, "explain", coordinator=coordinator)
    assert result.success
    assert result.output == "final answer"
    assert result.plan is not None
    assert [t.title for t in result.plan] == ["research", "write"]
    assert result.tasks["research"].status == "completed"
    assert result.tasks["write"].status == "completed"
    assert len(worker.requests) == 2


async def test_run_team_plan_only_runs_no_task() -> None:
    coordinator = AgentConfig(name="boss", provider=ScriptedProvider([json.dumps(PLAN)]))
    worker = ScriptedProvider(["never"])
    team = Team("t", [AgentConfig(name="w", provider=worker)])
    result = await OpenMultiAgent().run_team(
        team, "explain", coordinator=coordinator, plan_only=True
    )
    assert result.plan is not None and len(result.plan) == 2
    assert worker.requests == []
    assert all(t.status == "pending" for t in result.tasks.values())


# -------------------------------------------------------------------------------------------
# PluginHost environment switches
# -------------------------------------------------------------------------------------------


def test_oma_load_plugins_empty_loads_no_external_plugin_but_the_builtins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "")
    monkeypatch.delenv("OMA_DISABLE_PLUGINS", raising=False)
    specs = PluginHost().provider_specs()
    assert {"echo", "scripted"} <= set(specs)
    assert "anthropic" not in specs and "openai" not in specs


def test_a_registered_in_process_plugin_offers_its_backend() -> None:
    host = _host(_TinyBackendPlugin())
    assert "tiny" in host.backend_specs()


# -------------------------------------------------------------------------------------------
# more of section 6: prompt and hooks, ladder caps, budgets, teams
# -------------------------------------------------------------------------------------------


async def test_prompt_hook_context_holds_history_plus_the_new_turn() -> None:
    seen: list[Any] = []
    agent, _ = _agent(["r"], history=[_user("old"), _assistant("older")], before_run=seen.append)
    await agent.prompt([_text("new"), _img("n.png")])
    assert dump_messages(seen[0].messages) == [
        _user("old"),
        _assistant("older"),
        _user("new", _img("n.png")),
    ]
    assert seen[0].prompt == "new"


async def test_a_prompt_whose_hook_fails_leaves_history_as_it_was() -> None:
    def hook(ctx: Any) -> None:
        raise RuntimeError("no")

    agent, _ = _agent(["r"], history=[_user("old"), _assistant("older")], before_run=hook)
    result = await agent.prompt("q")
    assert not result.success
    assert dump_messages(agent.get_history()) == [_user("old"), _assistant("older")]


async def test_mutating_the_history_list_after_construction_changes_nothing() -> None:
    history = [_user("old"), _assistant("older")]
    agent, provider = _agent(["r"], history=history)
    history[0]["content"][0]["text"] = "changed"
    history.clear()
    await agent.prompt("q")
    assert _sent(provider) == [_user("old"), _assistant("older"), _user("q")]


async def test_run_agent_is_fresh_and_ignores_config_history() -> None:
    provider = ScriptedProvider(["r"])
    config = AgentConfig(name="v", provider=provider, history=[_user("old"), _assistant("o")])
    await OpenMultiAgent().run_agent(config, "now")
    assert dump_messages(provider.requests[0].messages) == [_user("now")]


async def test_an_unsupported_block_in_stream_is_an_error_event() -> None:
    plugin = _TextOnlyPlugin()
    agent = Agent(AgentConfig(name="t", provider="textonly"), plugins=_host(plugin))
    events = [e async for e in agent.stream([_user(_img("a.png"))])]
    assert [e.type for e in events][-2:] == ["error", "done"]
    assert isinstance(events[-2].data, UnsupportedContentBlockError)


async def test_an_unknown_tool_call_becomes_an_error_tool_result() -> None:
    agent, _ = _agent([_tool_call("nope", {}), "after"], tools=[add])
    result = await agent.run("x")
    assert result.success and result.output == "after"
    assert dump_messages(result.messages)[1]["content"][0]["is_error"] is True


async def test_an_optional_tool_argument_allows_null() -> None:
    agent, provider = _agent(["ok"], tools=[describe])
    await agent.run("x")
    assert "null" in json.dumps(_schema(provider, "describe")["properties"]["o"])


async def test_echo_names_tool_blocks() -> None:
    conv = [
        _user("q"),
        _tool_call("zoom", {"f": 2}),
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "zoomed"}],
        },
    ]
    out = (await Agent(AgentConfig(name="e")).run(conv)).output
    assert "tool_use" in out and "tool_result" in out


def _record_sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []

    async def fake_sleep(seconds: float, result: Any = None) -> Any:
        waits.append(seconds)
        return result

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    return waits


async def test_the_ladder_is_capped_at_30_seconds_with_equal_jitter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = _record_sleeps(monkeypatch)
    errors = [_unavailable() for _ in range(4)]
    agent, provider = _agent([*errors, "ok"], max_retries=4, retry_delay=10.0)
    assert (await agent.run("x")).success
    assert len(provider.requests) == 5
    nominal = [10.0, 20.0, 30.0, 30.0]
    assert len(waits) == 4
    for wait, cap in zip(waits, nominal, strict=True):
        assert cap / 2 <= wait <= cap


async def test_a_retry_after_up_to_60_seconds_is_honoured_and_longer_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits = _record_sleeps(monkeypatch)
    responses = [
        ProviderError("slow", status_code=429, retry_after=45.0),
        ProviderError("slower", status_code=429, retry_after=600.0),
        "ok",
    ]
    agent, _ = _agent(responses, retry_delay=0.5)
    assert (await agent.run("x")).success
    assert waits[0] == 45.0
    assert waits[1] <= 60.0


async def test_an_orchestrator_timeout_applies_to_its_runs() -> None:
    provider = ScriptedProvider([Delayed(2.0, "late")])
    result = await OpenMultiAgent(timeout=0.1).run_agent(
        AgentConfig(name="v", provider=provider), "x"
    )
    assert result.status.code == "timeout"


async def test_the_budget_clamps_the_next_calls_max_tokens() -> None:
    seen: list[ProviderRequest] = []

    class Recording(_CostlyProvider):
        async def complete(self, request: ProviderRequest) -> ProviderResponse:
            seen.append(request)
            return await super().complete(request)

        async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
            seen.append(request)
            async for event in super().stream(request):
                yield event

    provider = Recording()
    config = AgentConfig(name="v", provider=provider, tools=[add])
    await OpenMultiAgent().run_agent(config, "go", max_token_budget=300)
    assert len(seen) == 2
    assert seen[1].max_tokens is not None and seen[1].max_tokens <= 100


async def test_a_shared_budget_refuses_a_run_started_past_it() -> None:
    budget = Budget(max_tokens=150)
    oma = OpenMultiAgent()
    provider = _CostlyProvider(tool_calls=False)
    config = AgentConfig(name="v", provider=provider)
    await oma.run_agent(config, "one", budget=budget)
    result = await oma.run_agent(config, "two", budget=budget)
    assert result.status.code == "budget_exhausted"
    assert provider.calls == 1


async def test_tasks_report_progress_with_their_title() -> None:
    events: list[ProgressEvent] = []
    team = Team("t", [AgentConfig(name="w", provider=ScriptedProvider(["done"]))])
    await OpenMultiAgent(on_progress=events.append).run_tasks(team, [TaskSpec("one", "do")])
    types = [e.type for e in events]
    assert "task_start" in types
    start = next(e for e in events if e.type == "task_start")
    assert start.task == "one"


async def test_max_concurrency_bounds_parallel_tasks() -> None:
    def team(limit: int) -> Team:
        worker = ScriptedProvider([Delayed(0.2, "a"), Delayed(0.2, "b")])
        return Team("t", [AgentConfig(name="w", provider=worker)], max_concurrency=limit)

    tasks = [TaskSpec("one", "do"), TaskSpec("two", "do")]
    start = time.monotonic()
    assert (await OpenMultiAgent().run_tasks(team(1), tasks)).success
    serial = time.monotonic() - start
    start = time.monotonic()
    assert (await OpenMultiAgent().run_tasks(team(2), tasks)).success
    parallel = time.monotonic() - start
    assert serial >= 0.39
    assert parallel < 0.35


async def test_a_task_with_max_retries_is_tried_again() -> None:
    worker = ScriptedProvider([ProviderError("busy", status_code=503), "second try"])
    team = Team("t", [AgentConfig(name="w", provider=worker, max_retries=0)])
    result = await OpenMultiAgent().run_tasks(team, [TaskSpec("one", "do", max_retries=1)])
    assert result.success and result.tasks["one"].status == "completed"


def test_task_descriptions_are_text() -> None:
    with pytest.raises((TypeError, ValueError)):
        TaskSpec("one", [_user("x")])  # type: ignore[arg-type]


async def test_run_team_goals_are_text() -> None:
    team = Team("t", [AgentConfig(name="w", provider=ScriptedProvider(["x"]))])
    with pytest.raises((TypeError, ValueError)):
        await OpenMultiAgent().run_team(team, [_user("x")])  # type: ignore[arg-type]


async def test_run_team_default_coordinator_uses_the_first_agents_provider() -> None:
    plan = {"tasks": [{"title": "only", "description": "do it", "assignee": "w", "depends_on": []}]}
    shared = ScriptedProvider([json.dumps(plan), "task output", "the final answer"])
    team = Team("t", [AgentConfig(name="w", provider=shared, model="m1")])
    result = await OpenMultiAgent().run_team(team, "goal")
    assert result.success and result.output == "the final answer"
    assert len(shared.requests) == 3
    assert shared.requests[0].model == "m1"


async def test_an_unreadable_plan_fails_the_team_run() -> None:
    coordinator = AgentConfig(name="boss", provider=ScriptedProvider(["no plan here"]))
    team = Team("t", [AgentConfig(name="w", provider=ScriptedProvider(["x"]))])
    try:
        result = await OpenMultiAgent().run_team(team, "goal", coordinator=coordinator)
    except oma_core.PlanError:
        return
    assert not result.success


async def test_scorer_may_return_a_score_with_a_reason() -> None:
    from oma_core import Score

    results: list[Any] = []

    class Sink:
        @hookimpl
        def oma_evaluation_result(self, result: Any) -> None:
            results.append(result)

    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(scorers=[lambda case: Score(0.25, "meh")]),
        plugins=_host(Sink()),
    )
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    await oma.evaluation.flush()
    (score,) = results[0].scores.values()
    assert score.value == 0.25 and score.reason == "meh"


async def test_evaluation_metadata_is_copied_at_the_call() -> None:
    cases: list[EvalCase] = []
    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[_collect(cases)]))
    metadata = {"k": "v"}
    coro = oma.run_agent(
        AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi", metadata=metadata
    )
    metadata["k"] = "changed"
    await coro
    await oma.evaluation.flush()
    assert cases[0].metadata == {"k": "v"}


async def test_a_slow_async_observer_is_skipped_after_its_time_limit() -> None:
    async def slow(event: ProgressEvent) -> None:
        await asyncio.sleep(10)

    oma = OpenMultiAgent(on_progress=slow, observer_timeout=0.05)
    start = time.monotonic()
    result = await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    assert result.success
    assert time.monotonic() - start < 3


async def test_a_hook_may_return_the_whole_context_as_a_mapping() -> None:
    def hook(ctx: Any) -> Mapping[str, Any]:
        return {"messages": ctx.messages, "prompt": "new", "agent": ctx.agent}

    agent, provider = _agent(["ok"], before_run=hook)
    await agent.run([_user("t1", _img("A.png"), "t2")])
    assert _sent(provider) == [_user("new", _img("A.png"))]


async def test_reasoning_reaches_the_stream_as_reasoning_events() -> None:
    turn = _assistant({"type": "reasoning", "text": "thinking hard"}, "answer")
    agent, _ = _agent([turn])
    events = [e async for e in agent.stream("x")]
    assert "thinking hard" in "".join(e.data for e in events if e.type == "reasoning")
    assert events[-1].data.output == "answer"


async def test_progress_events_of_run_agent_have_no_task() -> None:
    events: list[ProgressEvent] = []
    await OpenMultiAgent(on_progress=events.append).run_agent(
        AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi"
    )
    assert events and all(e.task is None and e.agent == "v" for e in events)


async def test_run_usage_sums_every_model_call() -> None:
    class TwoCalls(_CostlyProvider):
        def _response(self) -> ProviderResponse:
            self.tool_calls = self.calls == 0
            return super()._response()

    provider = TwoCalls()
    result = await Agent(AgentConfig(name="v", provider=provider, tools=[add])).run("go")
    assert result.success and provider.calls == 2
    assert result.usage == Usage(200, 200)


async def test_a_cost_budget_ends_the_run_as_budget_exhausted() -> None:
    provider = _CostlyProvider()
    oma = OpenMultiAgent(estimate_cost=lambda usage, ctx: usage.input_tokens * 0.01)
    config = AgentConfig(name="v", provider=provider, tools=[add])
    result = await oma.run_agent(config, "go", max_cost_budget=1.5)
    assert result.status.code == "budget_exhausted"
    assert provider.calls == 2


async def test_redacted_payloads_drop_credentials() -> None:
    secret = "sk-ant-" + "a1B2c3D4" * 4
    case, _ = await _evaluate([_user(f"my key is {secret}")], "redacted")
    assert secret not in case.input
    assert "my key is" in case.input


async def test_after_shutdown_runs_are_not_scored_but_counted_as_dropped() -> None:
    scored: list[Any] = []
    oma = OpenMultiAgent(evaluation=OnlineEvaluationConfig(scorers=[_collect(scored)]))
    await oma.evaluation.shutdown()
    result = await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    await oma.evaluation.flush()
    assert result.success and scored == []
    assert oma.evaluation.stats().dropped == 1


# -------------------------------------------------------------------------------------------
# entry-point plugins: isolation and the environment switches, with a distribution on sys.path
# -------------------------------------------------------------------------------------------

_GOOD_PLUGIN = """
from oma_core import Capabilities, ProviderSpec, hookimpl
from oma_core.testing import ScriptedProvider


@hookimpl
def oma_register_providers():
    return [ProviderSpec(name="ctgood", display_name="CT Good",
                         factory=lambda settings: ScriptedProvider(["from ctgood"]),
                         capabilities=Capabilities.everything())]
"""

_BROKEN_PLUGINS = {
    "oma_ctimport": "raise ImportError('this plugin cannot import')\n",
    "oma_ctbadhook": (
        "from oma_core import hookimpl\n\n"
        "@hookimpl\ndef oma_progress(evt, extra):\n    return None\n"
    ),
    "oma_ctraise": (
        "from oma_core import hookimpl\n\n"
        "@hookimpl\ndef oma_register_providers():\n    raise RuntimeError('cannot register')\n"
    ),
}


@pytest.fixture
def entry_point_plugins(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four distributions with ``oma`` entry points: one good, three broken in different ways."""
    modules = {"oma_ctgood": _GOOD_PLUGIN, **_BROKEN_PLUGINS}
    for module, source in modules.items():
        (tmp_path / f"{module}.py").write_text(source)
        dist = module.replace("_", "-")
        info = tmp_path / f"{module}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[oma]\n{module[4:]} = {module}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("OMA_LOAD_PLUGINS", raising=False)
    monkeypatch.delenv("OMA_DISABLE_PLUGINS", raising=False)


@pytest.mark.usefixtures("entry_point_plugins")
async def test_broken_entry_point_plugins_are_skipped_and_reported() -> None:
    host = PluginHost()
    assert "ctgood" in host.provider_specs()
    failed = {failure.name for failure in host.failures}
    assert {"ctimport", "ctbadhook", "ctraise"} <= failed
    agent = Agent(AgentConfig(name="g", provider="ctgood"), plugins=host)
    assert (await agent.run("x")).output == "from ctgood"


@pytest.mark.usefixtures("entry_point_plugins")
def test_oma_load_plugins_loads_only_the_named_entry_point_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "ctgood")
    host = PluginHost()
    specs = host.provider_specs()
    assert "ctgood" in specs and "anthropic" not in specs
    assert {"echo", "scripted"} <= set(specs)
    assert host.failures == []


@pytest.mark.usefixtures("entry_point_plugins")
def test_oma_disable_plugins_blocks_named_entry_point_plugins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_DISABLE_PLUGINS", "ctgood,ctimport,ctbadhook,ctraise,echo,scripted")
    host = PluginHost()
    specs = host.provider_specs()
    assert "ctgood" not in specs
    assert {"echo", "scripted"} <= set(specs), "built-in providers always load"
    assert not {"ctimport", "ctbadhook", "ctraise"} & {f.name for f in host.failures}


# -------------------------------------------------------------------------------------------
# cleanup on cancellation, retries never re-run tools, observer order, teams of agents
# -------------------------------------------------------------------------------------------


class _HangingProvider:
    """Streams one delta, then hangs; records whether its stream was closed."""

    name = "hanging"
    display_name = "Hanging"

    def __init__(self) -> None:
        self.closed = False
        self.started = asyncio.Event()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        try:
            self.started.set()
            await asyncio.sleep(30)
            raise AssertionError("not cancelled")
        finally:
            self.closed = True

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        try:
            yield TextDelta("partial")
            self.started.set()
            await asyncio.sleep(30)
            raise AssertionError("not cancelled")
        finally:
            self.closed = True

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        return None


@pytest.mark.parametrize("how", ["run", "stream", "run_agent"])
async def test_cancellation_closes_the_provider_call_then_propagates(how: str) -> None:
    provider = _HangingProvider()
    config = AgentConfig(name="h", provider=provider)

    async def consume() -> Any:
        if how == "run":
            return await Agent(config).run("x")
        if how == "run_agent":
            return await OpenMultiAgent().run_agent(config, "x")
        async with Agent(config).stream("x") as events:
            async for _ in events:
                pass
        return None

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(provider.started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed


async def test_a_retried_model_call_never_runs_a_tool_twice() -> None:
    runs: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        runs.append(n)
        return n

    agent, provider = _agent(
        [_tool_call("count", {"n": 1}), _unavailable(), _unavailable(), "final"],
        tools=[count],
        retry_delay=0.01,
    )
    result = await agent.run("x")
    assert result.success and result.output == "final"
    assert runs == [1]
    assert len(provider.requests) == 4


async def test_on_progress_runs_before_the_package_observers_for_each_event() -> None:
    order: list[str] = []

    class Hook:
        @hookimpl
        def oma_progress(self, event: Any) -> None:
            order.append(f"hook:{event.type}")

    oma = OpenMultiAgent(
        on_progress=lambda event: order.append(f"on:{event.type}"), plugins=_host(Hook())
    )
    await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["r"])), "hi")
    assert order[:2] == ["on:agent_start", "hook:agent_start"]
    assert order[-2:] == ["on:agent_complete", "hook:agent_complete"]


async def test_a_team_may_be_given_agents() -> None:
    worker = ScriptedProvider(["done"])
    team = Team("t", [Agent(AgentConfig(name="w", provider=worker))])
    result = await OpenMultiAgent().run_tasks(team, [TaskSpec("one", "do", assignee="w")])
    assert result.success and result.tasks["one"].status == "completed"


async def test_what_is_stored_follows_the_payload_policy() -> None:
    stored: list[Any] = []

    class Sink:
        @hookimpl
        def oma_evaluation_result(self, result: Any) -> None:
            stored.append(result)

    for mode in ("none", "redacted"):
        oma = OpenMultiAgent(
            evaluation=OnlineEvaluationConfig(scorers=[lambda c: 1.0], store_payloads=mode),
            plugins=_host(Sink()),
        )
        text = "see https://example.com/doc?token=abc123secret now"
        await oma.run_agent(AgentConfig(name="v", provider=ScriptedProvider(["answer"])), text)
        await oma.evaluation.flush()
    none, redacted = stored
    assert "answer" not in none.output and "omitted" in none.output
    assert "abc123secret" not in redacted.input
    assert "https://example.com/doc" in redacted.input


async def test_an_external_backend_streams_text_then_done() -> None:
    agent, _, _ = _backend_agent()
    events = [e async for e in agent.stream("hi")]
    assert [e.type for e in events] == ["text", "done"]
    assert events[0].data == "re:hi" and events[-1].data.output == "re:hi"


async def test_run_agent_stops_the_external_backend_it_started() -> None:
    plugin = _TinyBackendPlugin()
    oma = OpenMultiAgent(plugins=_host(plugin))
    result = await oma.run_agent(AgentConfig(name="ext", backend={"kind": "tiny"}), "hi")
    assert result.success and result.output == "re:hi"
    assert plugin.backend is not None and plugin.backend.closed == 1


async def test_cancelling_an_external_run_closes_its_turn() -> None:
    plugin = _TinyBackendPlugin()
    oma = OpenMultiAgent(plugins=_host(plugin))
    task = asyncio.ensure_future(
        oma.run_agent(AgentConfig(name="ext", backend={"kind": "tiny"}), "hang")
    )
    await asyncio.wait_for(plugin.made.wait(), 5)
    backend = plugin.backend
    assert backend is not None
    await asyncio.wait_for(backend.started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert backend.turn_closed == 1
    assert backend.closed == 1


async def test_an_async_package_hook_is_awaited_and_tryfirst_is_respected() -> None:
    log: list[str] = []

    class Late:
        @hookimpl(trylast=True)
        async def oma_before_run(self, ctx: Any) -> Mapping[str, Any]:
            await asyncio.sleep(0)
            log.append("late")
            return {"prompt": ctx.prompt + "-late"}

    class Early:
        @hookimpl(tryfirst=True)
        def oma_before_run(self, ctx: Any) -> None:
            log.append("early")

    # registered in the order that pluggy would otherwise call last-first
    agent, provider = _agent(["ok"], host=_host(Early(), Late()))
    await agent.run("p")
    assert log == ["early", "late"]
    assert _sent(provider) == [_user("p-late")]


@pytest.mark.parametrize("fence", ["```JSON", "```", "~~~json"], ids=["upper", "bare", "tilde"])
async def test_run_team_reads_a_plan_in_common_fences(fence: str) -> None:
    close = "~~~" if fence.startswith("~") else "```"
    plan = {"tasks": [{"title": "only", "description": "do it", "assignee": None}]}
    answer = f"Plan follows.\n{fence}\n{json.dumps(plan)}\n{close}\nThat is all."
    coordinator = AgentConfig(name="boss", provider=ScriptedProvider([answer, "final"]))
    team = Team("t", [AgentConfig(name="w", provider=ScriptedProvider(["done"]))])
    result = await OpenMultiAgent().run_team(team, "goal", coordinator=coordinator)
    assert result.success and result.output == "final"
    assert [t.title for t in result.plan or ()] == ["only"]
