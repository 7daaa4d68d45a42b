"""AgentConfig's portable temperature, max_tokens and stop reach the wire (``stop`` as
``stop_sequences``), checked on what the fake Messages API received, through the real Agent
(complete and stream) and through render."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic

from oma_core import Agent, AgentConfig

PORTABLE = {"temperature": 0.2, "max_tokens": 50, "stop": ["END"]}


def agent(server: FakeAnthropic, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "t",
        "provider": "anthropic",
        "model": "claude-test",
        "base_url": server.url,
        "api_key": "test-key",
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
async def test_temperature_max_tokens_and_stop_sequences_are_received(
    server: FakeAnthropic, streaming: bool
) -> None:
    async with agent(server) as a:
        await run(a, streaming)
    [received] = server.requests
    body = received.json
    assert (body["temperature"], body["max_tokens"], body["stop_sequences"]) == (0.2, 50, ["END"])
    assert "stop" not in body
    assert body.get("stream", False) is streaming


async def test_unset_portable_settings_send_the_defaults_only(server: FakeAnthropic) -> None:
    async with agent(server, temperature=None, max_tokens=None, stop=None) as a:
        await run(a, False)
    body = server.requests[0].json
    assert body["max_tokens"] == 4096  # the Messages API requires one
    assert not {"temperature", "stop_sequences"} & set(body)


@pytest.mark.parametrize("streaming", [False, True])
async def test_portable_values_win_over_provider_options(
    server: FakeAnthropic, streaming: bool
) -> None:
    options = {
        "temperature": 0.9,
        "stop_sequences": ["OTHER"],
        "max_tokens": 999,
        "extra_body": {"temperature": 0.8, "stop_sequences": ["X"], "max_tokens": 7},
        "top_k": 5,
    }
    async with agent(server, provider_options=options) as a:
        await run(a, streaming)
    body = server.requests[0].json
    assert (body["temperature"], body["max_tokens"], body["stop_sequences"]) == (0.2, 50, ["END"])
    assert body["top_k"] == 5  # the other options still go through


async def test_provider_options_apply_when_the_portable_setting_is_unset(
    server: FakeAnthropic,
) -> None:
    options = {"temperature": 0.9, "stop_sequences": ["OTHER"], "max_tokens": 999}
    async with agent(
        server, temperature=None, max_tokens=None, stop=None, provider_options=options
    ) as a:
        await run(a, False)
    body = server.requests[0].json
    assert (body["temperature"], body["max_tokens"], body["stop_sequences"]) == (
        0.9,
        999,
        ["OTHER"],
    )


async def test_render_shows_the_portable_settings_as_sent(server: FakeAnthropic) -> None:
    """What ``oma render`` prints (``Agent.build_request`` then ``provider.render``) is the
    body received, byte for byte, settings included."""
    async with agent(server, provider_options={"stop_sequences": ["OTHER"]}) as a:
        rendered = a.provider().render(a.build_request("hi"))
        await run(a, False)
    assert rendered["stop_sequences"] == ["END"]
    wire = json.dumps(rendered, ensure_ascii=False, separators=(",", ":")).encode()
    assert wire == server.requests[0].body
