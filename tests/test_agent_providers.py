"""How an agent gets its provider: lazily, once, from its settings; what it sends; closing it; odd
providers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from _builders import make, text_msg

from oma_core import Agent, AgentConfig, PluginHost
from oma_core.capabilities import Capabilities, ProviderSpec
from oma_core.errors import NotRegisteredError
from oma_core.messages import LLMMessage, TextBlock
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    Usage,
)
from oma_core.testing import ScriptedProvider


def counting_spec(made: list[ProviderSettings], name: str = "counting") -> ProviderSpec:
    def factory(settings: ProviderSettings) -> ScriptedProvider:
        made.append(settings)
        return ScriptedProvider(["from factory"] * 3)

    return ProviderSpec(
        name, "Counting", factory, Capabilities.everything(), default_model="counting-1"
    )


def host_with(spec: ProviderSpec) -> PluginHost:
    from oma_core import hookimpl

    host = PluginHost(load_entrypoints=False)

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            return [spec]

    host.register(Plugin(), name="counting-plugin")
    return host


class CompleteOnly:
    """A provider object without ``stream``."""

    name = display_name = "complete-only"

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return ProviderResponse(LLMMessage("assistant", (TextBlock("whole"),)), Usage(1, 1))


class StreamOnly:
    """A provider object without ``complete``."""

    name = display_name = "stream-only"

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        yield TextDelta("pie")
        yield TextDelta("ces")
        message = LLMMessage("assistant", (TextBlock("pieces"),))
        yield ResponseComplete(ProviderResponse(message, Usage(1, 1)))


async def test_the_provider_is_created_lazily_once_with_its_settings() -> None:
    made: list[ProviderSettings] = []
    host = host_with(counting_spec(made))
    agent = Agent(
        AgentConfig(
            name="a",
            provider="counting",
            base_url="http://127.0.0.1:9",
            api_key="sk-secret",
            provider_options={"x": 1},
        ),
        plugins=host,
    )
    assert made == []
    await agent.run("one")
    result = await agent.run("two")
    assert result.output == "from factory"
    assert len(made) == 1
    assert made[0] == ProviderSettings("http://127.0.0.1:9", "sk-secret", {"x": 1})
    assert agent.provider() is agent.provider()


async def test_the_spec_default_model_is_used() -> None:
    made: list[ProviderSettings] = []
    plugins = host_with(counting_spec(made))
    agent = Agent(AgentConfig(name="a", provider="counting"), plugins=plugins)
    assert agent.build_request("hi").model == "counting-1"


async def test_aclose_closes_the_provider_the_agent_created() -> None:
    made: list[ProviderSettings] = []
    async with Agent(
        AgentConfig(name="a", provider="counting"), plugins=host_with(counting_spec(made))
    ) as agent:
        await agent.run("hi")
        provider = agent.provider()
    assert provider.closed is True


def test_an_unknown_provider_raises_when_the_agent_is_built(host: PluginHost) -> None:
    with pytest.raises(NotRegisteredError) as caught:
        Agent(AgentConfig(name="a", provider="nope"), plugins=host)
    assert caught.value.code == "NOT_REGISTERED"
    assert "nope" in str(caught.value)


def test_the_api_key_never_appears_in_the_repr() -> None:
    config = AgentConfig(name="a", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(config)


def test_build_request_has_model_messages_system_prompt_and_tools(host: PluginHost) -> None:
    def lookup(q: str) -> str:
        """Find things."""
        return q

    agent, _ = make(host, model="m-1", system_prompt="sys", tools=[lookup])
    request = agent.build_request([text_msg("user", "hi")])
    assert (request.model, request.system_prompt) == ("m-1", "sys")
    assert request.messages == (LLMMessage("user", (TextBlock("hi"),)),)
    assert [t.name for t in request.tools] == ["lookup"]


async def test_the_echo_provider_is_the_default(host: PluginHost) -> None:
    agent = Agent(AgentConfig(name="a"), plugins=host)
    result = await agent.run("ping")
    assert result.success and "ping" in result.output


async def test_a_provider_without_stream_can_still_be_streamed(host: PluginHost) -> None:
    agent = Agent(AgentConfig(name="a", provider=CompleteOnly()), plugins=host)
    events = [event async for event in agent.stream("hi")]
    assert [(e.type, e.data) for e in events[:-1]] == [("text", "whole")]
    assert events[-1].data.output == "whole"


async def test_a_provider_without_complete_can_still_be_run(host: PluginHost) -> None:
    agent = Agent(AgentConfig(name="a", provider=StreamOnly()), plugins=host)
    result = await agent.run("hi")
    assert result.success and result.output == "pieces"


def test_a_provider_that_is_neither_name_nor_provider_is_refused() -> None:
    with pytest.raises(TypeError, match="provider"):
        AgentConfig(name="a", provider=42)


@pytest.mark.parametrize("bad", [None, -5, float("nan"), "12", True])
async def test_a_provider_reporting_bad_usage_counts_does_not_fail_the_run(bad: object) -> None:
    """Usage counts that are missing, negative or not numbers count as 0 in the result."""

    class Sloppy:
        name = display_name = "sloppy"

        async def complete(self, request: object) -> ProviderResponse:
            usage = Usage.__new__(Usage)
            object.__setattr__(usage, "input_tokens", bad)
            object.__setattr__(usage, "output_tokens", 7)
            return ProviderResponse(LLMMessage("assistant", (TextBlock("ok"),)), usage=usage)

    result = await Agent(AgentConfig(name="a", provider=Sloppy())).run("hi")
    assert result.success, result.status.error
    assert result.usage == Usage(0, 7)
