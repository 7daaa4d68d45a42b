"""``provider_options={"transport": "aiohttp"}`` puts the SDK's own aiohttp client under the
provider, ``"direct"`` the plugin's own (no SDK); the default stays the SDK's httpx client.
(The wire, reply, fault, leak and conformance tests run on each: see the ``transport``
fixture.)"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from fake_anthropic import FakeAnthropic

from oma_core import Agent, AgentConfig, ProviderError, load_messages
from oma_core.errors import PluginError
from oma_core.testing import Delay, SlowStream
from oma_core.toolkit import ProviderRequest, ProviderSettings

REQUEST = ProviderRequest(
    model="claude-test",
    messages=load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
)


def build(server: FakeAnthropic, **options: Any) -> Any:
    from oma_anthropic import create_provider

    settings = ProviderSettings(base_url=server.url, api_key="test-key", options=options)
    return create_provider(settings)


def sdk_http_client(provider: Any) -> Any:
    [(_, client)] = provider._clients.values()  # the plugin's one client for this loop
    return client._client


async def test_aiohttp_transport_uses_the_sdks_aiohttp_client(server: FakeAnthropic) -> None:
    provider = build(server, transport="aiohttp")
    try:
        response = await provider.complete(REQUEST)
        assert isinstance(sdk_http_client(provider), anthropic.DefaultAioHttpClient)
    finally:
        await provider.aclose()
    assert response.message.content[0].text == "Hello from the fake Messages API."
    assert await server.async_wait_idle()


async def test_default_transport_is_the_sdks_httpx_client(server: FakeAnthropic) -> None:
    provider = build(server)
    try:
        await provider.complete(REQUEST)
        assert not isinstance(sdk_http_client(provider), anthropic.DefaultAioHttpClient)
    finally:
        await provider.aclose()


def test_unknown_transport_is_refused_when_the_provider_is_built(server: FakeAnthropic) -> None:
    with pytest.raises(PluginError) as info:
        build(server, transport="carrier-pigeon")
    assert 'must be "httpx", "aiohttp" or "direct"' in str(info.value)


@pytest.mark.parametrize("aio", ["aiohttp", "direct"])
async def test_transport_is_not_sent_as_a_body_field(server: FakeAnthropic, aio: str) -> None:
    provider = build(server, transport=aio)
    await provider.complete(REQUEST)
    await provider.aclose()
    assert "transport" not in server.requests[0].json


@pytest.mark.parametrize("aio", ["aiohttp", "direct"])
async def test_the_timeout_option_bounds_an_aiohttp_call(server: FakeAnthropic, aio: str) -> None:
    server.enqueue(Delay(2.0))
    provider = build(server, transport=aio, timeout=0.2)
    with pytest.raises(ProviderError) as info:
        await provider.complete(REQUEST)
    await provider.aclose()
    assert "timed out" in str(info.value) and info.value.retryable


@pytest.mark.parametrize("aio", ["aiohttp", "direct"])
async def test_a_cancelled_aiohttp_stream_closes_its_connection(
    server: FakeAnthropic, aio: str
) -> None:
    server.reply_text("x" * 400)
    server.enqueue(SlowStream(event_delay=0.05))
    provider = build(server, transport=aio)

    async def read() -> None:
        async for _ in provider.stream(REQUEST):
            pass

    task = asyncio.ensure_future(read())
    assert await server.async_wait_until(lambda: server.in_flight == 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await provider.aclose()
    assert await server.async_wait_idle()


@pytest.mark.parametrize("aio", ["aiohttp", "direct"])
async def test_concurrent_aiohttp_runs_share_one_provider(server: FakeAnthropic, aio: str) -> None:
    config = AgentConfig(
        name="t",
        provider="anthropic",
        base_url=server.url,
        api_key="test-key",
        provider_options={"transport": aio},
    )
    async with Agent(config) as agent:
        results = await asyncio.gather(*(agent.run(f"q{i}") for i in range(50)))
    assert all(r.success for r in results)
    assert len(server.requests) == 50
    assert await server.async_wait_idle()


class TestDirectTransport:
    async def test_it_makes_no_sdk_client(self, server: FakeAnthropic) -> None:
        provider = build(server, transport="direct")
        try:
            response = await provider.complete(REQUEST)
            assert provider._clients == {}
        finally:
            await provider.aclose()
        assert response.message.content[0].text
        assert await server.async_wait_idle()

    async def test_it_sends_the_body_render_shows_with_the_documented_headers(
        self, server: FakeAnthropic
    ) -> None:
        direct = build(server, transport="direct", headers={"x-team": "a"})
        sdk = build(server)
        try:
            await direct.complete(REQUEST)
            await sdk.complete(REQUEST)
        finally:
            await direct.aclose()
            await sdk.aclose()
        ours, theirs = server.requests
        assert ours.json == theirs.json == direct.render(REQUEST) == sdk.render(REQUEST)
        assert ours.path == theirs.path == "/v1/messages"
        assert ours.headers["x-api-key"] == "test-key"
        assert ours.headers["anthropic-version"] == theirs.headers["anthropic-version"]
        assert ours.headers["x-team"] == "a"

    async def test_a_base_url_ending_in_v1_is_not_doubled(self, server: FakeAnthropic) -> None:
        from oma_anthropic import create_provider

        settings = ProviderSettings(
            base_url=f"{server.url}/v1", api_key="test-key", options={"transport": "direct"}
        )
        provider = create_provider(settings)
        try:
            await provider.complete(REQUEST)
        finally:
            await provider.aclose()
        assert server.requests[0].path == "/v1/messages"


async def test_direct_calls_past_the_pool_queue_beyond_the_connect_timeout(
    server: FakeAnthropic,
) -> None:
    # 16 one-second calls through a pool of 2: the last wait 7 s for a connection, longer
    # than the 5 s connect timeout, which bounds the socket connect only
    server.response_delay = 1.0
    config = AgentConfig(
        name="pool",
        provider="anthropic",
        base_url=server.url,
        api_key="test-key",
        max_retries=0,
        provider_options={"transport": "direct", "max_connections": 2},
    )
    async with Agent(config) as agent:
        results = await asyncio.gather(*(agent.run(f"call {i}") for i in range(16)))
    assert [r.status.error for r in results if not r.success] == []
    assert server.max_open_connections <= 2
