"""Faults against the fake Gemini API: the kit's ``FaultSuite``, and what is Gemini's own (a
429's RetryInfo, a bad key, unreadable replies)."""

from __future__ import annotations

from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini
from gemini_suite import GeminiSuite
from oma_gemini import create_provider

from oma_core import Agent, AgentConfig, ProviderError, load_messages
from oma_core.testing import (
    Fault,
    FaultSuite,
    HTTPError,
    Response,
)
from oma_core.toolkit import ProviderRequest, ProviderSettings

STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])


def _request(conversation: Any = None) -> ProviderRequest:
    conversation = conversation or [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    return ProviderRequest(model="gemini-test", messages=load_messages(conversation))


async def _error(
    server: FakeGemini, streaming: bool, request: ProviderRequest | None = None, **settings: Any
) -> ProviderError:
    settings.setdefault("api_key", API_KEY)
    provider = create_provider(ProviderSettings(base_url=server.base_url, **settings))
    try:
        with pytest.raises(ProviderError) as caught:
            if streaming:
                [_ async for _ in provider.stream(request or _request())]
            else:
                await provider.complete(request or _request())
    finally:
        await provider.aclose()
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    return caught.value


class _RetryInfo429(Fault):
    """A 429 the way Gemini sends it: the wait in the body's RetryInfo, no header."""

    async def apply(self, server: Any, request: Any, make: Any) -> Response:
        error = {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}],
        }
        return Response.json({"error": error}, status=429)


class TestGeminiFaults(GeminiSuite, FaultSuite):
    server_error_statuses = (500, 503, 504)
    stream_errors = (("UNAVAILABLE", 503, True),)
    unfinished_stream_says = "before a finishReason"


class TestStatusErrors:
    @STREAMING
    async def test_a_429_names_the_resource_exhausted_status(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.enqueue(HTTPError(429, message="quota", retry_after=4))
        error = await _error(server, streaming)
        assert "RESOURCE_EXHAUSTED" in error.message and "quota" in error.message

    @STREAMING
    async def test_429_with_retry_info_in_the_body_gives_its_delay(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.enqueue(_RetryInfo429())
        error = await _error(server, streaming)
        assert (error.status_code, error.retry_after) == (429, 17.0)

    @STREAMING
    async def test_a_bad_key_is_not_retryable(self, server: FakeGemini, streaming: bool) -> None:
        error = await _error(server, streaming, api_key="wrong-key-123456789")
        assert (error.status_code, error.retryable) == (400, False)
        assert "API key not valid" in error.message

    async def test_the_agent_retries_a_429_then_succeeds(self, server: FakeGemini) -> None:
        server.enqueue(HTTPError(429, retry_after_ms=10), HTTPError(503))
        config = AgentConfig(
            name="a",
            provider="gemini",
            base_url=server.base_url,
            api_key=API_KEY,
            max_retries=2,
            retry_delay=0.001,
        )
        async with Agent(config) as agent:
            result = await agent.run("hi")
        assert result.success and len(server.requests) == 3


class _Malformed(Fault):
    def __init__(self, response: Response) -> None:
        self.response = response

    async def apply(self, server: Any, request: Any, make: Any) -> Response:
        return self.response


class TestMalformed200:
    @pytest.mark.parametrize(
        "response",
        [
            Response.raw(b"<html>oops</html>", content_type="text/html"),
            Response.json(["not", "an", "object"]),
            Response.json({"usageMetadata": {"promptTokenCount": 1}}),
            Response.json({"candidates": [{"content": {"parts": [{"text": "no end"}]}}]}),
            Response.json({"candidates": [{"content": {"parts": "not a list of parts"}}]}),
        ],
        ids=["not-json", "not-an-object", "no-candidates", "no-finish-reason", "bad-parts"],
    )
    async def test_an_unreadable_reply_is_retryable(
        self, server: FakeGemini, response: Response
    ) -> None:
        server.enqueue(_Malformed(response))
        error = await _error(server, False)
        assert error.retryable is True and "malformed" in error.message
        assert error.status_code is None

    @pytest.mark.parametrize(
        "response",
        [
            Response.json({"candidates": []}),
            Response.raw(b"data: {not json}\n\n", content_type="text/event-stream"),
        ],
        ids=["json-not-events", "event-not-json"],
    )
    async def test_an_unreadable_stream_is_retryable(
        self, server: FakeGemini, response: Response
    ) -> None:
        server.enqueue(_Malformed(response))
        error = await _error(server, True)
        assert error.retryable is True and "malformed" in error.message
