"""Failures: the kit's ``FaultSuite``, and what is Bedrock's own: each documented exception's
status and retryability, broken frames and checksums, malformed replies, cancellation. (What
errors hold: ``test_bedrock_secrets.py``.)"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from bedrock_suite import BedrockSuite
from fake_bedrock import CorruptFrame, FakeBedrock, Malformed, StreamGarbage

from oma_core import Agent, AgentConfig, ProviderError, load_messages
from oma_core.testing import (
    Fault,
    FaultSuite,
    HTTPError,
    TruncatedStream,
)
from oma_core.toolkit import ProviderRequest, ProviderSettings


def request(*blocks: dict[str, Any]) -> ProviderRequest:
    content = [{"type": "text", "text": "hello"}, *blocks]
    return ProviderRequest(
        model=None, messages=load_messages([{"role": "user", "content": content}])
    )


async def failure(
    server: FakeBedrock,
    streaming: bool,
    req: ProviderRequest | None = None,
) -> ProviderError:
    from oma_bedrock import create_provider

    built = create_provider(ProviderSettings(base_url=server.url))
    try:
        with pytest.raises(ProviderError) as caught:
            if streaming:
                async for _ in built.stream(req or request()):
                    pass
            else:
                await built.complete(req or request())
    finally:
        await built.aclose()
    return caught.value


class TestBedrockFaults(BedrockSuite, FaultSuite):
    stream_errors = (
        ("throttlingException", 429, True),
        ("modelStreamErrorException", 424, True),
        ("internalServerException", 500, True),
        ("serviceUnavailableException", 503, True),
        ("validationException", 400, False),
    )
    unfinished_stream = TruncatedStream(after_events=-2)  # no messageStop
    headers_option = None  # the plugin takes no headers option


EXCEPTIONS = [
    ("ValidationException", 400, False),
    ("ServiceQuotaExceededException", 400, False),
    ("AccessDeniedException", 403, False),
    ("ResourceNotFoundException", 404, False),
    ("ModelTimeoutException", 408, True),
    ("ModelErrorException", 424, False),
    ("ThrottlingException", 429, True),
    ("ModelNotReadyException", 429, True),
    ("InternalServerException", 500, True),
    ("ServiceUnavailableException", 503, True),
]


@pytest.mark.parametrize(("name", "status", "retryable"), EXCEPTIONS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_each_documented_exception_keeps_its_status_and_retryability(
    server: FakeBedrock, name: str, status: int, retryable: bool, streaming: bool
) -> None:
    server.enqueue(HTTPError(status, message="scripted", error_type=name))
    error = await failure(server, streaming)
    assert (error.status_code, error.retryable) == (status, retryable)
    assert name in str(error) and error.provider == "Amazon Bedrock"
    assert len(server.requests) == 1  # nothing retried behind the core's back


FAULTS: dict[str, tuple[Fault, bool]] = {
    "bad-message-crc": (CorruptFrame(index=1), True),
    "bad-first-frame-crc": (CorruptFrame(index=0), True),
    "garbage-frame": (StreamGarbage(after=1), True),
    "short-prelude": (StreamGarbage(after=2, garbage=b"\x00\x00"), True),
    "json-not-json": (Malformed(b"this is not JSON"), False),
    "json-empty": (Malformed(b""), False),
    "json-wrong-shape": (Malformed(b'{"output": {"message": {"content": "text"}}}'), False),
    "json-no-stop-reason": (Malformed(b'{"output": {"message": {"content": []}}}'), False),
    "json-array": (Malformed(b"[1, 2]"), False),
}


@pytest.mark.parametrize("name", sorted(FAULTS))
async def test_a_broken_reply_is_a_retryable_error_without_status(
    server: FakeBedrock, name: str
) -> None:
    fault, streaming = FAULTS[name]
    server.reply_text("a reply long enough to span several frames")
    server.enqueue(fault)
    error = await failure(server, streaming)
    assert (error.status_code, error.retryable) == (None, True), error
    assert await server.async_wait_idle(timeout=2.0)


async def test_a_bad_checksum_is_named(server: FakeBedrock) -> None:
    server.enqueue(CorruptFrame(index=1))
    error = await failure(server, True)
    assert "ChecksumMismatch" in str(error)


@pytest.mark.parametrize("stop", ["malformed_model_output", "malformed_tool_use"])
@pytest.mark.parametrize("streaming", [False, True])
async def test_an_unusable_turn_is_a_retryable_error(
    server: FakeBedrock, stop: str, streaming: bool
) -> None:
    server.reply({"text": "garbled"}, stop_reason=stop)
    error = await failure(server, streaming)
    assert error.retryable is True and stop in str(error)


async def test_cancelling_an_in_flight_call_closes_its_connection(server: FakeBedrock) -> None:
    from oma_bedrock import create_provider

    server.response_delay = 5.0
    built = create_provider(ProviderSettings(base_url=server.url))
    try:
        task = asyncio.ensure_future(built.complete(request()))
        assert await server.async_wait_until(lambda: server.in_flight == 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await server.async_wait_idle(timeout=2.0)
    finally:
        await built.aclose()


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_core_sends_a_request_again_after_a_broken_reply(
    server: FakeBedrock, streaming: bool
) -> None:
    server.enqueue(CorruptFrame(index=0) if streaming else Malformed(b"not JSON"))
    server.reply_text("whole this time")
    server.reply_text("whole this time")
    config = AgentConfig(
        name="b", provider="bedrock", base_url=server.url, max_retries=1, retry_delay=0.001
    )
    async with Agent(config) as bedrock:
        if streaming:
            async with bedrock.stream("hi") as events:
                result = [e async for e in events][-1].data
        else:
            result = await bedrock.run("hi")
    assert result.output == "whole this time", result.status.error
    assert len(server.requests) == 2
