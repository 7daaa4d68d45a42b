"""AgentConfig's portable temperature, max_tokens and stop reach the wire, checked on what the
fake service received, through the real Agent (complete and stream) and through render."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai import API_KEY, FakeChatCompletions

from oma_core import Agent, AgentConfig

PORTABLE = {"temperature": 0.2, "max_tokens": 50, "stop": ["END"]}


def agent(server: FakeChatCompletions, provider: str = "openai", **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "t",
        "provider": provider,
        "model": "gpt-test",
        "base_url": server.base_url,
        "api_key": API_KEY,
        "max_retries": 0,
        **PORTABLE,
    }
    values.update(config)
    return Agent(AgentConfig(**values))


async def run(a: Agent, streaming: bool) -> None:
    if streaming:
        async with a.stream("hi") as events:
            result = [e async for e in events][-1].data
    else:
        result = await a.run("hi")
    assert result.success, result.status


@pytest.mark.parametrize("streaming", [False, True])
async def test_openai_receives_temperature_max_completion_tokens_and_stop(
    server: FakeChatCompletions, streaming: bool
) -> None:
    async with agent(server) as a:
        await run(a, streaming)
    [received] = server.requests
    body = received.json
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == 50
    assert "max_tokens" not in body
    assert body["stop"] == ["END"]
    assert body.get("stream", False) is streaming


@pytest.mark.parametrize("streaming", [False, True])
async def test_compatible_preset_receives_max_tokens_under_its_own_name(
    compatible_server: FakeChatCompletions, streaming: bool
) -> None:
    async with agent(compatible_server, "minimax") as a:
        await run(a, streaming)
    body = compatible_server.requests[0].json
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.2, 50, ["END"])
    assert "max_completion_tokens" not in body


async def test_unset_portable_settings_send_nothing(server: FakeChatCompletions) -> None:
    async with agent(server, temperature=None, max_tokens=None, stop=None) as a:
        await run(a, False)
    body = server.requests[0].json
    assert not {"temperature", "max_tokens", "max_completion_tokens", "stop"} & set(body)


async def test_several_stop_sequences_are_sent_in_order(server: FakeChatCompletions) -> None:
    async with agent(server, stop=["END", "\n\nUser:"]) as a:
        await run(a, False)
    assert server.requests[0].json["stop"] == ["END", "\n\nUser:"]


@pytest.mark.parametrize("streaming", [False, True])
async def test_portable_values_win_over_provider_options(
    server: FakeChatCompletions, streaming: bool
) -> None:
    options = {"temperature": 1.5, "stop": ["OTHER"], "max_tokens": 999, "seed": 3}
    async with agent(server, provider_options=options) as a:
        await run(a, streaming)
    body = server.requests[0].json
    assert (body["temperature"], body["stop"], body["max_completion_tokens"]) == (
        0.2,
        ["END"],
        50,
    )
    assert "max_tokens" not in body  # OpenAI refuses max_tokens beside max_completion_tokens
    assert body["seed"] == 3  # the other options still go through


async def test_provider_options_apply_when_the_portable_setting_is_unset(
    server: FakeChatCompletions,
) -> None:
    options = {"temperature": 1.5, "stop": ["OTHER"], "max_tokens": 999}
    async with agent(
        server, temperature=None, max_tokens=None, stop=None, provider_options=options
    ) as a:
        await run(a, False)
    body = server.requests[0].json
    assert (body["temperature"], body["stop"], body["max_tokens"]) == (1.5, ["OTHER"], 999)


async def test_render_shows_the_portable_settings_as_sent(server: FakeChatCompletions) -> None:
    """What ``oma render`` prints (``Agent.build_request`` then ``provider.render``) is the
    body received, byte for byte, settings included."""
    async with agent(server, provider_options={"stop": ["OTHER"]}) as a:
        rendered = a.provider().render(a.build_request("hi"))
        await run(a, False)
    assert rendered["stop"] == ["END"]
    wire = json.dumps(rendered, ensure_ascii=False, separators=(",", ":")).encode()
    assert wire == server.requests[0].body
