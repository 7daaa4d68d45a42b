"""Failures map to ProviderError with the right status, retryability and retry-after."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

import pytest
from fake_openai import FakeChatCompletions, Reply
from oma_openai import make_provider, preset
from oma_openai.provider import OpenAIChatProvider
from openai_builders import PNG_B64, image_b64, provider_for, request, text, user

from oma_core import PluginError, ProviderError
from oma_core.testing.fake_server import (
    DropConnection,
    ErrorMidStream,
    HTTPError,
    Redirect,
    SlowStream,
    TruncatedStream,
)
from oma_core.toolkit import ProviderSettings, ResponseComplete, TextDelta


async def stream_all(provider: OpenAIChatProvider, req: Any) -> list[Any]:
    return [event async for event in provider.stream(req)]


async def test_429_is_retryable_with_retry_after(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(HTTPError(429, "Rate limit reached", retry_after=3))
    with pytest.raises(ProviderError) as info:
        await openai_provider.complete(request("hi"))
    error = info.value
    assert (error.status_code, error.retryable, error.retry_after) == (429, True, 3.0)
    assert error.provider == "OpenAI Chat Completions"
    assert "Rate limit reached" in str(error)
    assert len(server.requests) == 1  # the SDK's own retries are off


async def test_retry_after_ms_wins(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(HTTPError(429, retry_after=30, retry_after_ms=250))
    with pytest.raises(ProviderError) as info:
        await openai_provider.complete(request("hi"))
    assert info.value.retry_after == 0.25


async def test_500_is_retryable_on_the_stream_path_too(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(HTTPError(500, "The server had an error"))
    with pytest.raises(ProviderError) as info:
        await stream_all(openai_provider, request("hi"))
    assert (info.value.status_code, info.value.retryable) == (500, True)
    assert len(server.requests) == 1


async def test_400_is_not_retryable(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(HTTPError(400, "bad request"))
    with pytest.raises(ProviderError) as info:
        await openai_provider.complete(request("hi"))
    assert (info.value.status_code, info.value.retryable) == (400, False)


async def test_wrong_key_is_401_and_the_key_is_not_in_the_message(
    server: FakeChatCompletions,
) -> None:
    secret = "sk-very-secret-key-1234567890"
    provider = make_provider(
        preset("openai"), ProviderSettings(base_url=server.base_url, api_key=secret)
    )
    with pytest.raises(ProviderError) as info:
        await provider.complete(request("hi"))
    await provider.aclose()
    assert server.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert info.value.status_code == 401
    assert secret not in str(info.value)


async def test_echoed_key_and_base64_are_blanked_out(server: FakeChatCompletions) -> None:
    secret = "sk-echoed-secret-abcdef"
    provider = make_provider(
        preset("openai"), ProviderSettings(base_url=server.base_url, api_key=secret)
    )
    server.enqueue(HTTPError(400, f"bad key {secret} and image {PNG_B64}"))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request([user(text("x"), image_b64())]))
    await provider.aclose()
    assert secret not in str(info.value)
    assert PNG_B64[:64] not in str(info.value)


async def test_connection_dropped_mid_body_is_retryable_without_status(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(DropConnection("mid_body"))
    with pytest.raises(ProviderError) as info:
        await openai_provider.complete(request("hi"))
    assert (info.value.status_code, info.value.retryable) == (None, True)


async def test_connection_dropped_before_response_is_retryable(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(DropConnection("before_response"))
    with pytest.raises(ProviderError) as info:
        await stream_all(openai_provider, request("hi"))
    assert info.value.retryable is True


async def test_nothing_listening_is_a_retryable_connection_error(transport: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = make_provider(
        preset("openai"),
        ProviderSettings(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="k", options={"transport": transport}
        ),
    )
    with pytest.raises(ProviderError) as info:
        await provider.complete(request("hi"))
    await provider.aclose()
    assert (info.value.status_code, info.value.retryable) == (None, True)


async def test_timeout_is_retryable(server: FakeChatCompletions, transport: str) -> None:
    provider = provider_for(server, timeout=0.2, transport=transport)
    server.enqueue(SlowStream(event_delay=0.0, delay=1.0))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request("hi"))
    await provider.aclose()
    assert info.value.retryable is True
    assert "timed out" in str(info.value)


async def test_error_mid_stream_keeps_the_deltas_before_it(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.reply(Reply(text="a b c d e f"))
    server.enqueue(ErrorMidStream(after_events=3, error_type="server_error"))
    seen: list[Any] = []
    with pytest.raises(ProviderError) as info:
        async for event in openai_provider.stream(request("hi")):
            seen.append(event)
    assert [e.text for e in seen] == ["a ", "b "]
    assert info.value.retryable is True
    assert info.value.status_code is None
    assert "scripted error mid-stream" in str(info.value)


async def test_invalid_request_error_mid_stream_is_not_retryable(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(ErrorMidStream(after_events=1, error_type="invalid_request_error"))
    with pytest.raises(ProviderError) as info:
        await stream_all(openai_provider, request("hi"))
    assert info.value.retryable is False


async def test_stream_cut_before_its_finish_reason_is_retryable(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.reply(Reply(text="a b c d"))
    server.enqueue(TruncatedStream(after_events=3))  # body ends cleanly, no [DONE]
    with pytest.raises(ProviderError) as info:
        await stream_all(openai_provider, request("hi"))
    assert info.value.retryable is True
    assert "ended before" in str(info.value)


async def test_stream_aborted_mid_body_is_retryable(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.enqueue(TruncatedStream(after_events=2, abort=True))
    with pytest.raises(ProviderError) as info:
        await stream_all(openai_provider, request("hi"))
    assert (info.value.status_code, info.value.retryable) == (None, True)


async def test_stream_missing_only_its_done_marker_is_complete(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    """Everything arrived (finish reason and usage); only ``data: [DONE]`` is missing."""
    server.reply(Reply(text="all here"))
    server.enqueue(TruncatedStream())
    events = await stream_all(openai_provider, request("hi"))
    assert isinstance(events[-1], ResponseComplete)
    assert events[-1].response.usage.output_tokens == 7


async def test_slow_stream_still_arrives_in_order(
    openai_provider: OpenAIChatProvider, server: FakeChatCompletions
) -> None:
    server.reply(Reply(text="s l o w"))
    server.enqueue(SlowStream(event_delay=0.02))
    events = await stream_all(openai_provider, request("hi"))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "s l o w"


async def test_missing_key_fails_the_call_without_a_request(
    server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MINIMAX_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-go-to-minimax")
    provider = make_provider(preset("minimax"), ProviderSettings(base_url=server.base_url))
    with pytest.raises(ProviderError) as info:
        await provider.complete(request("hi"))
    assert "MINIMAX_API_KEY" in str(info.value)
    assert info.value.retryable is False
    assert server.requests == []


async def test_preset_key_comes_from_its_own_variable(
    compatible_server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINIMAX_API_KEY", "test-key")
    provider = make_provider(
        preset("minimax"), ProviderSettings(base_url=compatible_server.base_url)
    )
    await provider.complete(request("hi"))
    await provider.aclose()
    assert compatible_server.requests[0].headers["authorization"] == "Bearer test-key"


async def test_keyless_local_preset_sends_a_placeholder(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeChatCompletions(mode="compatible", api_key="ollama") as srv:
        provider = make_provider(preset("ollama"), ProviderSettings(base_url=srv.base_url))
        await provider.complete(request("hi"))
        await provider.aclose()
        assert srv.requests[0].headers["authorization"] == "Bearer ollama"  # type: ignore[attr-defined]


def test_openai_compatible_needs_a_base_url() -> None:
    with pytest.raises(PluginError) as info:
        make_provider(preset("openai-compatible"), ProviderSettings(api_key="k"))
    assert "base URL" in str(info.value)


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("path", ["complete", "stream"])
async def test_a_redirect_is_refused_and_the_other_host_gets_nothing(
    server: FakeChatCompletions, transport: str, path: str
) -> None:
    with FakeChatCompletions() as elsewhere:
        location = f"{elsewhere.base_url}/chat/completions?token=redirect-secret"
        server.enqueue(Redirect(location))
        provider = provider_for(
            server, transport=transport, headers={"Helicone-Auth": "Bearer helicone-secret"}
        )
        try:
            with pytest.raises(ProviderError) as info:
                if path == "complete":
                    await provider.complete(request("hi"))
                else:
                    await stream_all(provider, request("hi"))
        finally:
            await provider.aclose()
        assert elsewhere.total_connections == 0 and elsewhere.requests == []
    error = info.value
    assert (error.status_code, error.retryable) == (307, False)
    assert f"HTTP 307) to 127.0.0.1:{urlsplit(location).port}" in str(error)
    assert "redirect-secret" not in str(error)
    assert len(server.requests) == 1
    assert server.requests[0].headers["helicone-auth"] == "Bearer helicone-secret"
