"""Faults against the fake Mistral service: 429 with Retry-After, 5xx, a stream cut mid-way
or ended early, a malformed 200, an error inside a stream; what errors hold."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
from fake_mistral import API_KEY, FakeMistral, Reply
from oma_mistral import MistralProvider

from oma_core import ProviderError, load_messages
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
    return ProviderRequest(model="mistral-test", messages=load_messages(conversation))


async def _error(
    server: FakeMistral, streaming: bool, request: ProviderRequest | None = None, **settings: Any
) -> ProviderError:
    settings.setdefault("api_key", API_KEY)
    provider = MistralProvider(ProviderSettings(base_url=server.base_url, **settings))
    try:
        with pytest.raises(ProviderError) as caught:
            if streaming:
                [_ async for _ in provider.stream(request or _request())]
            else:
                await provider.complete(request or _request())
    finally:
        await provider.aclose()
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert caught.value.provider == "Mistral"
    return caught.value


class _Answer(Fault):
    def __init__(self, response: Response) -> None:
        self.response = response

    async def apply(self, server: Any, request: Any, make: Any) -> Response:
        return self.response


@STREAMING
async def test_429_with_retry_after_is_retryable_after_that_wait(
    server: FakeMistral, streaming: bool
) -> None:
    server.enqueue(HTTPError(429, message="Requests rate limit exceeded", retry_after=2))
    error = await _error(server, streaming)
    assert (error.status_code, error.retryable, error.retry_after) == (429, True, 2.0)
    assert "Requests rate limit exceeded" in error.message


@STREAMING
@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retryable(server: FakeMistral, streaming: bool, status: int) -> None:
    server.enqueue(HTTPError(status))
    error = await _error(server, streaming)
    assert (error.status_code, error.retryable) == (status, True)


@STREAMING
async def test_a_refusal_names_the_service_s_reason(server: FakeMistral, streaming: bool) -> None:
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
    ]
    error = await _error(server, streaming, _request(conversation))
    assert (error.status_code, error.retryable) == (400, False)
    assert "Expected last role User or Tool" in error.message


async def test_a_stream_cut_mid_way_is_retryable_without_status(server: FakeMistral) -> None:
    server.reply(Reply(text="several words of a reply"))
    server.enqueue(TruncatedStream(after_events=3, abort=True))
    error = await _error(server, True)
    assert (error.status_code, error.retryable) == (None, True)


async def test_a_stream_that_ends_before_a_finish_reason_is_retryable(
    server: FakeMistral,
) -> None:
    server.reply(Reply(text="several words of a reply"))
    server.enqueue(TruncatedStream(after_events=-2))  # no finish chunk, no [DONE]
    error = await _error(server, True)
    assert error.retryable is True and "before a finish_reason" in error.message


async def test_an_error_inside_the_stream_keeps_its_code(server: FakeMistral) -> None:
    server.reply(Reply(text="several words of a reply"))
    server.enqueue(ErrorMidStream(2, "service_unavailable", "try later"))
    error = await _error(server, True)
    assert (error.status_code, error.retryable) == (503, True)
    assert "try later" in error.message


@STREAMING
async def test_a_dropped_connection_is_retryable(server: FakeMistral, streaming: bool) -> None:
    server.enqueue(DropConnection("before_response"))
    error = await _error(server, streaming)
    assert (error.status_code, error.retryable) == (None, True)


@pytest.mark.parametrize(
    "response",
    [
        Response.raw(b"<html>bad gateway</html>", content_type="text/html"),
        Response.json({"choices": []}),
        Response.json({"id": "x"}),
    ],
    ids=["not-json", "no-choices", "no-choices-key"],
)
async def test_a_malformed_200_is_retryable(server: FakeMistral, response: Response) -> None:
    server.enqueue(_Answer(response))
    error = await _error(server, False)
    assert error.retryable is True and "malformed" in error.message


async def test_bad_tool_call_arguments_are_malformed(server: FakeMistral) -> None:
    server.reply(Reply(text="", tool_calls=(("abcdefghi", "f", '{"x": '),)))
    error = await _error(server, False)
    assert error.retryable is True and "not a JSON object" in error.message


async def test_a_stream_event_that_is_not_json_is_malformed(server: FakeMistral) -> None:
    server.enqueue(_Answer(Response.raw(b"data: {oops\n\n", content_type="text/event-stream")))
    error = await _error(server, True)
    assert error.retryable is True and "malformed" in error.message


@STREAMING
async def test_an_echoed_request_leaves_no_key_and_no_image_reachable(
    server: FakeMistral, streaming: bool
) -> None:
    key = "sk-" + os.urandom(20).hex()
    image = base64.b64encode(MEDIA_SAMPLES["image/png"] + os.urandom(3000)).decode()
    conversation = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": image},
                },
            ],
        }
    ]
    server.api_key = key
    server.enqueue(EchoRequestError(400))
    error = await _error(server, streaming, _request(conversation), api_key=key)
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert_holds_no_secret(error, key, image[:40], image[2000:2040], image[-40:-2])


# --------------------------------------------------------------------------- redirects


@STREAMING
async def test_a_redirect_is_refused_and_the_other_host_gets_nothing(
    server: FakeMistral, streaming: bool
) -> None:
    with FakeMistral() as elsewhere:
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
