"""The provider interface is enforced where the fault is the plugin's: a spec the core cannot
use is a load failure naming the plugin; a factory whose product is no provider is a
``PluginError`` naming the plugin when it first runs; a provider object passed in a config is
checked when the config is built."""

from __future__ import annotations

from typing import Any

import pytest

from oma_core import Agent, AgentConfig, Capabilities, PluginHost, ProviderSpec, hookimpl
from oma_core.errors import PluginError


def _host_with(spec: Any) -> PluginHost:
    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[Any]:
            return [spec]

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), "acme")
    return host


def test_a_spec_without_capabilities_is_refused_when_the_plugin_loads() -> None:
    spec = ProviderSpec("acme", "Acme", factory=lambda s: object(), capabilities=None)  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="declares no capabilities") as info:
        _host_with(spec)
    assert info.value.name == "acme"


def test_a_spec_whose_factory_is_not_callable_is_refused_when_the_plugin_loads() -> None:
    spec = ProviderSpec("acme", "Acme", factory="nope", capabilities=Capabilities.text_only())  # type: ignore[arg-type]
    with pytest.raises(PluginError, match="factory of 'acme' is not callable"):
        _host_with(spec)


async def test_a_factory_whose_product_is_no_provider_fails_naming_the_plugin() -> None:
    spec = ProviderSpec(
        "acme", "Acme", factory=lambda s: object(), capabilities=Capabilities.text_only()
    )
    host = _host_with(spec)
    agent = Agent(AgentConfig(name="a", provider="acme"), plugins=host)
    result = await agent.run("hi")
    error = result.status.error
    assert isinstance(error, PluginError)
    assert error.name == "acme"
    assert "neither complete() nor stream()" in str(error)


def test_a_provider_object_without_complete_or_stream_is_refused_when_the_config_is_built() -> None:
    class NotAProvider:
        capabilities = Capabilities.text_only()

    with pytest.raises(TypeError, match="complete\\(\\) or stream\\(\\)"):
        AgentConfig(name="a", provider=NotAProvider())


def test_a_provider_object_whose_capabilities_are_not_capabilities_is_refused() -> None:
    class Odd:
        capabilities = ("text",)

        async def complete(self, request: Any) -> Any:
            raise NotImplementedError

    with pytest.raises(TypeError, match=r"not an oma_core\.Capabilities"):
        AgentConfig(name="a", provider=Odd())


def test_registration_hooks_run_once_per_plugin_load() -> None:
    calls: list[str] = []

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            calls.append("providers")
            return [ProviderSpec("acme", "Acme", lambda s: object(), Capabilities.text_only())]

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), "acme")
    for _ in range(3):
        host.provider_spec("acme")
        host.plugin_info()
    assert calls == ["providers"]
