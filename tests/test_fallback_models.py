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
from oma_core.capabilities import Capabilities, ProviderSpec
from oma_core.cli import cli
from oma_core.errors import NotRegisteredError, ProviderError
from oma_core.messages import LLMMessage, TextBlock, ToolUseBlock
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
    """Registered providers "down", "up" and "blind" (text only), made from their scripts."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Any]] = {"down": [], "up": [], "blind": []}
        self.usage = {"down": Usage(10, 1), "up": Usage(100, 7), "blind": Usage(1, 1)}
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
                ]

        host = PluginHost(load_entrypoints=False)
        host.register(Plugin(), name="fallback-providers")
        return host


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
