"""Fallback models (``AgentConfig.fallback_models``, ``oma run --fallback``): tried in order
only after a retryable failure spent its retries, each checked against the input before
anything is sent to it; the ``fallback`` progress event says which model answers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from oma_core import Agent, AgentConfig, PluginHost, RunLog, RunSettings, hookimpl, tool
from oma_core.capabilities import BlockSupport, Capabilities, ProviderSpec
from oma_core.cli import cli
from oma_core.errors import NotRegisteredError, ProviderError, UnsupportedContentBlockError
from oma_core.media import image_base64
from oma_core.messages import LLMMessage, TextBlock, ToolResultBlock, ToolUseBlock
from oma_core.providers import ProviderRequest, ProviderResponse, ProviderSettings, Usage
from oma_core.retry import DEFAULT_POLICY


def _unavailable() -> ProviderError:
    return ProviderError("HTTP 503: overloaded", status_code=503, provider="Down", retry_after=0)


class Scripted:
    """A provider that plays its script: an exception is raised, a message answered with
    ``usage``. ``requests`` records what reached it."""

    def __init__(self, name: str, script: list[Any], usage: Usage) -> None:
        self.name = self.display_name = name
        self.script = list(script)
        self.usage = usage
        self.requests: list[ProviderRequest] = []
        self.closed = False

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        self.requests.append(request)
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        message = (
            step if isinstance(step, LLMMessage) else LLMMessage("assistant", (TextBlock(step),))
        )
        return ProviderResponse(message, self.usage)

    async def aclose(self) -> None:
        self.closed = True


class Providers:
    """Registered providers "down", "up", "blind" (text only) and "plain" (text and tool
    calls, no images), made from their scripts."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Any]] = {"down": [], "up": [], "blind": [], "plain": []}
        self.usage = {
            "down": Usage(10, 1),
            "up": Usage(100, 7),
            "blind": Usage(1, 1),
            "plain": Usage(2, 2),
        }
        self.made: dict[str, Scripted] = {}

    def spec(self, name: str, capabilities: Capabilities) -> ProviderSpec:
        def factory(_settings: ProviderSettings) -> Scripted:
            made = self.made[name] = Scripted(name, self.scripts[name], self.usage[name])
            return made

        return ProviderSpec(name, name.title(), factory, capabilities, default_model=f"{name}-1")

    def host(self) -> PluginHost:
        providers = self

        class Plugin:
            @hookimpl
            def oma_register_providers(self) -> list[ProviderSpec]:
                native = frozenset({"native", "prompted"})
                everything = attrs.evolve(Capabilities.everything(), output_modes=native)
                return [
                    providers.spec("down", everything),
                    providers.spec("up", everything),
                    providers.spec("blind", Capabilities.text_only()),
                    providers.spec("plain", _PLAIN),
                ]

        host = PluginHost(load_entrypoints=False)
        host.register(Plugin(), name="fallback-providers")
        return host


#: Text and tool calls, but no image (not even in a tool result).
_PLAIN = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("tool_use", frozenset({"assistant"})),
        BlockSupport("tool_result", frozenset({"user"})),
    )
)


@pytest.fixture
def providers() -> Providers:
    return Providers()


def _agent(providers: Providers, *fallbacks: str, **config: Any) -> Agent:
    settings = AgentConfig(
        name="a",
        model="down:d-1",
        fallback_models=fallbacks,
        max_retries=2,
        retry_delay=0,
        **config,
    )
    return Agent(settings, plugins=providers.host())


def _observed() -> tuple[RunSettings, list[tuple[str, dict[str, Any]]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    return RunSettings(progress=lambda kind, data: events.append((kind, data))), events


async def test_after_three_503s_the_fallback_answers_and_the_event_says_so(
    providers: Providers,
) -> None:
    providers.scripts["down"] += [_unavailable(), _unavailable(), _unavailable()]
    providers.scripts["up"].append("from up")
    settings, events = _observed()
    async with _agent(providers, "up:u-2") as agent:
        result = await agent.run("hi", settings=settings)
    assert result.success, result.status.error
    assert result.output == "from up"
    assert len(providers.made["down"].requests) == 3  # the first try and its two retries
    assert [request.model for request in providers.made["up"].requests] == ["u-2"]
    said = [kind for kind, _ in events if kind in ("retry", "fallback")]
    assert said == ["retry", "retry", "fallback"]
    (fallback,) = [data for kind, data in events if kind == "fallback"]
    assert (fallback["from"], fallback["to"], fallback["skipped"]) == ("down:d-1", "up:u-2", [])
    assert isinstance(fallback["error"], ProviderError)
    assert fallback["error"].status_code == 503
    assert providers.made["up"].closed  # made for the run: closed when it ended


async def test_a_4xx_the_request_caused_never_falls_back(providers: Providers) -> None:
    refused = ProviderError("HTTP 400: bad request", status_code=400, provider="Down")
    providers.scripts["down"].append(refused)
    settings, events = _observed()
    async with _agent(providers, "up") as agent:
        result = await agent.run("hi", settings=settings)
    assert not result.success
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert error.status_code == 400
    assert "up" not in providers.made  # never even made
    assert [kind for kind, _ in events if kind in ("retry", "fallback")] == []


async def test_a_fallback_that_cannot_carry_the_image_is_skipped_with_the_reason(
    providers: Providers,
) -> None:
    providers.scripts["down"] += [_unavailable()] * 3
    providers.scripts["up"].append("a cat")
    image = {
        "type": "image",
        "source": {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"},
    }
    turn = [{"role": "user", "content": [{"type": "text", "text": "what is it?"}, image]}]
    settings, events = _observed()
    async with _agent(providers, "blind:b-1", "up:u-1") as agent:
        result = await agent.run(turn, settings=settings)
    assert result.success, result.status.error
    assert result.output == "a cat"
    assert providers.made["blind"].requests == []  # nothing was sent to it
    (fallback,) = [data for kind, data in events if kind == "fallback"]
    assert fallback["to"] == "up:u-1"
    (skipped,) = fallback["skipped"]
    assert skipped["model"] == "blind:b-1"
    assert "image" in skipped["reason"]
    assert providers.made["blind"].closed


async def test_when_no_fallback_can_carry_the_input_the_run_fails_with_the_first_error(
    providers: Providers,
) -> None:
    providers.scripts["down"] += [_unavailable()] * 3
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AA=="},
    }
    settings, events = _observed()
    async with _agent(providers, "blind") as agent:
        result = await agent.run([{"role": "user", "content": [image]}], settings=settings)
    assert not result.success
    error = result.status.error
    assert isinstance(error, ProviderError) and error.status_code == 503
    (fallback,) = [data for kind, data in events if kind == "fallback"]
    assert fallback["to"] is None
    assert [skipped["model"] for skipped in fallback["skipped"]] == ["blind"]


async def test_the_fallback_keeps_answering_and_usage_sums_both_models(
    providers: Providers,
) -> None:
    @tool
    def lookup(city: str) -> str:
        """The weather in ``city``."""
        return f"sunny in {city}"

    call = ToolUseBlock("c1", "lookup", {"city": "Oslo"})
    again = ToolUseBlock("c2", "lookup", {"city": "Bergen"})
    providers.scripts["down"] += [LLMMessage("assistant", (call,)), *[_unavailable()] * 3]
    providers.scripts["up"] += [LLMMessage("assistant", (again,)), "both sunny"]
    async with _agent(providers, "up:u-1", tools=[lookup]) as agent:
        result = await agent.run("weather?")
    assert result.success, result.status.error
    assert result.output == "both sunny"
    assert len(providers.made["down"].requests) == 4  # never asked again after it failed
    up_requests = providers.made["up"].requests
    assert len(up_requests) == 2
    assert all(request.model == "u-1" for request in up_requests)
    assert result.usage == Usage(10, 1) + Usage(100, 7) + Usage(100, 7)


async def test_a_fallback_with_no_key_is_skipped(providers: Providers) -> None:
    keyed = ProviderSpec(
        "keyed",
        "Keyed",
        lambda _s: Scripted("keyed", ["never"], Usage(1, 1)),
        Capabilities.everything(),
        api_key_env="OMA_TEST_KEYED_KEY_NEVER_SET",
        requires_api_key=True,
    )
    host = providers.host()

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            return [keyed]

    host.register(Plugin(), name="keyed")
    providers.scripts["down"] += [_unavailable()] * 3
    providers.scripts["up"].append("fine")
    settings, events = _observed()
    config = AgentConfig(
        name="a", model="down:d", fallback_models=("keyed:k", "up"), max_retries=2, retry_delay=0
    )
    async with Agent(config, plugins=host) as agent:
        result = await agent.run("hi", settings=settings)
    assert result.output == "fine"
    (fallback,) = [data for kind, data in events if kind == "fallback"]
    assert [skipped["model"] for skipped in fallback["skipped"]] == ["keyed:k"]
    assert "OMA_TEST_KEYED_KEY_NEVER_SET" in fallback["skipped"][0]["reason"]


async def test_a_fallback_without_the_runs_output_mode_is_skipped(providers: Providers) -> None:
    providers.scripts["down"] += [_unavailable()] * 3
    providers.scripts["up"].append('{"city": "Oslo"}')
    settings, events = _observed()
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    async with _agent(providers, "blind", "up", output_type=schema) as agent:
        result = await agent.run("where?", settings=settings)
    assert result.success, result.status.error
    assert result.structured == {"city": "Oslo"}
    assert providers.made["blind"].requests == []
    (fallback,) = [data for kind, data in events if kind == "fallback"]
    assert fallback["to"] == "up"
    (skipped,) = fallback["skipped"]
    assert skipped["model"] == "blind"
    assert "output mode" in skipped["reason"]


async def test_the_run_log_names_the_model_that_answered(
    providers: Providers, tmp_path: Path
) -> None:
    providers.scripts["down"] += [_unavailable()] * 3
    providers.scripts["up"].append("from up")
    log = RunLog(tmp_path / "runs.db")
    host = providers.host()
    host.register(log.plugin())
    config = AgentConfig(
        name="a", model="down:d-1", fallback_models=("up:u-1",), max_retries=2, retry_delay=0
    )
    async with Agent(config, plugins=host) as agent:
        result = await agent.run("hi")
    assert result.success, result.status.error
    (run,) = log.runs()
    assert (run.provider, run.model, run.output) == ("up", "u-1", "from up")


# -- later turns: the conversation a fallback is sent, checked each turn --------------------------


@tool
def snapshot(place: str) -> Any:
    """A photo of ``place``: an image, which only some models can read."""
    return image_base64("AA==", "image/png")


def _photo_call(call_id: str = "p1") -> LLMMessage:
    return LLMMessage("assistant", (ToolUseBlock(call_id, "snapshot", {"place": "Oslo"}),))


def _has_image(request: ProviderRequest) -> bool:
    return any(
        isinstance(block, ToolResultBlock)
        and not isinstance(block.content, str)
        and any(part.type == "image" for part in block.content)
        for message in request.messages
        for block in message.content
    )


async def test_after_a_tool_returned_an_image_a_fallback_that_cannot_read_it_is_skipped(
    providers: Providers,
) -> None:
    providers.scripts["down"] += [_photo_call(), *[_unavailable()] * 3]
    providers.scripts["plain"].append("never sent")
    providers.scripts["up"].append("a harbour")
    settings, events = _observed()
    async with _agent(providers, "plain:p-1", "up:u-1", tools=[snapshot]) as agent:
        result = await agent.run("show me Oslo", settings=settings)
    assert result.success, result.status.error
    assert (result.output, result.model) == ("a harbour", "up:u-1")
    assert providers.made["plain"].requests == []  # nothing was sent to it
    (up_request,) = providers.made["up"].requests
    assert _has_image(up_request)
    (fallback,) = [data for kind, data in events if kind == "fallback"]
    assert (fallback["from"], fallback["to"]) == ("down:d-1", "up:u-1")
    (skipped,) = fallback["skipped"]
    assert skipped["model"] == "plain:p-1"
    assert "image" in skipped["reason"]


async def test_a_fallback_that_cannot_carry_a_later_turn_hands_over_to_the_next(
    providers: Providers,
) -> None:
    providers.scripts["down"] += [_unavailable()] * 3
    providers.scripts["plain"] += [_photo_call(), "never sent"]
    providers.scripts["up"].append("a harbour")
    settings, events = _observed()
    async with _agent(providers, "plain:p-1", "up:u-1", tools=[snapshot]) as agent:
        result = await agent.run("show me Oslo", settings=settings)
    assert result.success, result.status.error
    assert (result.output, result.model) == ("a harbour", "up:u-1")
    (plain_request,) = providers.made["plain"].requests  # the first turn only
    assert not _has_image(plain_request)
    (up_request,) = providers.made["up"].requests
    assert _has_image(up_request)
    first, second = [data for kind, data in events if kind == "fallback"]
    assert (first["from"], first["to"], first["skipped"]) == ("down:d-1", "plain:p-1", [])
    assert (second["from"], second["to"], second["skipped"]) == ("plain:p-1", "up:u-1", [])
    assert isinstance(second["error"], UnsupportedContentBlockError)
    assert second["error"].block_type == "image"
    assert result.usage == Usage(2, 2) + Usage(100, 7)  # the 503s reported none


async def test_when_no_fallback_can_carry_a_later_turn_the_run_fails_before_sending_it(
    providers: Providers,
) -> None:
    providers.scripts["down"] += [_unavailable()] * 3
    providers.scripts["plain"] += [_photo_call(), "never sent"]
    providers.scripts["blind"].append("never sent")
    settings, events = _observed()
    async with _agent(providers, "plain:p-1", "blind:b-1", tools=[snapshot]) as agent:
        result = await agent.run("show me Oslo", settings=settings)
    assert not result.success
    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError)
    assert (error.provider, error.block_type) == ("Plain", "image")
    assert len(providers.made["plain"].requests) == 1
    assert providers.made["blind"].requests == []
    assert result.model == "plain:p-1"  # the last model that replied
    second = [data for kind, data in events if kind == "fallback"][-1]
    assert (second["from"], second["to"]) == ("plain:p-1", None)
    assert [skipped["model"] for skipped in second["skipped"]] == ["blind:b-1"]


async def test_a_fallback_is_held_to_its_own_capabilities_not_the_failed_models(
    providers: Providers,
) -> None:
    providers.scripts["plain"] += [_unavailable()] * 3
    providers.scripts["up"] += [_photo_call(), "a harbour"]
    config = AgentConfig(
        name="a",
        model="plain:p-1",
        fallback_models=("up:u-1",),
        tools=[snapshot],
        max_retries=2,
        retry_delay=0,
    )
    async with Agent(config, plugins=providers.host()) as agent:
        result = await agent.run("show me Oslo")
    assert result.success, result.status.error  # the image goes to up, which reads it
    assert (result.output, result.model) == ("a harbour", "up:u-1")
    assert _has_image(providers.made["up"].requests[-1])


# -- RunResult.model ------------------------------------------------------------------------------


async def test_the_result_names_the_model_that_answered(providers: Providers) -> None:
    providers.scripts["down"].append("from down")
    async with _agent(providers, "up:u-1") as agent:
        result = await agent.run("hi")
    assert (result.output, result.model) == ("from down", "down:d-1")
    providers.scripts["down"] = [_unavailable()] * 3  # (each agent makes its own provider)
    providers.scripts["up"].append("from up")
    async with _agent(providers, "up:u-1") as agent, agent.stream("hi") as events:
        seen = [event async for event in events]
    assert (seen[-1].data.output, seen[-1].data.model) == ("from up", "up:u-1")


async def test_a_run_no_model_answered_names_none(providers: Providers) -> None:
    providers.scripts["down"] += [_unavailable()] * 3
    async with _agent(providers) as agent:
        result = await agent.run("hi")
    assert not result.success
    assert result.model is None


# -- the setting --------------------------------------------------------------------------------


@given(st.lists(st.text(min_size=1).filter(lambda s: s.partition(":")[0].strip()), max_size=4))
def test_fallback_models_keeps_the_names_in_order(names: list[str]) -> None:
    assert AgentConfig(name="a", fallback_models=names).fallback_models == tuple(names)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("openai:gpt-4o", "fallback_models must be a list"),
        ([":m"], "fallback_models[0]"),
        (["up", 3], "fallback_models[1]"),
        ([""], "fallback_models[0]"),
    ],
)
def test_a_bad_fallback_models_value_is_refused_naming_the_field(value: Any, said: str) -> None:
    with pytest.raises((TypeError, ValueError), match=said.replace("[", r"\[")):
        AgentConfig(name="a", fallback_models=value)


def test_an_unregistered_fallback_provider_is_refused_when_the_agent_is_built(
    providers: Providers,
) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        _agent(providers, "nowhere:m-1")
    assert caught.value.name == "nowhere"


async def test_a_streamed_run_shows_only_the_fallbacks_answer(providers: Providers) -> None:
    providers.scripts["down"] += [_unavailable()] * 3
    providers.scripts["up"].append("from up")
    async with _agent(providers, "up") as agent, agent.stream("hi") as events:
        seen = [event async for event in events]
    assert [event.data for event in seen if event.type == "text"] == ["from up"]
    assert seen[-1].type == "done"
    assert seen[-1].data.success


# -- the command ------------------------------------------------------------------------------


@pytest.fixture
def cli_providers(
    providers: Providers, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Providers]:
    monkeypatch.setenv("OMA_HOME", str(tmp_path / "home"))
    previous = PluginHost.set_default(providers.host())
    yield providers
    PluginHost.set_default(previous)


def test_oma_run_fallback_answers_after_the_model_fails(cli_providers: Providers) -> None:
    cli_providers.scripts["down"] += [_unavailable()] * (DEFAULT_POLICY.max_retries + 1)
    cli_providers.scripts["up"].append("from up")
    arguments = ["run", "-m", "down:d-1", "--fallback", "nope-not-used", "--fallback", "up:u-1"]
    result = CliRunner().invoke(cli, [*arguments, "hi", "--json", "--no-log"])
    assert result.exit_code == 2, result.output  # an unknown provider: a usage error
    assert "nope-not-used" in result.stderr
    arguments = ["run", "-m", "down:d-1", "--fallback", "up:u-1"]
    result = CliRunner().invoke(cli, [*arguments, "hi", "--json", "--no-log"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["output"] == "from up"
    assert "falling back: down:d-1 failed; trying up:u-1\n" in result.stderr
    assert [request.model for request in cli_providers.made["up"].requests] == ["u-1"]
