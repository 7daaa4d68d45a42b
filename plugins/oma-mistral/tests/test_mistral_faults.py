"""Faults against the fake Mistral service: the kit's ``FaultSuite``, and what is Mistral's
own (a refusal's reason, malformed replies and tool-call arguments)."""

from __future__ import annotations

from typing import Any

import pytest
from fake_mistral import API_KEY, FakeMistral, Reply
from mistral_suite import MistralSuite
from oma_mistral import MistralProvider

from oma_core import ProviderError, load_messages
from oma_core.testing import (
    Fault,
    FaultSuite,
    Response,
    TruncatedStream,
)
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


class TestMistralFaults(MistralSuite, FaultSuite):
    server_error_statuses = (500, 502, 503)
    stream_errors = (("service_unavailable", 503, True),)
    unfinished_stream = TruncatedStream(after_events=-2)  # no finish chunk, no [DONE]
    unfinished_stream_says = "before a finish_reason"


@STREAMING
async def test_a_refusal_names_the_service_s_reason(server: FakeMistral, streaming: bool) -> None:
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
    ]
    error = await _error(server, streaming, _request(conversation))
    assert (error.status_code, error.retryable) == (400, False)
    assert "Expected last role User or Tool" in error.message


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
