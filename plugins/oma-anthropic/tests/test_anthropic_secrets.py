"""No error holds a secret: walking everything an error references (its ``__context__`` and
``__cause__``, attributes, ``args``) finds neither the API key, nor the prompt, nor the base64
image, whatever failed, even when the service echoes the whole request back. What a run hands
back (``RunResult.status.error``, the stream's error event) holds none through its traceback
either; the error the provider raises still has its traceback, whose frames are the caller's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, MalformedReply

from oma_core import Agent, AgentConfig, OpenMultiAgent, ProviderError, load_messages
from oma_core.testing import (
    DropConnection,
    EchoRequestError,
    ErrorMidStream,
    Fault,
    HTTPError,
    SlowStream,
    TruncatedStream,
    assert_holds_no_secret,
)
from oma_core.toolkit import ProviderRequest, ProviderSettings

KEY = "sk-ant-oma-test-secret-0123456789abcdef"
PROMPT = "the launch code is swordfish-7734, tell no one"
PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAIAAAUAAarVyFEAAAAASUVORK5CYII="
)
SECRETS = (KEY, PROMPT, PNG_B64)
IMAGE = {"type": "base64", "media_type": "image/png", "data": PNG_B64}
CONVERSATION = [
    {
        "role": "user",
        "content": [{"type": "text", "text": PROMPT}, {"type": "image", "source": IMAGE}],
    }
]

#: Faults that fail a call whether it streams or not.
CALL_FAULTS: dict[str, Fault] = {
    "400 echoing the request": EchoRequestError(400),
    "500 echoing the request": EchoRequestError(500),
    "429 naming the key and prompt": HTTPError(429, f"slow down {KEY} {PROMPT}", retry_after=1),
    "dropped before the response": DropConnection("before_response"),
    "dropped after the headers": DropConnection("after_headers"),
    "timeout": SlowStream(event_delay=0.0, delay=2.0),
    "malformed 200": MalformedReply("not_json"),
}
#: Faults that only a stream meets.
STREAM_FAULTS: dict[str, Fault] = {
    "error event echoing the prompt": ErrorMidStream(
        after_events=3, error_type="overloaded_error", message=f"failed on {PROMPT} with {KEY}"
    ),
    "stream cut mid-body": TruncatedStream(after_events=3, abort=True),
    "stream ended early": TruncatedStream(after_events=3),
}
CASES = [
    *[pytest.param(f, False, id=f"complete: {n}") for n, f in CALL_FAULTS.items()],
    *[pytest.param(f, True, id=f"stream: {n}") for n, f in CALL_FAULTS.items()],
    *[pytest.param(f, True, id=f"stream: {n}") for n, f in STREAM_FAULTS.items()],
]


@pytest.fixture
def secret_server() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(api_key=KEY) as srv:
        for i in range(4):
            srv.reply_text(f"a reply long enough to be cut {i}")
        yield srv  # type: ignore[misc]


def config(server: FakeAnthropic, transport: str) -> AgentConfig:
    return AgentConfig(
        name="t",
        provider="anthropic",
        model="claude-test",
        base_url=server.url,
        api_key=KEY,
        max_retries=0,
        provider_options={"timeout": 0.5, "transport": transport},
    )


async def provider_failure(server: FakeAnthropic, streaming: bool, transport: str) -> ProviderError:
    from oma_anthropic import create_provider

    options = {"timeout": 0.5, "transport": transport}
    settings = ProviderSettings(base_url=server.url, api_key=KEY, options=options)
    provider: Any = create_provider(settings)
    request = ProviderRequest(model="claude-test", messages=load_messages(CONVERSATION))
    try:
        with pytest.raises(ProviderError) as caught:
            if streaming:
                async for _ in provider.stream(request):
                    pass
            else:
                await provider.complete(request)
    finally:
        await provider.aclose()
    return caught.value


@pytest.mark.parametrize(("fault", "streaming"), CASES)
async def test_provider_error_holds_no_key_prompt_or_base64(
    secret_server: FakeAnthropic, fault: Fault, streaming: bool, transport: str
) -> None:
    secret_server.enqueue(fault)
    error = await provider_failure(secret_server, streaming, transport)
    assert error.__context__ is None and error.__cause__ is None
    assert_holds_no_secret(error, *SECRETS)


@pytest.mark.parametrize(("fault", "streaming"), CASES)
async def test_agent_run_result_error_holds_no_secret(
    secret_server: FakeAnthropic, fault: Fault, streaming: bool, transport: str
) -> None:
    secret_server.enqueue(fault)
    async with Agent(config(secret_server, transport)) as agent:
        if streaming:
            async with agent.stream(CONVERSATION) as events:
                seen = [e async for e in events]
            [error_event] = [e for e in seen if e.type == "error"]
            assert_holds_no_secret(error_event.data, *SECRETS, tracebacks=True)
            result = seen[-1].data
        else:
            result = await agent.run(CONVERSATION)
    assert not result.success
    assert_holds_no_secret(result.status.error, *SECRETS, tracebacks=True)


@pytest.mark.parametrize("fault", list(CALL_FAULTS.values()), ids=list(CALL_FAULTS))
async def test_run_agent_result_error_holds_no_secret(
    secret_server: FakeAnthropic, fault: Fault, transport: str
) -> None:
    secret_server.enqueue(fault)
    async with OpenMultiAgent() as oma:
        result = await oma.run_agent(config(secret_server, transport), CONVERSATION)
    assert not result.success
    assert_holds_no_secret(result.status.error, *SECRETS, tracebacks=True)


async def test_the_echo_did_reach_the_error_path(secret_server: FakeAnthropic) -> None:
    """The fault really sends the secrets back: the tests above are not vacuous."""
    secret_server.enqueue(EchoRequestError(400))
    error = await provider_failure(secret_server, False, "httpx")
    assert error.status_code == 400
    assert "could not process" in str(error)
