"""The bridge on a second wire: LiteLLM's ``anthropic/`` route against the fake Messages API
(``base_url`` as ``api_base``), translated by LiteLLM from the OpenAI shape oma hands it. (Its
faults and what its errors hold: the kit's suites, ``test_litellm_faults.py`` and
``test_litellm_secrets.py``.)"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pytest
from fake_messages import FakeMessages

from oma_core import Agent, AgentConfig, tool

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


@pytest.fixture
def messages_server(fake_server_factory: Callable[..., Any]) -> FakeMessages:
    return fake_server_factory(FakeMessages)  # type: ignore[no-any-return]


def agent(server: FakeMessages, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "bridge",
        "provider": "litellm",
        "model": "anthropic/claude-fake",
        "base_url": server.url,
        "api_key": "test-key",
        "max_retries": 0,
    }
    values.update(config)
    return Agent(AgentConfig(**values))


async def test_text_and_settings_reach_the_messages_wire(messages_server: FakeMessages) -> None:
    messages_server.reply_text("Bonjour.")
    async with agent(
        messages_server, system_prompt="in French", temperature=0.1, max_tokens=64, stop=["END"]
    ) as bridge:
        result = await bridge.run("hello")
    assert result.output == "Bonjour.", result.status.error
    assert (result.usage.input_tokens, result.usage.output_tokens) == (13, 6)
    request = messages_server.requests[0]
    assert request.headers["x-api-key"] == "test-key"
    body = request.json
    assert body["model"] == "claude-fake"
    assert (body["temperature"], body["max_tokens"], body["stop_sequences"]) == (0.1, 64, ["END"])
    assert "in French" in str(body["system"])


async def test_an_image_arrives_as_a_base64_image_block(messages_server: FakeMessages) -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    conversation = [{"role": "user", "content": [{"type": "text", "text": "what?"}, image]}]
    async with agent(messages_server) as bridge:
        result = await bridge.run(conversation)
    assert result.success, result.status.error
    blocks = messages_server.requests[0].json["messages"][0]["content"]
    sent = next(b for b in blocks if b["type"] == "image")
    assert sent["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_tool_call_round_trips_as_tool_use_and_tool_result(
    messages_server: FakeMessages, streaming: bool
) -> None:
    @tool
    def forecast(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    messages_server.reply_tool_use("toolu_1", "forecast", {"city": "Oslo"})
    messages_server.reply_text("Sunny in Oslo.")
    async with agent(messages_server, tools=[forecast]) as bridge:
        if streaming:
            async with bridge.stream("weather?") as events:
                result = [e async for e in events][-1].data
        else:
            result = await bridge.run("weather?")
    assert result.output == "Sunny in Oslo.", result.status.error
    first, second = (r.json for r in messages_server.requests)
    assert first["tools"][0]["name"] == "forecast"
    assert second["messages"][1]["content"][-1]["type"] == "tool_use"
    answer = second["messages"][2]["content"][0]
    assert (answer["type"], answer["tool_use_id"]) == ("tool_result", "toolu_1")
    assert "sunny in Oslo" in str(answer["content"])


async def test_streaming_gives_text_deltas_and_usage(messages_server: FakeMessages) -> None:
    messages_server.reply_text("streamed over the Messages wire")
    async with agent(messages_server) as bridge, bridge.stream("hi") as events:
        seen = [e async for e in events]
    texts = [e.data for e in seen if e.type == "text"]
    assert len(texts) > 1 and "".join(texts) == "streamed over the Messages wire"
    assert seen[-1].data.usage.input_tokens == 13
    assert messages_server.requests[0].json["stream"] is True


async def test_closing_the_agent_closes_its_connections(messages_server: FakeMessages) -> None:
    async with agent(messages_server) as bridge:
        await bridge.run("one")
        async with bridge.stream("two") as events:
            _ = [e async for e in events]
        assert messages_server.open_connections >= 1
    assert await messages_server.async_wait_idle(timeout=2.0)
