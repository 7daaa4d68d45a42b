"""Failures through the bridge that are its own; the shared ones are the kit's suites,
``test_litellm_faults.py`` and ``test_litellm_secrets.py``: the statuses LiteLLM maps to
classes of its own, its malformed replies and streams, its time-out, a key it read from the
environment, and redirects on routes beside ``openai/`` and ``anthropic/``."""

from __future__ import annotations

import os
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions, Malformed

from oma_core import ProviderError, load_messages
from oma_core.testing import (
    Delay,
    HTTPError,
    assert_holds_no_secret,
)
from oma_core.testing.fake_server import Redirect
from oma_core.toolkit import ProviderRequest, ProviderSettings

MODEL = "openai/gpt-fake"


def provider(server: FakeChatCompletions) -> Any:
    from oma_litellm import create_provider

    return create_provider(ProviderSettings(base_url=server.base_url, api_key="test-key"))


def request(model: str = MODEL) -> ProviderRequest:
    content = [{"type": "text", "text": "hello"}]
    return ProviderRequest(model, load_messages([{"role": "user", "content": content}]))


async def failure(built: Any, req: ProviderRequest, streaming: bool) -> ProviderError:
    try:
        with pytest.raises(ProviderError) as caught:
            if streaming:
                async for _ in built.stream(req):
                    pass
            else:
                await built.complete(req)
    finally:
        await built.aclose()
    return caught.value


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(401, False), (404, False), (408, True), (409, True)],  # 400, 429, 5xx: the FaultSuite's
)
async def test_statuses_keep_their_code_and_retryability(
    server: FakeChatCompletions, status: int, retryable: bool
) -> None:
    server.enqueue(HTTPError(status, message="scripted"))
    error = await failure(provider(server), request(), False)
    assert (error.status_code, error.retryable) == (status, retryable)
    assert error.provider == "LiteLLM bridge"
    assert len(server.requests) == 1  # LiteLLM's own retries are off


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(Malformed(b"this is not JSON"), id="not-json"),
        pytest.param(Malformed(b""), id="empty"),
        pytest.param(Malformed(b'{"choices": "nope"}'), id="wrong-shape"),
        pytest.param(Malformed(b'{"id": "x", "choices": []}'), id="no-choice"),
    ],
)
async def test_a_malformed_reply_is_a_retryable_error(
    server: FakeChatCompletions, fault: Malformed
) -> None:
    server.enqueue(fault)
    error = await failure(provider(server), request(), False)
    assert error.retryable is True, error


@pytest.mark.parametrize(
    "events",
    [
        pytest.param(("not json at all",), id="not-json"),
        pytest.param((), id="empty"),
    ],
)
async def test_a_malformed_stream_is_a_retryable_error(
    server: FakeChatCompletions, events: tuple[str, ...]
) -> None:
    server.enqueue(Malformed(events=events))
    error = await failure(provider(server), request(), True)
    assert error.retryable is True, error


async def test_a_timeout_is_retryable_and_has_no_status(server: FakeChatCompletions) -> None:
    from oma_litellm import create_provider

    server.enqueue(Delay(3.0))
    built = create_provider(
        ProviderSettings(base_url=server.base_url, api_key="test-key", options={"timeout": 0.2})
    )
    error = await failure(built, request(), False)
    assert (error.status_code, error.retryable) == (None, True)
    assert "timed out" in str(error)


async def test_a_key_litellm_read_from_the_environment_never_shows(
    server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oma_litellm import create_provider

    key = "env-" + os.urandom(16).hex()  # not key-shaped: only the plugin's list removes it
    server.api_key = key
    monkeypatch.setenv("OPENAI_API_KEY", key)
    server.enqueue(HTTPError(401, message=f"the key {key} is not valid here"))
    built = create_provider(ProviderSettings(base_url=server.base_url))
    error = await failure(built, request(), False)
    assert error.status_code == 401
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"  # LiteLLM read it
    assert "is not valid here" in str(error)
    assert_holds_no_secret(error, key)


async def test_the_core_sends_a_request_again_after_a_malformed_reply(
    server: FakeChatCompletions,
) -> None:
    from oma_core import Agent, AgentConfig

    server.enqueue(Malformed(b"this is not JSON"))
    server.reply_text("whole this time")
    config = AgentConfig(
        name="l",
        provider="litellm",
        model=MODEL,
        base_url=server.base_url,
        api_key="test-key",
        max_retries=1,
        retry_delay=0.001,
    )
    async with Agent(config) as bridge:
        result = await bridge.run("hi")
    assert result.output == "whole this time", result.status.error
    assert len(server.requests) == 2


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("streaming", [False, True])
# deepinfra/: an OpenAI-compatible route LiteLLM serves through the OpenAI SDK; groq/: one it
# serves with its own handler (openai/ and anthropic/: the FaultSuite's redirect check)
@pytest.mark.parametrize("route", ["deepinfra", "groq"])
async def test_a_redirect_is_refused_and_the_other_host_gets_nothing(
    server: FakeChatCompletions, streaming: bool, route: str
) -> None:
    from oma_litellm import create_provider

    with FakeChatCompletions() as elsewhere:
        port = elsewhere.port
        server.enqueue(Redirect(f"{elsewhere.url}/v1/x?token=redirect-secret"))
        options = {"headers": {"Helicone-Auth": "Bearer helicone-secret"}}
        built = create_provider(
            ProviderSettings(base_url=server.base_url, api_key="test-key", options=options)
        )
        error = await failure(built, request(f"{route}/fake-model"), streaming)
        assert elsewhere.total_connections == 0 and elsewhere.requests == []
    assert (error.status_code, error.retryable) == (307, False)
    assert f"HTTP 307) to 127.0.0.1:{port}" in str(error)
    assert "redirect-secret" not in str(error)
    assert server.requests[0].headers["helicone-auth"] == "Bearer helicone-secret"
