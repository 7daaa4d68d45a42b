"""AgentConfig reaches the SDK with its own meaning: base_url (with /v1), api_key (config or
the preset's variable) and provider_options (client settings and body fields)."""

from __future__ import annotations

from typing import Any

import pytest
from fake_openai import API_KEY, FakeChatCompletions, Reply
from openai_builders import request

from oma_core import Agent, AgentConfig, ProviderError
from oma_core.testing.fake_server import Delay, ErrorMidStream, HTTPError


def agent(server: FakeChatCompletions, **config: Any) -> Agent:
    values: dict[str, Any] = {
        "name": "t",
        "provider": "openai",
        "model": "gpt-test",
        "base_url": server.base_url,
        "api_key": API_KEY,
        "max_retries": 0,
    }
    values.update(config)
    return Agent(AgentConfig(**values))


async def test_base_url_is_used_as_given_with_its_v1(server: FakeChatCompletions) -> None:
    async with agent(server) as a:
        assert (await a.run("hi")).success
    assert server.requests[0].path == "/v1/chat/completions"


async def test_base_url_without_v1_keeps_the_sdk_meaning(server: FakeChatCompletions) -> None:
    # The SDK's base_url includes /v1; the plugin does not add it, so the service root
    # answers 404, a non-retryable ProviderError.
    async with agent(server, base_url=server.url) as a:
        result = await a.run("hi")
    assert server.requests[0].path == "/chat/completions"
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert (error.status_code, error.retryable) == (404, False)


async def test_api_key_comes_from_the_config_before_the_environment(
    server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    async with agent(server) as a:
        assert (await a.run("hi")).success
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


async def test_api_key_falls_back_to_openai_api_key(
    server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    async with agent(server, api_key=None) as a:
        assert (await a.run("hi")).success
    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"


async def test_client_options_reach_the_sdk(server: FakeChatCompletions) -> None:
    options = {
        "organization": "org-oma",
        "project": "proj-oma",
        "headers": {"x-team": "vision", "x-both": "headers"},
        "default_headers": {"x-default": "yes", "x-both": "default_headers"},
        "default_query": {"api-version": "2025-01-01"},
        "timeout": 30,
    }
    async with agent(server, provider_options=options) as a:
        assert (await a.run("hi")).success
    [sent] = server.requests
    assert sent.headers["openai-organization"] == "org-oma"
    assert sent.headers["openai-project"] == "proj-oma"
    assert sent.headers["x-team"] == "vision"
    assert sent.headers["x-default"] == "yes"
    assert sent.headers["x-both"] == "default_headers"
    assert sent.query == "api-version=2025-01-01"
    assert not set(options) & set(sent.json), "client options must stay out of the body"


async def test_body_options_reach_the_body(server: FakeChatCompletions) -> None:
    options = {"seed": 7, "reasoning_effort": "low", "response_format": {"type": "text"}}
    async with agent(server, provider_options=options) as a:
        provider = a.provider()
        rendered = provider.render(a.build_request("hi"))  # type: ignore[attr-defined]
        assert (await a.run("hi")).success
    body = server.requests[0].json
    assert (body["seed"], body["reasoning_effort"], body["response_format"]) == (
        7,
        "low",
        {"type": "text"},
    )
    assert rendered == body


async def test_a_body_option_the_service_does_not_know_is_its_400(
    server: FakeChatCompletions,
) -> None:
    # an undeclared option is refused locally; extra_body is the way to send one anyway
    async with agent(server, provider_options={"extra_body": {"not_a_parameter": 1}}) as a:
        result = await a.run("hi")
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert (error.status_code, error.retryable) == (400, False)
    assert "not_a_parameter" in str(error)


async def test_options_cannot_replace_the_fields_the_plugin_owns(
    server: FakeChatCompletions,
) -> None:
    fields = {"model": "other", "messages": [], "stream": True}
    async with agent(server, provider_options={"extra_body": fields}) as a:
        assert (await a.run("hi")).success
    body = server.requests[0].json
    assert body["model"] == "gpt-test"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert "stream" not in body


async def test_timeout_option_is_the_sdk_timeout(server: FakeChatCompletions) -> None:
    server.enqueue(Delay(60))  # ends when the client hangs up; outlasts 0.2 s on any machine
    async with agent(server, provider_options={"timeout": 0.2}) as a:
        result = await a.run("hi")
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert error.retryable is True and "timed out" in str(error)
    assert len(server.requests) == 1


async def test_a_500_without_oma_retries_is_exactly_one_request(
    server: FakeChatCompletions,
) -> None:
    server.enqueue(HTTPError(500), HTTPError(500))
    async with agent(server) as a:
        result = await a.run("hi")
    assert len(server.requests) == 1
    error = result.status.error
    assert isinstance(error, ProviderError)
    assert (error.status_code, error.retryable) == (500, True)


@pytest.mark.parametrize("streaming", [False, True])
async def test_529_overloaded_is_retryable(server: FakeChatCompletions, streaming: bool) -> None:
    from openai_builders import provider_for

    server.enqueue(HTTPError(529, "Overloaded", error_type="overloaded_error", retry_after=2))
    provider = provider_for(server)
    with pytest.raises(ProviderError) as info:
        if streaming:
            async for _ in provider.stream(request("hi")):
                pass
        else:
            await provider.complete(request("hi"))
    await provider.aclose()
    assert (info.value.status_code, info.value.retryable, info.value.retry_after) == (
        529,
        True,
        2.0,
    )
    assert "Overloaded" in str(info.value)


async def test_overloaded_error_event_mid_stream_is_retryable(
    server: FakeChatCompletions,
) -> None:
    from openai_builders import provider_for

    server.reply(Reply(text="one two three four"))
    server.enqueue(ErrorMidStream(after_events=2, error_type="overloaded_error"))
    provider = provider_for(server)
    with pytest.raises(ProviderError) as info:
        async for _ in provider.stream(request("hi")):
            pass
    await provider.aclose()
    assert (info.value.status_code, info.value.retryable) == (None, True)
