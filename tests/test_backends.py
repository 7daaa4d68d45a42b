"""External backends: string prompts only, sessions, events, limits and closing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs
import pytest
from _builders import (
    TinyBackendPlugin,
    assistant_text,
    assistant_turn,
    make_orchestrator,
    stream_events,
    text_block,
    three_turn_conversation,
    user_turn,
)

from oma_core import (
    Agent,
    AgentConfig,
    BackendSpec,
    InvalidMessageError,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    TextBlock,
    dump_messages,
    hookimpl,
    image_url,
    load_messages,
)
from oma_core.agent import BeforeRunContext
from oma_core.backends import BackendRequest, BackendResult, BackendToolCall, BackendToolResult
from oma_core.errors import BackendError, HookError, RunTimeoutError
from oma_core.messages import ToolResultBlock, ToolUseBlock
from oma_core.providers import (
    ReasoningDelta,
    TextDelta,
    Usage,
)


def _host(*plugins: object) -> PluginHost:
    host = PluginHost(load_entrypoints=False)
    for plugin in plugins:
        host.register(plugin)
    return host


def _backend_agent(**config: Any) -> tuple[Agent, TinyBackendPlugin, PluginHost]:
    plugin = TinyBackendPlugin()
    host = _host(plugin)
    agent = Agent(AgentConfig(name="ext", backend={"kind": "tiny"}, **config), plugins=host)
    return agent, plugin, host


class _TextBackend:
    def __init__(self, kind: str, requests: list[BackendRequest]) -> None:
        self.kind = kind
        self.display_name = kind
        self._requests = requests

    async def run(self, request: BackendRequest) -> AsyncIterator[Any]:
        self._requests.append(request)
        yield TextDelta("echo:" + request.prompt)
        yield BackendResult(output="echo:" + request.prompt)

    async def aclose(self) -> None:
        return None


class _BackendPlugin:
    """Registers fake "process" and "acp" backends that record whether they were started."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.requests: list[BackendRequest] = []

    def _factory(self, kind: str) -> Any:
        def make(options: Mapping[str, Any]) -> _TextBackend:
            self.started.append(kind)
            return _TextBackend(kind, self.requests)

        return make

    @hookimpl
    def oma_register_backends(self) -> list[BackendSpec]:
        return [
            BackendSpec(kind=k, display_name=k, factory=self._factory(k))
            for k in ("process", "acp")
        ]


class CountingBackend:
    """An in-process stand-in for a CLI agent: counts what it was asked to start."""

    kind = "counting"
    display_name = "Counting CLI"

    def __init__(self, options: Mapping[str, Any], registry: Registry) -> None:
        self.options = dict(options)
        self.registry = registry
        self.closed = False

    async def run(self, request: BackendRequest) -> AsyncIterator[Any]:
        self.registry.spawns += 1
        self.registry.requests.append(request)
        try:
            if self.registry.fail:
                raise BackendError("the CLI exited with 2", backend="counting", exit_code=2)
            yield ReasoningDelta("thinking")
            yield BackendToolCall("c1", "grep", {"pattern": "x"})
            yield BackendToolResult("c1", "3 matches")
            yield TextDelta("answer: ")
            yield TextDelta(request.prompt)
            if self.registry.stall:
                await asyncio.sleep(30)
            yield BackendResult(f"answer: {request.prompt}", Usage(3, 4))
        finally:
            self.registry.stopped += 1

    async def aclose(self) -> None:
        self.closed = True


@attrs.define
class Registry:
    spawns: int = 0
    stopped: int = 0
    backends: list[CountingBackend] = attrs.Factory(list)
    requests: list[BackendRequest] = attrs.Factory(list)
    fail: bool = False
    stall: bool = False


@pytest.fixture
def registry() -> Registry:
    return Registry()


@pytest.fixture
def host(registry: Registry) -> PluginHost:
    host = PluginHost(load_entrypoints=False)

    def factory(options: Mapping[str, Any]) -> CountingBackend:
        backend = CountingBackend(options, registry)
        registry.backends.append(backend)
        return backend

    class Plugin:
        @hookimpl
        def oma_register_backends(self) -> list[BackendSpec]:
            return [BackendSpec("counting", "Counting CLI", factory)]

    host.register(Plugin(), name="counting-backend")
    return host


def make(host: PluginHost, **config: Any) -> Agent:
    return Agent(
        AgentConfig(
            name="cli", backend={"kind": "counting", "flag": 1}, system_prompt="sys", **config
        ),
        plugins=host,
    )


STRUCTURED = [{"role": "user", "content": [{"type": "text", "text": "x"}]}]


def _config() -> AgentConfig:
    return AgentConfig(name="cli", backend={"kind": "counting"}, system_prompt="sys")


async def test_external_backend_runs_string_prompts() -> None:
    agent, plugin, _ = _backend_agent()
    result = await agent.run("hello")
    assert result.success and result.output == "re:hello"
    assert result.model == "tiny"  # what answered: the backend's kind
    assert plugin.requests[0].prompt == "hello"
    assert plugin.requests[0].continue_session is False


async def test_external_backend_refuses_structured_input_before_anything_starts() -> None:
    agent, plugin, host = _backend_agent()
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.run([user_turn("x")])
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.stream([user_turn("x")])
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.prompt([text_block("x")])
    progress: list[Any] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=host)
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        _ = oma.run_agent(AgentConfig(name="ext", backend={"kind": "tiny"}), [user_turn("x")])
    assert plugin.built == 0 and plugin.requests == [] and progress == []
    assert agent.get_history() == []

    events: list[ProgressEvent] = []
    oma = make_orchestrator(
        on_progress=events.append, evaluation=OnlineEvaluationConfig([lambda c: 1.0]), plugins=host
    )
    config = AgentConfig("cli", backend={"kind": "tiny"})
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        oma.run_agent(config, three_turn_conversation())
    await oma.evaluation.flush()
    assert events == []
    assert oma.evaluation.stats().sampled == 0


async def test_a_hook_changing_messages_fails_an_external_run(
    host: PluginHost, registry: Registry
) -> None:
    agent, plugin, _ = _backend_agent(before_run=lambda ctx: {"messages": [user_turn("other")]})
    result = await agent.run("hello")
    assert not result.success
    assert "cannot be forwarded without loss" in str(result.status.error)
    assert plugin.requests == []

    def hook(ctx: BeforeRunContext) -> dict[str, Any]:
        return {
            "messages": [
                *ctx.messages,
                {"role": "assistant", "content": [{"type": "text", "text": "extra"}]},
                {"role": "user", "content": [{"type": "text", "text": "x"}]},
            ]
        }

    agent = make(host, before_run=hook)
    result = await agent.run("x")
    assert result.status.code == "error"
    assert isinstance(result.status.error, HookError)
    assert "cannot be forwarded without loss" in str(result.status.error)
    assert registry.spawns == 0


async def test_a_hook_rewriting_the_prompt_reaches_an_external_backend() -> None:
    agent, plugin, _ = _backend_agent(before_run=lambda ctx: {"prompt": ctx.prompt + "!"})
    result = await agent.run("hello")
    assert result.success
    assert plugin.requests[0].prompt == "hello!"


async def test_history_does_not_seed_an_external_backend(
    host: PluginHost, registry: Registry
) -> None:
    agent, plugin, _ = _backend_agent(history=[user_turn("secret old turn"), assistant_turn("r")])
    result = await agent.prompt("now")
    assert result.success
    assert plugin.requests[0].prompt == "now"
    assert plugin.requests[0].continue_session is True

    agent = make(host, history=[{"role": "user", "content": [{"type": "text", "text": "old"}]}])
    await agent.prompt("new")
    assert registry.requests[0].prompt == "new"


async def test_an_external_backend_streams_text_then_done() -> None:
    agent, _, _ = _backend_agent()
    events = [e async for e in agent.stream("hi")]
    assert [e.type for e in events] == ["text", "done"]
    assert events[0].data == "re:hi" and events[-1].data.output == "re:hi"


async def test_run_agent_stops_the_external_backend_it_started() -> None:
    plugin = TinyBackendPlugin()
    oma = OpenMultiAgent(plugins=_host(plugin))
    result = await oma.run_agent(AgentConfig(name="ext", backend={"kind": "tiny"}), "hi")
    assert result.success and result.output == "re:hi"
    assert plugin.backend is not None and plugin.backend.closed == 1


async def test_cancelling_an_external_run_closes_its_turn() -> None:
    plugin = TinyBackendPlugin()
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


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_external_backends_refuse_structured_input_before_starting(kind: str) -> None:
    plugin = _BackendPlugin()
    host = _host(plugin)
    config = AgentConfig(name="ext", backend={"kind": kind})
    agent = Agent(config, plugins=host)
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=host)
    for call in (
        lambda: agent.run([user_turn("x")]),
        lambda: agent.stream([user_turn("x")]),
        lambda: agent.prompt([text_block("x")]),
        lambda: agent.prompt([image_url("https://example.com/a.png")]),
        lambda: oma.run_agent(config, [user_turn("x")]),
    ):
        with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
            call()
    assert plugin.started == [] and plugin.requests == [] and progress == []
    assert agent.get_history() == []


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_external_backends_run_string_prompts(kind: str) -> None:
    plugin = _BackendPlugin()
    agent = Agent(AgentConfig(name="ext", backend={"kind": kind}), plugins=_host(plugin))
    result = await agent.run("hello")
    assert result.success and result.output == "echo:hello"
    assert plugin.requests[0].prompt == "hello"
    await agent.prompt("again")
    assert [r.continue_session for r in plugin.requests] == [False, True]
    events = await stream_events(agent, "streamed")
    assert events[-1].data.output == "echo:streamed"


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_external_backends_refuse_message_and_block_objects_too(kind: str) -> None:
    plugin = _BackendPlugin()
    agent = Agent(AgentConfig(name="ext", backend={"kind": kind}), plugins=_host(plugin))
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.run(load_messages([user_turn("x")]))
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.prompt([TextBlock("x")])
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.run([])  # not even an empty list is mistaken for a prompt
    assert plugin.started == []


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_an_external_agents_hook_may_rewrite_the_prompt_but_not_messages(kind: str) -> None:
    plugin = _BackendPlugin()
    host = _host(plugin)
    rewrite = Agent(
        AgentConfig(name="e", backend={"kind": kind}, before_run=lambda c: {"prompt": "new"}),
        plugins=host,
    )
    assert (await rewrite.run("old")).output == "echo:new"
    replace = Agent(
        AgentConfig(
            name="e",
            backend={"kind": kind},
            before_run=lambda c: {
                "messages": [user_turn("other"), assistant_text("a"), user_turn("q")]
            },
        ),
        plugins=host,
    )
    result = await replace.run("old")
    assert not result.success
    assert "cannot be forwarded without loss" in str(result.status.error)
    assert [r.prompt for r in plugin.requests] == ["new"]


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_an_external_agents_hook_may_hand_back_the_same_messages(kind: str) -> None:
    plugin = _BackendPlugin()

    def hook(ctx: Any) -> dict[str, Any]:
        return {"messages": dump_messages(ctx.messages), "prompt": ctx.prompt + "!"}

    agent = Agent(
        AgentConfig(name="e", backend={"kind": kind}, before_run=hook), plugins=_host(plugin)
    )
    result = await agent.run("hello")
    assert result.success, result.status.error
    assert plugin.requests[0].prompt == "hello!"


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_history_does_not_seed_an_external_transport(kind: str) -> None:
    plugin = _BackendPlugin()
    agent = Agent(
        AgentConfig(
            name="e", backend={"kind": kind}, history=[user_turn("secret"), assistant_text("a")]
        ),
        plugins=_host(plugin),
    )
    result = await agent.prompt("now")
    assert result.success
    assert plugin.requests[0].prompt == "now"
    assert "secret" not in plugin.requests[0].prompt


@pytest.mark.parametrize("method", ["run", "stream", "prompt"])
async def test_structured_input_fails_fast_before_anything_starts(
    host: PluginHost, registry: Registry, method: str
) -> None:
    calls: list[object] = []
    agent = make(host, before_run=calls.append)
    data = STRUCTURED if method != "prompt" else STRUCTURED[0]["content"]
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        getattr(agent, method)(data)
    assert registry.spawns == 0 and registry.backends == [] and calls == []
    assert agent.get_history() == []


async def test_run_sends_a_fresh_string_turn(host: PluginHost, registry: Registry) -> None:
    agent = make(host)
    result = await agent.run("hello")
    assert result.success and result.output == "answer: hello"
    assert result.usage == Usage(3, 4)
    assert registry.requests == [BackendRequest("hello", "sys", False, None)]
    assert registry.backends[0].options == {"flag": 1}


async def test_prompt_continues_the_session(host: PluginHost, registry: Registry) -> None:
    agent = make(host)
    await agent.prompt("one")
    await agent.prompt("two")
    assert [r.continue_session for r in registry.requests] == [True, True]
    assert len(registry.backends) == 1  # one backend object per agent


async def test_a_hook_may_rewrite_the_prompt(host: PluginHost, registry: Registry) -> None:
    agent = make(host, before_run=lambda ctx: attrs.evolve(ctx, prompt="rewritten"))
    result = await agent.run("x")
    assert result.success and registry.requests[0].prompt == "rewritten"


async def test_backend_events_map_onto_stream_events(host: PluginHost) -> None:
    agent = make(host)
    events = [event async for event in agent.stream("q")]
    assert [e.type for e in events] == [
        "reasoning",
        "tool_use",
        "tool_result",
        "text",
        "text",
        "done",
    ]
    assert isinstance(events[1].data, ToolUseBlock) and events[1].data.name == "grep"
    assert isinstance(events[2].data, ToolResultBlock) and events[2].data.content == "3 matches"
    assert events[-1].data.output == "answer: q"


async def test_a_backend_failure_is_a_failed_result(host: PluginHost, registry: Registry) -> None:
    registry.fail = True
    result = await make(host).run("x")
    assert result.status.code == "error" and isinstance(result.status.error, BackendError)


async def test_closing_a_backend_stream_early_stops_the_turn(
    host: PluginHost, registry: Registry
) -> None:
    registry.stall = True
    async with make(host).stream("x") as events:
        async for event in events:
            if event.type == "text":
                break
    assert registry.spawns == 1 and registry.stopped == 1


async def test_a_run_timeout_reaches_the_backend_request(
    host: PluginHost, registry: Registry
) -> None:
    from oma_core import RunSettings

    registry.stall = True
    agent = make(host)
    result = await agent.run("x", settings=RunSettings(timeout=0.05))
    assert result.status.code == "timeout"
    timeout = registry.requests[0].timeout
    assert timeout is not None and 0 < timeout <= 0.05
    assert registry.stopped == 1


async def test_aclose_stops_the_backend(host: PluginHost, registry: Registry) -> None:
    async with make(host) as agent:
        await agent.run("x")
    assert registry.backends[0].closed


async def test_a_spent_shared_budget_stops_a_backend_run_before_it_starts(
    host: PluginHost, registry: Registry
) -> None:
    from oma_core import Budget, OpenMultiAgent

    oma = OpenMultiAgent(plugins=host)
    budget = Budget(max_tokens=5)
    first = await oma.run_agent(_config(), "one", budget=budget)
    assert first.status.code == "budget_exhausted"  # 3 + 4 tokens reported: over 5
    assert first.output == "answer: one"
    second = await oma.run_agent(_config(), "two", budget=budget)
    assert second.status.code == "budget_exhausted"
    assert registry.spawns == 1, "a spent budget must not start the backend"


async def test_backend_usage_counts_against_a_per_run_token_budget(
    host: PluginHost, registry: Registry
) -> None:
    from oma_core import OpenMultiAgent

    events: list[str] = []
    oma = OpenMultiAgent(plugins=host, on_progress=lambda e: events.append(e.type))
    result = await oma.run_agent(_config(), "hi", max_token_budget=5)
    assert result.status.code == "budget_exhausted"
    assert result.usage == Usage(3, 4)
    assert "budget_exceeded" in events
    roomy = await oma.run_agent(_config(), "hi", max_token_budget=100)
    assert roomy.success


async def test_call_timeout_bounds_a_backend_turn(host: PluginHost, registry: Registry) -> None:
    from oma_core import OpenMultiAgent

    registry.stall = True  # 30 s: only the call timeout ends the turn as a timeout
    result = await OpenMultiAgent(plugins=host).run_agent(_config(), "hi", call_timeout=0.2)
    assert result.status.code == "timeout"
    assert isinstance(result.status.error, RunTimeoutError)
    assert (result.status.error.scope, result.status.error.timeout) == ("call", 0.2)
    assert registry.requests[-1].timeout is not None and registry.requests[-1].timeout <= 0.2
    assert registry.stopped == 1
