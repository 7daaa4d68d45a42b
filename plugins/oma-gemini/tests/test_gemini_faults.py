"""Faults against the fake Gemini API: 429 with Retry-After or RetryInfo, 5xx, a stream cut
mid-way or ended early, a malformed 200, an error inside a stream; what errors hold."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
from fake_gemini import API_KEY, FakeGemini, Reply
from oma_gemini import create_provider

from oma_core import Agent, AgentConfig, ProviderError, load_messages
from oma_core.testing import (
    DropConnection,
    EchoRequestError,
    ErrorMidStream,
    Fault,
    HTTPError,
    Response,
    TruncatedStream,
    assert_holds_no_secret,
)
from oma_core.testing.conformance import MEDIA_SAMPLES
from oma_core.testing.fake_server import Redirect
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


class TestStatusErrors:
    @STREAMING
    async def test_429_with_retry_after_is_retryable_after_that_wait(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.enqueue(HTTPError(429, message="quota", retry_after=4))
        error = await _error(server, streaming)
        assert (error.status_code, error.retryable, error.retry_after) == (429, True, 4.0)
        assert "RESOURCE_EXHAUSTED" in error.message and "quota" in error.message

    @STREAMING
    async def test_429_with_retry_info_in_the_body_gives_its_delay(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.enqueue(_RetryInfo429())
        error = await _error(server, streaming)
        assert (error.status_code, error.retry_after) == (429, 17.0)

    @STREAMING
    @pytest.mark.parametrize("status", [500, 503, 504])
    async def test_5xx_is_retryable(self, server: FakeGemini, streaming: bool, status: int) -> None:
        server.enqueue(HTTPError(status))
        error = await _error(server, streaming)
        assert (error.status_code, error.retryable) == (status, True)

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


class TestBrokenStreams:
    async def test_a_stream_cut_mid_way_is_retryable_without_status(
        self, server: FakeGemini
    ) -> None:
        server.reply(Reply(text="several words of a reply"))
        server.enqueue(TruncatedStream(after_events=3, abort=True))
        error = await _error(server, True)
        assert (error.status_code, error.retryable) == (None, True)

    async def test_a_stream_that_ends_before_a_finish_reason_is_retryable(
        self, server: FakeGemini
    ) -> None:
        server.reply(Reply(text="several words of a reply"))
        server.enqueue(TruncatedStream())  # all but the last event, ended cleanly
        error = await _error(server, True)
        assert error.retryable is True and "before a finishReason" in error.message

    async def test_an_error_inside_the_stream_keeps_its_code(self, server: FakeGemini) -> None:
        server.reply(Reply(text="several words of a reply"))
        server.enqueue(ErrorMidStream(2, "UNAVAILABLE", "overloaded"))
        error = await _error(server, True)
        assert (error.status_code, error.retryable) == (503, True)
        assert "overloaded" in error.message

    @STREAMING
    async def test_a_dropped_connection_is_retryable(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        server.enqueue(DropConnection("mid_body"))
        error = await _error(server, streaming)
        assert (error.status_code, error.retryable) == (None, True)


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


class TestSecrets:
    @STREAMING
    async def test_an_echoed_request_leaves_no_key_and_no_media_reachable(
        self, server: FakeGemini, streaming: bool
    ) -> None:
        key = "AIza" + os.urandom(18).hex()
        video = base64.b64encode(MEDIA_SAMPLES["video/mp4"] + os.urandom(3000)).decode()
        conversation = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what happens?"},
                    {
                        "type": "video",
                        "source": {"type": "base64", "media_type": "video/mp4", "data": video},
                    },
                ],
            }
        ]
        server.api_key = key
        server.enqueue(EchoRequestError(400))
        error = await _error(server, streaming, _request(conversation), api_key=key)
        assert server.requests[0].headers["x-goog-api-key"] == key
        assert_holds_no_secret(error, key, video[:40], video[2000:2040], video[-40:-2])
        assert error.status_code == 400


# --------------------------------------------------------------------------- redirects


@STREAMING
async def test_a_redirect_is_refused_and_the_other_host_gets_nothing(
    server: FakeGemini, streaming: bool
) -> None:
    with FakeGemini() as elsewhere:
        port = elsewhere.port
        server.enqueue(Redirect(f"{elsewhere.base_url}/x?token=redirect-secret"))
        error = await _error(
            server, streaming, options={"headers": {"Helicone-Auth": "Bearer helicone-secret"}}
        )
        assert elsewhere.total_connections == 0 and elsewhere.requests == []
    assert (error.status_code, error.retryable) == (307, False)
    assert f"HTTP 307) to 127.0.0.1:{port}" in str(error)
    assert "redirect-secret" not in str(error)
    assert server.requests[0].headers["helicone-auth"] == "Bearer helicone-secret"
