"""Faults on the wire become ProviderErrors with the right status and retryability, and the
core's retry ladder sends exactly the expected number of requests."""

from __future__ import annotations

from typing import Any

import pytest
from fake_anthropic import FakeAnthropic

from oma_core import Agent, AgentConfig, ProviderError, load_messages
from oma_core.testing import (
    DropConnection,
    ErrorMidStream,
    HTTPError,
    SlowStream,
    TruncatedStream,
)
from oma_core.testing.fake_server import Redirect
from oma_core.toolkit import ProviderRequest, ProviderSettings, TextDelta

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAarVyFEAAAAASUVORK5CYII="
)
REQUEST = ProviderRequest(
    model="claude-test",
    messages=load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
)


async def failure(
    provider: Any, streaming: bool, request: ProviderRequest = REQUEST
) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        if streaming:
            async for _ in provider.stream(request):
                pass
        else:
            await provider.complete(request)
    return caught.value


@pytest.mark.parametrize("streaming", [False, True])
async def test_429_is_retryable_with_retry_after(
    server: FakeAnthropic, provider: Any, streaming: bool
) -> None:
    server.enqueue(HTTPError(429, "slow down", retry_after=7))
    error = await failure(provider, streaming)
    assert (error.status_code, error.retryable, error.retry_after) == (429, True, 7.0)
    assert "rate_limit_error" in str(error) and "slow down" in str(error)
    assert error.provider == "Anthropic Messages"


@pytest.mark.parametrize("streaming", [False, True])
async def test_400_is_not_retryable(server: FakeAnthropic, provider: Any, streaming: bool) -> None:
    server.enqueue(HTTPError(400, "bad"))
    error = await failure(provider, streaming)
    assert (error.status_code, error.retryable) == (400, False)


@pytest.mark.parametrize("status", [500, 529])
async def test_server_errors_are_retryable(
    server: FakeAnthropic, provider: Any, status: int
) -> None:
    server.enqueue(HTTPError(status))
    error = await failure(provider, False)
    assert (error.status_code, error.retryable) == (status, True)


async def test_sdk_retries_are_off(server: FakeAnthropic, provider: Any) -> None:
    server.enqueue(HTTPError(529), HTTPError(529))
    await failure(provider, False)
    assert len(server.requests) == 1


async def test_overloaded_error_mid_stream_is_529_and_retryable(
    server: FakeAnthropic, provider: Any
) -> None:
    server.reply_text("partial answer that will be cut")
    server.enqueue(
        ErrorMidStream(after_events=4, error_type="overloaded_error", message="Overloaded")
    )
    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        async for event in provider.stream(REQUEST):
            if isinstance(event, TextDelta):
                seen.append(event.text)
    assert seen, "text before the error still arrives"
    error = caught.value
    assert (error.status_code, error.retryable) == (529, True)
    assert "overloaded_error" in str(error)


async def test_api_error_mid_stream_is_500(server: FakeAnthropic, provider: Any) -> None:
    server.enqueue(ErrorMidStream(after_events=1, error_type="api_error"))
    error = await failure(provider, True)
    assert (error.status_code, error.retryable) == (500, True)


async def test_stream_ending_without_message_stop_is_retryable(
    server: FakeAnthropic, provider: Any
) -> None:
    server.enqueue(TruncatedStream())
    error = await failure(provider, True)
    assert (error.status_code, error.retryable) == (None, True)
    assert "message_stop" in str(error)


async def test_stream_cut_mid_body_is_retryable(server: FakeAnthropic, provider: Any) -> None:
    server.enqueue(TruncatedStream(after_events=3, abort=True))
    error = await failure(provider, True)
    assert (error.status_code, error.retryable) == (None, True)


@pytest.mark.parametrize("stage", ["before_response", "after_headers", "mid_body"])
@pytest.mark.parametrize("streaming", [False, True])
async def test_dropped_connection_is_retryable(
    server: FakeAnthropic, provider: Any, stage: Any, streaming: bool
) -> None:
    server.enqueue(DropConnection(stage))
    error = await failure(provider, streaming)
    assert (error.status_code, error.retryable) == (None, True)


async def test_connection_refused_is_retryable(transport: str) -> None:
    from oma_anthropic import create_provider

    with FakeAnthropic() as closed:
        url = closed.url
    options = {"transport": transport}
    provider = create_provider(ProviderSettings(base_url=url, api_key="k", options=options))
    try:
        error = await failure(provider, False)
    finally:
        await provider.aclose()
    assert (error.status_code, error.retryable) == (None, True)


async def test_slow_stream_still_completes(server: FakeAnthropic, provider: Any) -> None:
    server.reply_text("slowly but surely")
    server.enqueue(SlowStream(event_delay=0.01))
    events = [e async for e in provider.stream(REQUEST)]
    assert events[-1].response.message.content[0].text == "slowly but surely"


async def test_error_messages_hold_no_key_and_no_base64(server: FakeAnthropic) -> None:
    from oma_anthropic import create_provider

    key = "sk-ant-secret-key-123456"
    echo = f"bad image {PNG_B64 * 3} for key {key}"
    server.enqueue(HTTPError(400, echo))
    provider = create_provider(ProviderSettings(base_url=server.url, api_key=key))
    server.api_key = key
    try:
        error = await failure(provider, False)
    finally:
        await provider.aclose()
    assert key not in str(error)
    assert PNG_B64 not in str(error)


async def run_agent(server: FakeAnthropic, streaming: bool, **config: Any) -> Any:
    agent_config = AgentConfig(
        name="t", provider="anthropic", base_url=server.url, api_key="test-key", **config
    )
    async with Agent(agent_config) as agent:
        if streaming:
            async with agent.stream("hi") as events:
                return [e async for e in events][-1].data
        return await agent.run("hi")


@pytest.mark.parametrize("streaming", [False, True])
async def test_429_then_success_is_two_requests(server: FakeAnthropic, streaming: bool) -> None:
    server.enqueue(HTTPError(429, retry_after_ms=5))
    result = await run_agent(server, streaming, max_retries=2, retry_delay=0.01)
    assert result.success
    assert len(server.requests) == 2


async def test_overloaded_mid_stream_before_any_text_is_retried(server: FakeAnthropic) -> None:
    server.enqueue(ErrorMidStream(after_events=1))
    result = await run_agent(server, True, max_retries=2, retry_delay=0.01)
    assert result.success
    assert len(server.requests) == 2


async def test_persistent_529_gives_up_after_max_retries(server: FakeAnthropic) -> None:
    server.enqueue(*[HTTPError(529)] * 5)
    result = await run_agent(server, False, max_retries=2, retry_delay=0.01)
    assert not result.success
    assert isinstance(result.status.error, ProviderError)
    assert result.status.error.status_code == 529
    assert len(server.requests) == 3


async def test_400_is_never_retried(server: FakeAnthropic) -> None:
    server.enqueue(HTTPError(400))
    result = await run_agent(server, False, max_retries=2, retry_delay=0.01)
    assert not result.success
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_redirect_is_refused_and_the_other_host_gets_nothing(
    server: FakeAnthropic, transport: str, streaming: bool
) -> None:
    from oma_anthropic import create_provider

    with FakeAnthropic(api_key="test-key") as elsewhere:
        port = elsewhere.port
        server.enqueue(Redirect(f"{elsewhere.url}/v1/messages?token=redirect-secret"))
        options = {"transport": transport, "headers": {"Helicone-Auth": "Bearer helicone-secret"}}
        provider = create_provider(
            ProviderSettings(base_url=server.url, api_key="test-key", options=options)
        )
        try:
            error = await failure(provider, streaming)
        finally:
            await provider.aclose()
        assert elsewhere.total_connections == 0 and elsewhere.requests == []
    assert (error.status_code, error.retryable) == (307, False)
    assert f"HTTP 307) to 127.0.0.1:{port}" in str(error)
    assert "redirect-secret" not in str(error)
    assert server.requests[0].headers["helicone-auth"] == "Bearer helicone-secret"
