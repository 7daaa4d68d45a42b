"""External backends: string prompts only, sessions, events, limits and closing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from oma_core import (
    Agent,
    AgentConfig,
    BackendSpec,
    InvalidMessageError,
    OpenMultiAgent,
    PluginHost,
    ProgressEvent,
    StreamEvent,
    TextBlock,
    dump_messages,
    hookimpl,
    image_url,
    load_messages,
)
from oma_core.backends import BackendRequest, BackendResult
from oma_core.providers import (
    TextDelta,
)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _host(*plugins: object) -> PluginHost:
    host = PluginHost(load_entrypoints=False)
    for plugin in plugins:
        host.register(plugin)
    return host


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


def _assistant_says(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [_text(text)]}


async def _events(agent: Agent, input: Any) -> list[StreamEvent]:
    return [event async for event in agent.stream(input)]


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


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_external_backends_refuse_structured_input_before_starting(kind: str) -> None:
    plugin = _BackendPlugin()
    host = _host(plugin)
    config = AgentConfig(name="ext", backend={"kind": kind})
    agent = Agent(config, plugins=host)
    progress: list[ProgressEvent] = []
    oma = OpenMultiAgent(on_progress=progress.append, plugins=host)
    for call in (
        lambda: agent.run([_user("x")]),
        lambda: agent.stream([_user("x")]),
        lambda: agent.prompt([_text("x")]),
        lambda: agent.prompt([image_url("https://example.com/a.png")]),
        lambda: oma.run_agent(config, [_user("x")]),
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
    events = await _events(agent, "streamed")
    assert events[-1].data.output == "echo:streamed"


@pytest.mark.parametrize("kind", ["process", "acp"])
async def test_external_backends_refuse_message_and_block_objects_too(kind: str) -> None:
    plugin = _BackendPlugin()
    agent = Agent(AgentConfig(name="ext", backend={"kind": kind}), plugins=_host(plugin))
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        agent.run(load_messages([_user("x")]))
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
            before_run=lambda c: {"messages": [_user("other"), _assistant_says("a"), _user("q")]},
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
            name="e", backend={"kind": kind}, history=[_user("secret"), _assistant_says("a")]
        ),
        plugins=_host(plugin),
    )
    result = await agent.prompt("now")
    assert result.success
    assert plugin.requests[0].prompt == "now"
    assert "secret" not in plugin.requests[0].prompt
