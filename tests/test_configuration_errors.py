"""Configuration mistakes raise at once, with the way out: an unknown provider or backend (a
did-you-mean and the plugin to install), an option the provider does not accept, a provider
that needs a key and has none (before any request); ``provider:model`` and default models.
A run that fails later still returns a failed result."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import Any

import pytest

from oma_core import Agent, AgentConfig, OpenMultiAgent, PluginHost, hookimpl, resolve_model
from oma_core._resolution import KNOWN_BACKENDS, KNOWN_DISTRIBUTIONS
from oma_core.capabilities import Capabilities, ProviderSpec
from oma_core.errors import (
    MissingKeyError,
    MissingProviderError,
    NotRegisteredError,
    PluginError,
    UnknownOptionError,
    UsageError,
)
from oma_core.http import LoopLocalClient, check_api_key, post_json
from oma_core.messages import LLMMessage, TextBlock
from oma_core.providers import ProviderRequest, ProviderResponse, ProviderSettings, Usage
from oma_core.testing import FakeServer, HTTPError, RecordedRequest, Response

SECRET = "sk-config-test-key-0123456789"


class CountingServer(FakeServer):
    """Answers every POST with ``{"text": "ok"}`` and records it."""

    def handle(self, request: RecordedRequest) -> Response:
        return Response.json({"text": "ok"})


class HttpProvider:
    """A provider that really posts to ``base_url``: a request reaches the server or not."""

    name = display_name = "Keyed"

    def __init__(self, settings: ProviderSettings) -> None:
        self._url = f"{settings.base_url}/complete"
        self._key = settings.api_key
        self._clients = LoopLocalClient.from_options({})

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        reply = await post_json(
            self._clients.get(), self._url, {"n": len(request.messages)}, provider="Keyed"
        )
        return ProviderResponse(LLMMessage("assistant", (TextBlock(reply["text"]),)), Usage(1, 1))

    async def aclose(self) -> None:
        await self._clients.aclose()


def keyed_spec(**fields: Any) -> ProviderSpec:
    base: dict[str, Any] = {
        "api_key_env": ("KEYED_API_KEY", "KEYED_OTHER_KEY"),
        "requires_api_key": True,
        "default_model": "keyed-1",
        "provider_options": ("timeout", "temperature_mode"),
    }
    return ProviderSpec(
        "keyed", "Keyed Service", HttpProvider, Capabilities.everything(), **(base | fields)
    )


def host_with(*specs: ProviderSpec) -> PluginHost:
    host = PluginHost(load_entrypoints=False)

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            return list(specs)

    host.register(Plugin(), name="keyed-plugin")
    return host


@pytest.fixture
def server() -> Iterator[CountingServer]:
    with CountingServer() as fake:
        yield fake


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KEYED_API_KEY", raising=False)
    monkeypatch.delenv("KEYED_OTHER_KEY", raising=False)


# -- unknown providers and backends ----------------------------------------------------------


def test_an_unknown_provider_raises_when_the_agent_is_built(host: PluginHost) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        Agent(AgentConfig(name="a", provider="nope"), plugins=host)
    error = caught.value
    assert isinstance(error, PluginError) and isinstance(error, UsageError)
    assert (error.name, error.kind, error.distribution) == ("nope", "provider", None)
    assert "echo" in error.available and "unknown provider 'nope'" in str(error)


def test_a_misspelt_provider_gets_a_did_you_mean_and_the_plugin_to_install(
    host: PluginHost,
) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        Agent(AgentConfig(name="x", provider="antropic"), plugins=host)
    error = caught.value
    assert error.suggestions == ("anthropic",)
    assert error.distribution == "oma-anthropic"
    assert "did you mean 'anthropic'?" in str(error)
    assert "pip install oma-anthropic" in str(error)
    assert "pip install -e plugins/oma-anthropic" in str(error)


def test_a_provider_whose_plugin_is_not_installed_says_which_to_install(host: PluginHost) -> None:
    with pytest.raises(NotRegisteredError, match="pip install oma-openai") as caught:
        Agent(AgentConfig(name="x", provider="minimax"), plugins=host)
    assert caught.value.distribution == "oma-openai"
    assert caught.value.suggestions == ()


def test_a_misspelt_registered_provider_is_suggested_without_an_install_hint(
    host: PluginHost,
) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        Agent(AgentConfig(name="x", provider="scriptd"), plugins=host)
    assert caught.value.suggestions == ("scripted",)
    assert caught.value.distribution is None and "pip install" not in str(caught.value)


def test_a_model_prefix_naming_a_missing_provider_raises_instead_of_echoing(
    host: PluginHost,
) -> None:
    with pytest.raises(NotRegisteredError, match="oma-anthropic"):
        Agent(AgentConfig(name="x", model="anthropic:claude-sonnet-4-6"), plugins=host)


def test_a_model_with_an_unrelated_colon_stays_an_echo_model(host: PluginHost) -> None:
    agent = Agent(AgentConfig(name="x", model="some:thing"), plugins=host)
    assert agent.build_request("hi").model == "some:thing"


def test_an_unknown_backend_raises_when_the_agent_is_built(host: PluginHost) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        Agent(AgentConfig(name="x", backend={"kind": "proces"}), plugins=host)
    error = caught.value
    assert (error.kind, error.suggestions, error.distribution) == (
        "backend",
        ("process",),
        "oma-process",
    )
    assert "unknown backend kind 'proces'" in str(error)
    assert "pip install oma-process" in str(error)


def test_run_agent_raises_an_unknown_provider_from_the_call(host: PluginHost) -> None:
    oma = OpenMultiAgent(plugins=host)
    with pytest.raises(NotRegisteredError):
        oma.run_agent(AgentConfig(name="x", provider="antropic"), "hi")


def test_the_install_table_names_the_plugins_in_this_repository() -> None:
    from pathlib import Path

    plugins = Path(__file__).resolve().parents[1] / "plugins"
    for name, distribution in {**KNOWN_DISTRIBUTIONS, **KNOWN_BACKENDS}.items():
        pyproject = (plugins / distribution / "pyproject.toml").read_text(encoding="utf-8")
        assert f'name = "{distribution}"' in pyproject, name


# -- options -------------------------------------------------------------------------------


def test_an_option_the_provider_does_not_accept_raises_with_a_did_you_mean() -> None:
    host = host_with(keyed_spec())
    with pytest.raises(UnknownOptionError) as caught:
        Agent(AgentConfig(name="x", provider="keyed", provider_options={"timeot": 3}), plugins=host)
    error = caught.value
    assert (error.name, error.options, error.suggestions) == ("keyed", ("timeot",), ("timeout",))
    assert error.accepted == ("temperature_mode", "timeout")
    assert "did you mean 'timeout'?" in str(error) and isinstance(error, PluginError)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("temperature", "(temperature is not a provider option: set AgentConfig.temperature)"),
        ("max_tokns", "(did you mean 'max_tokens'? set AgentConfig.max_tokens)"),
    ],
)
def test_a_portable_setting_given_as_an_option_points_to_its_agentconfig_field(
    given: str, said: str
) -> None:
    host = host_with(keyed_spec())
    with pytest.raises(UnknownOptionError) as caught:
        Agent(AgentConfig(name="x", provider="keyed", provider_options={given: 3}), plugins=host)
    assert said in str(caught.value)
    assert caught.value.suggestions == (said.split("AgentConfig.")[1].rstrip(")"),)


def test_accepted_options_pass() -> None:
    host = host_with(keyed_spec())
    Agent(AgentConfig(name="x", provider="keyed", provider_options={"timeout": 3}), plugins=host)


def test_a_spec_that_declares_no_options_accepts_any() -> None:
    host = host_with(keyed_spec(provider_options=None))
    Agent(AgentConfig(name="x", provider="keyed", provider_options={"anything": 1}), plugins=host)


def test_the_scripted_provider_declares_its_one_option(host: PluginHost) -> None:
    with pytest.raises(UnknownOptionError, match="'responses'"):
        Agent(
            AgentConfig(name="x", provider="scripted", provider_options={"response": []}),
            plugins=host,
        )


# -- keys ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("no_keys")
def test_a_missing_key_raises_when_the_run_starts_before_any_request(
    server: CountingServer,
) -> None:
    agent = Agent(
        AgentConfig(name="x", provider="keyed", base_url=server.url),
        plugins=host_with(keyed_spec()),
    )
    with pytest.raises(MissingKeyError) as caught:
        agent.run_sync("hi")
    error = caught.value
    assert (error.provider, error.variables) == ("keyed", ("KEYED_API_KEY", "KEYED_OTHER_KEY"))
    assert "KEYED_API_KEY or KEYED_OTHER_KEY" in str(error) and "Keyed Service" in str(error)
    assert "oma keys set keyed" in str(error)
    assert server.requests == []


@pytest.mark.usefixtures("no_keys")
def test_stream_and_prompt_and_run_agent_raise_a_missing_key_at_the_call(
    server: CountingServer,
) -> None:
    host = host_with(keyed_spec())
    config = AgentConfig(name="x", provider="keyed", base_url=server.url)
    agent = Agent(config, plugins=host)
    with pytest.raises(MissingKeyError):
        agent.stream("hi")
    with pytest.raises(MissingKeyError):
        agent.prompt("hi")
    with pytest.raises(MissingKeyError):
        OpenMultiAgent(plugins=host).run_agent(config, "hi")
    assert server.requests == [] and agent.get_history() == []


@pytest.mark.usefixtures("no_keys")
def test_a_key_from_any_of_its_variables_is_enough(
    server: CountingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEYED_OTHER_KEY", SECRET)
    agent = Agent(
        AgentConfig(name="x", provider="keyed", base_url=server.url),
        plugins=host_with(keyed_spec()),
    )
    assert agent.run_sync("hi").output == "ok"
    assert len(server.requests) == 1


@pytest.mark.usefixtures("no_keys")
def test_a_key_in_the_config_is_enough(server: CountingServer) -> None:
    config = AgentConfig(name="x", provider="keyed", base_url=server.url, api_key=SECRET)
    assert Agent(config, plugins=host_with(keyed_spec())).run_sync("hi").success


@pytest.mark.usefixtures("no_keys")
def test_a_provider_that_needs_no_key_runs_without_one(server: CountingServer) -> None:
    host = host_with(keyed_spec(requires_api_key=False))
    result = Agent(
        AgentConfig(name="x", provider="keyed", base_url=server.url), plugins=host
    ).run_sync("hi")
    assert result.success


@pytest.mark.usefixtures("no_keys")
def test_building_a_request_needs_no_key(server: CountingServer) -> None:
    """``oma render`` builds the request and sends nothing: no key is needed for that."""
    agent = Agent(
        AgentConfig(name="x", provider="keyed", base_url=server.url),
        plugins=host_with(keyed_spec()),
    )
    assert agent.build_request("hi").model == "keyed-1"
    assert server.requests == []


def test_the_missing_key_error_holds_no_key_and_pickles() -> None:
    error = MissingKeyError("keyed", ("KEYED_API_KEY",), display_name="Keyed Service")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.provider, copy.variables, copy.display_name) == error_fields(error)
    assert str(copy) == str(error)


def error_fields(error: MissingKeyError) -> tuple[Any, ...]:
    return error.provider, error.variables, error.display_name


def test_check_api_key_reads_the_environment_it_is_given() -> None:
    spec = keyed_spec()
    check_api_key(spec, None, {"KEYED_API_KEY": "k"})
    with pytest.raises(MissingKeyError):
        check_api_key(spec, None, {"KEYED_API_KEY": ""})


def test_a_run_that_fails_later_still_returns_a_failed_result(server: CountingServer) -> None:
    server.enqueue(HTTPError(500, "boom"))
    config = AgentConfig(
        name="x", provider="keyed", base_url=server.url, api_key=SECRET, max_retries=0
    )
    result = Agent(config, plugins=host_with(keyed_spec())).run_sync("hi")
    assert result.status.code == "error" and not result.success


# -- provider:model ----------------------------------------------------------------------


def test_resolve_model_reads_the_provider_before_the_first_colon() -> None:
    host = host_with(keyed_spec())
    assert resolve_model(None, "keyed:big:v2", plugins=host) == ("keyed", "big:v2")
    assert resolve_model("keyed", "keyed:big", plugins=host) == ("keyed", "big")


def test_resolve_model_gives_the_spec_default_model_to_a_provider_alone() -> None:
    host = host_with(keyed_spec())
    assert resolve_model("keyed", None, plugins=host) == ("keyed", "keyed-1")
    assert resolve_model(None, "keyed:", plugins=host) == ("keyed", "keyed-1")


def test_resolve_model_keeps_a_model_with_its_own_colons_under_a_named_provider() -> None:
    host = host_with(keyed_spec())
    assert resolve_model("keyed", "ft:gpt-4o:acme", plugins=host) == ("keyed", "ft:gpt-4o:acme")


def test_resolve_model_without_either_is_the_offline_echo(host: PluginHost) -> None:
    assert resolve_model(None, None, plugins=host) == ("echo", None)


def test_a_model_without_a_provider_is_an_error_naming_the_fix(host: PluginHost) -> None:
    with pytest.raises(MissingProviderError) as caught:
        resolve_model(None, "claude-sonnet-4-6", plugins=host)
    assert caught.value.suggestion == "anthropic:claude-sonnet-4-6"
    assert "'anthropic:claude-sonnet-4-6'" in str(caught.value)
    with pytest.raises(MissingProviderError, match="PROVIDER:my-model"):
        resolve_model(None, "my-model", plugins=host)


def test_a_model_prefix_of_a_missing_plugin_names_the_plugin(host: PluginHost) -> None:
    with pytest.raises(NotRegisteredError, match="pip install oma-gemini"):
        resolve_model(None, "gemini:gemini-2.5-flash", plugins=host)


def test_resolve_model_checks_a_named_provider(host: PluginHost) -> None:
    with pytest.raises(NotRegisteredError, match="did you mean 'echo'"):
        resolve_model("ecno", None, plugins=host)


def test_an_agent_with_only_a_provider_uses_its_default_model() -> None:
    agent = Agent(AgentConfig(name="x", provider="keyed"), plugins=host_with(keyed_spec()))
    assert agent.build_request("hi").model == "keyed-1"
    agent = Agent(AgentConfig(name="x", model="keyed:other"), plugins=host_with(keyed_spec()))
    assert agent.build_request("hi").model == "other"
