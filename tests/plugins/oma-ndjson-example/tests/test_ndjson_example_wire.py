"""The example's mapping where the kit does not look: the plugin's own options merged with
the portable settings, the service's error text mid-stream, and a kept-open NDJSON stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fake_ndjson_example import FakeNdjsonExample

from oma_core import LLMMessage, ProviderError, load_messages
from oma_core.testing.fake_server import ErrorMidStream, RawBody, keep_alive_after
from oma_core.testing.pytest_plugin import fake_server_factory  # noqa: F401 - see conformance
from oma_core.toolkit import Provider, ProviderRequest, ProviderSettings, ToolDefinition

TOOL = ToolDefinition("lookup", "Look a word up.", {"type": "object", "properties": {}})


@pytest.fixture
def server(fake_server_factory: Any) -> FakeNdjsonExample:  # noqa: F811
    return fake_server_factory(FakeNdjsonExample)  # type: ignore[no-any-return]


@pytest.fixture
async def provider(server: FakeNdjsonExample) -> AsyncIterator[Provider]:
    from oma_ndjson_example import SPEC

    options = {"options": {"num_ctx": 4096}, "keep_alive": "5m"}
    made = SPEC.factory(ProviderSettings(server.url, None, options))
    yield made
    await made.aclose()


def _request(*messages: LLMMessage, **fields: Any) -> ProviderRequest:
    return ProviderRequest(model="llama3.2", messages=messages, **fields)


def _user(text: str) -> LLMMessage:
    return load_messages([{"role": "user", "content": [{"type": "text", "text": text}]}])[0]


def test_sampling_settings_and_options_go_where_the_service_reads_them(provider: Provider) -> None:
    request = _request(_user("hi"), temperature=0.2, max_tokens=64, stop=("END",))
    body = provider.render(request)
    assert body["options"] == {"num_ctx": 4096, "temperature": 0.2, "num_predict": 64,
                               "stop": ["END"]}  # fmt: skip
    assert body["keep_alive"] == "5m"


async def test_the_services_error_text_survives_a_stream(
    server: FakeNdjsonExample, provider: Provider
) -> None:
    server.enqueue(ErrorMidStream(2, message="the model runner crashed"))
    with pytest.raises(ProviderError) as caught:
        async for _ in provider.stream(_request(_user("hi"))):
            pass
    assert caught.value.message == "NDJSON Example stream failed: the model runner crashed"
    assert caught.value.retryable is True


async def test_a_complete_stream_kept_open_with_blank_lines_ends_at_its_done_line(
    server: FakeNdjsonExample, provider: Provider
) -> None:
    server.reply("all of it")
    headers = {"content-type": "application/x-ndjson"}
    server.enqueue(RawBody(keep_alive_after(comment=b"\n"), headers=headers, chunk_delay=0.05))
    events = await asyncio.wait_for(_collect(provider.stream(_request(_user("hi")))), 10)
    assert events[-1].response.message.content[0].text == "all of it"
    assert await server.async_wait_idle(timeout=5), "the kept-open stream was not closed"


async def _collect(stream: AsyncIterator[Any]) -> list[Any]:
    return [event async for event in stream]
