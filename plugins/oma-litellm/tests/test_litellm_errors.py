"""Failures through the bridge: statuses and retryability kept, malformed replies retryable,
and nothing an error holds carries the key, the prompt or a base64 payload."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
from fake_chat_completions import FakeChatCompletions, Malformed

from oma_core import ProviderError, load_messages
from oma_core.testing import (
    Delay,
    DropConnection,
    EchoRequestError,
    HTTPError,
    assert_holds_no_secret,
)
from oma_core.testing.fake_server import Redirect
from oma_core.toolkit import ProviderRequest, ProviderSettings

MODEL = "openai/gpt-fake"


def provider(server: FakeChatCompletions, api_key: str = "test-key") -> Any:
    from oma_litellm import create_provider

    return create_provider(ProviderSettings(base_url=server.base_url, api_key=api_key))


def request(text: str = "hello", *blocks: dict[str, Any]) -> ProviderRequest:
    content = [{"type": "text", "text": text}, *blocks]
    return ProviderRequest(
        model=MODEL, messages=load_messages([{"role": "user", "content": content}])
    )


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


@pytest.mark.parametrize("streaming", [False, True])
async def test_an_error_that_echoes_the_request_holds_no_key_prompt_or_base64(
    server: FakeChatCompletions, streaming: bool
) -> None:
    key = "sk-" + os.urandom(20).hex()
    server.api_key = key
    prompt = "my secret prompt " + os.urandom(8).hex()
    payload = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(2000)).decode()
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": payload},
    }
    server.enqueue(EchoRequestError(400))
    error = await failure(provider(server, key), request(prompt, image), streaming)
    assert error.status_code == 400
    assert error.retryable is False
    assert key.encode() in server.requests[0].body + str(server.requests[0].headers).encode()
    assert_holds_no_secret(error, key, prompt, payload[100:160])


@pytest.mark.parametrize(
    ("status", "retryable"),
    [
        (400, False),
        (401, False),
        (404, False),
        (408, True),
        (409, True),
        (429, True),
        (500, True),
        (503, True),
    ],
)
async def test_statuses_keep_their_code_and_retryability(
    server: FakeChatCompletions, status: int, retryable: bool
) -> None:
    server.enqueue(HTTPError(status, message="scripted"))
    error = await failure(provider(server), request(), False)
    assert (error.status_code, error.retryable) == (status, retryable)
    assert error.provider == "LiteLLM bridge"
    assert len(server.requests) == 1  # LiteLLM's own retries are off


async def test_a_retry_hint_reaches_the_error(server: FakeChatCompletions) -> None:
    server.enqueue(HTTPError(429, retry_after=7))
    error = await failure(provider(server), request(), False)
    assert error.retry_after == 7.0


@pytest.mark.parametrize("stage", ["before_response", "after_headers", "mid_body"])
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_dropped_connection_is_retryable_and_has_no_status(
    server: FakeChatCompletions, stage: str, streaming: bool
) -> None:
    server.enqueue(DropConnection(stage))  # type: ignore[arg-type]
    error = await failure(provider(server), request(), streaming)
    assert (error.status_code, error.retryable) == (None, True)


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
        pytest.param(
            ('{"id": "x", "choices": [{"index": 0, "delta": {"content": "hi"}}]}',),
            id="no-finish-reason",
        ),
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
# openai/ and deepinfra/: LiteLLM's OpenAI-SDK route; groq/ and anthropic/: its own handler
@pytest.mark.parametrize("route", ["openai", "deepinfra", "groq", "anthropic"])
async def test_a_redirect_is_refused_and_the_other_host_gets_nothing(
    fake_server_factory: Any, streaming: bool, route: str
) -> None:
    from fake_messages import FakeMessages
    from oma_litellm import create_provider

    cls = FakeMessages if route == "anthropic" else FakeChatCompletions
    server = fake_server_factory(cls)
    with cls() as elsewhere:
        port = elsewhere.port
        server.enqueue(Redirect(f"{elsewhere.url}/v1/x?token=redirect-secret"))
        options = {"headers": {"Helicone-Auth": "Bearer helicone-secret"}}
        base_url = server.url if route == "anthropic" else server.base_url
        built = create_provider(
            ProviderSettings(base_url=base_url, api_key="test-key", options=options)
        )
        req = request()
        req = ProviderRequest(model=f"{route}/fake-model", messages=req.messages)
        error = await failure(built, req, streaming)
        assert elsewhere.total_connections == 0 and elsewhere.requests == []
    assert (error.status_code, error.retryable) == (307, False)
    assert f"HTTP 307) to 127.0.0.1:{port}" in str(error)
    assert "redirect-secret" not in str(error)
    assert server.requests[0].headers["helicone-auth"] == "Bearer helicone-secret"
