"""LiteLLM's Azure OpenAI routes (``azure/``, ``azure_text/``) and the text-completion API
(``text-completion-openai/``) run on the plugin's own SDK clients, as every other route: the
Azure URL shape and ``api-key`` header reach the fake server, a redirect is refused before
anything reaches its target, and a reply past ``max_response_bytes`` stops at the limit."""

from __future__ import annotations

from typing import Any

import pytest
from azure_calls import MODELS, STREAMING, VERSION, failure_of, text_of
from fake_chat_completions import FakeChatCompletions

from oma_core.testing.fake_server import RawBody, Redirect, gzip_bomb
from oma_core.toolkit import ProviderSettings

#: Each route's ``base_url`` (in LiteLLM's meaning) for a server.
BASE_URLS = {
    "azure": lambda s: s.url,
    "azure_text": lambda s: s.url,
    "text-completion-openai": lambda s: s.base_url,
}
EACH_ROUTE = pytest.mark.parametrize("route", list(MODELS))


def _provider(server: FakeChatCompletions, route: str, **options: Any) -> Any:
    from oma_litellm.provider import LiteLLMProvider

    base = BASE_URLS[route](server)
    settings = ProviderSettings(
        base_url=base, api_key="test-key", options={"api_version": VERSION, **options}
    )
    return LiteLLMProvider(settings)


@STREAMING
async def test_the_azure_route_calls_the_deployment_url_with_the_api_key_header(
    server: FakeChatCompletions, streaming: bool
) -> None:
    server.reply_text("hello from Azure")
    assert await text_of(_provider(server, "azure"), "azure", streaming) == "hello from Azure"
    [sent] = server.requests
    assert sent.path == "/openai/deployments/gpt-fake/chat/completions"
    assert f"api-version={VERSION}" in sent.query
    assert sent.headers["api-key"] == "test-key" and "authorization" not in sent.headers


@pytest.mark.parametrize("route", ["azure_text", "text-completion-openai"])
@STREAMING
async def test_a_text_completion_route_answers_through_the_plugin(
    server: FakeChatCompletions, route: str, streaming: bool
) -> None:
    server.reply_text("a completed text")
    assert await text_of(_provider(server, route), route, streaming) == "a completed text"
    [sent] = server.requests
    assert sent.path.endswith("/completions") and not sent.path.endswith("chat/completions")


@EACH_ROUTE
@STREAMING
async def test_a_redirect_is_refused_and_the_other_host_gets_nothing(
    server: FakeChatCompletions, route: str, streaming: bool
) -> None:
    with FakeChatCompletions() as elsewhere:
        port = elsewhere.port
        server.enqueue(Redirect(f"{elsewhere.url}/openai/x?token=redirect-secret"))
        error = await failure_of(_provider(server, route), route, streaming)
        assert elsewhere.total_connections == 0 and elsewhere.requests == []
    assert (error.status_code, error.retryable) == (307, False)
    assert f"HTTP 307) to 127.0.0.1:{port}" in error.message
    assert "redirect-secret" not in error.message
    assert len(server.requests) == 1


@EACH_ROUTE
@STREAMING
async def test_a_reply_past_max_response_bytes_stops_at_the_limit(
    server: FakeChatCompletions, route: str, streaming: bool
) -> None:
    limit = 64 * 1024
    kind = "text/event-stream" if streaming else "application/json"
    prefix = b'data: {"x": "' if streaming else b'{"x": "'
    headers = {"content-type": kind, "content-encoding": "gzip"}
    server.enqueue(RawBody(gzip_bomb(64 * 1024 * 1024, prefix=prefix), headers=headers))
    provider = _provider(server, route, max_response_bytes=limit, max_event_bytes=2 * limit)
    error = await failure_of(provider, route, streaming)
    assert f"exceeds the limit of {limit} bytes" in error.message
    assert "max_response_bytes" in error.message and error.retryable is False
    assert len(server.requests) == 1


async def test_without_settings_the_azure_route_reads_litellm_s_variables(
    server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oma_litellm.provider import LiteLLMProvider

    monkeypatch.setenv("AZURE_API_KEY", "test-key")
    monkeypatch.setenv("AZURE_API_BASE", server.url)
    monkeypatch.setenv("AZURE_API_VERSION", "2024-06-01")
    server.enqueue(Redirect(f"{server.url}/elsewhere"))
    error = await failure_of(LiteLLMProvider(ProviderSettings()), "azure", False)
    assert error.status_code == 307  # refused: the plugin's guarded client, not LiteLLM's
    text = await text_of(LiteLLMProvider(ProviderSettings()), "azure", False)
    assert text == server.default_reply.text
    [_, sent] = server.requests
    assert sent.headers["api-key"] == "test-key" and "api-version=2024-06-01" in sent.query
