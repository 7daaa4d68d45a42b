"""``provider_options={"transport": "aiohttp"}`` puts the SDK's own aiohttp client under the
provider, ``"direct"`` the plugin's own (no SDK); the default stays the SDK's httpx client.
(The mapping, streaming, fault, leak and conformance tests run on each: see the ``transport``
fixture.)"""

from __future__ import annotations

import asyncio

import openai
import pytest
from fake_openai import FakeChatCompletions, Reply
from openai_builders import provider_for, request

from oma_core import Agent, AgentConfig
from oma_core.errors import PluginError


async def test_aiohttp_transport_uses_the_sdks_aiohttp_client(server: FakeChatCompletions) -> None:
    provider = provider_for(server, transport="aiohttp")
    try:
        response = await provider.complete(request("hi"))
        sdk_client = provider._sdk._client  # type: ignore[union-attr]  # the SDK's http client
        assert isinstance(sdk_client, openai.DefaultAioHttpClient)
    finally:
        await provider.aclose()
    assert response.message.content[0].text == "Hello from the fake service."  # type: ignore[union-attr]
    assert await server.async_wait_idle(timeout=30)


async def test_default_transport_is_the_sdks_httpx_client(server: FakeChatCompletions) -> None:
    provider = provider_for(server)
    try:
        await provider.complete(request("hi"))
        assert not isinstance(provider._sdk._client, openai.DefaultAioHttpClient)  # type: ignore[union-attr]
    finally:
        await provider.aclose()


def test_unknown_transport_is_refused_when_the_provider_is_built(
    server: FakeChatCompletions,
) -> None:
    with pytest.raises(PluginError) as info:
        provider_for(server, transport="carrier-pigeon")
    assert 'must be "httpx", "aiohttp" or "direct"' in str(info.value)


async def test_transport_is_not_sent_as_a_body_field(server: FakeChatCompletions) -> None:
    provider = provider_for(server, transport="aiohttp")
    await provider.complete(request("hi"))
    await provider.aclose()
    assert "transport" not in server.requests[0].json


@pytest.mark.parametrize("aio", ["aiohttp", "direct"])
async def test_the_timeout_option_bounds_an_aiohttp_call(
    server: FakeChatCompletions, aio: str
) -> None:
    from oma_core import ProviderError
    from oma_core.testing import Delay

    server.enqueue(Delay(60))  # ends when the client hangs up; outlasts 0.2 s on any machine
    provider = provider_for(server, transport=aio, timeout=0.2)
    with pytest.raises(ProviderError) as info:
        await provider.complete(request("hi"))
    await provider.aclose()
    assert "timed out" in str(info.value) and info.value.retryable


@pytest.mark.parametrize("aio", ["aiohttp", "direct"])
async def test_a_cancelled_aiohttp_stream_closes_its_connection(aio: str) -> None:
    with FakeChatCompletions(chunk_size=1) as server:
        server.reply(Reply(text="x" * 200))  # type: ignore[attr-defined]
        from oma_core.testing import SlowStream

        server.enqueue(SlowStream(event_delay=0.05))  # type: ignore[attr-defined]
        provider = provider_for(server, transport=aio)  # type: ignore[arg-type]

        async def read() -> None:
            async for _ in provider.stream(request("hi")):
                pass

        task = asyncio.ensure_future(read())
        assert await server.async_wait_until(lambda: server.in_flight == 1, timeout=30)  # type: ignore[attr-defined]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await provider.aclose()
        assert await server.async_wait_idle(timeout=30)  # type: ignore[attr-defined]


@pytest.mark.parametrize("aio", ["aiohttp", "direct"])
async def test_concurrent_aiohttp_runs_share_one_provider(
    server: FakeChatCompletions, aio: str
) -> None:
    config = AgentConfig(
        name="t",
        provider="openai",
        model="gpt-test",
        base_url=server.base_url,
        api_key="test-key",
        provider_options={"transport": aio},
    )
    async with Agent(config) as agent:
        results = await asyncio.gather(*(agent.run(f"q{i}") for i in range(50)))
    assert all(r.success for r in results)
    assert len(server.requests) == 50
    assert await server.async_wait_idle(timeout=30)


@pytest.mark.parametrize("aio", ["httpx", "aiohttp"])
async def test_default_timeouts_bound_the_wait_for_a_reply(
    server: FakeChatCompletions, aio: str
) -> None:
    provider = provider_for(server, transport=aio)
    try:
        await provider.complete(request("hi"))
        timeout = provider._sdk.timeout  # type: ignore[union-attr]
    finally:
        await provider.aclose()
    assert (timeout.connect, timeout.read) == (5.0, 120.0)  # not the SDK's 600 s
