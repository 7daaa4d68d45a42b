"""Newline-delimited JSON streams (``stream_ndjson``, ``ndjson_lines``, ``LineSplitter``) and
the fake server's ``Response.ndjson``, against a real server on 127.0.0.1: lines as JSON
objects, bounded in size, and every failure the ``ProviderError`` the SSE reader gives.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from oma_core import ProviderError
from oma_core.http import (
    AioHttpClient,
    HttpTimeouts,
    LineSplitter,
    ReadLimits,
    aio_stream_ndjson,
    http_client,
    line_json,
    stream_ndjson,
)
from oma_core.testing import (
    DropConnection,
    ErrorMidStream,
    FakeServer,
    HTTPError,
    RecordedRequest,
    Response,
    SlowStream,
    TruncatedStream,
    assert_holds_no_secret,
)
from oma_core.testing.fake_server import JSONLine, RawBody, StreamItem, endless

KEY = "sk-" + "k3y" * 16


class FakeLines(FakeServer):
    """``POST /api/chat`` streams ``self.lines``; errors as Ollama gives them
    (``{"error": "text"}``, in the body and in the stream)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[JSONLine] = [JSONLine({"n": i}) for i in range(4)]

    def handle(self, request: RecordedRequest) -> Response:
        if request.path != "/api/chat":
            return self.error_response(404, "no such path")
        return Response.ndjson(self.lines)

    def error_response(self, status: int, message: str, error_type: str | None = None) -> Response:
        return Response.json({"error": message}, status=status)

    def error_event(self, error_type: str, message: str) -> StreamItem:
        return JSONLine({"error": message})


@pytest.fixture
def server() -> Iterator[FakeLines]:
    with FakeLines() as srv:
        yield srv  # type: ignore[misc]
    assert srv.handler_errors == []


@pytest.fixture
async def client(server: FakeLines) -> AsyncIterator[httpx.AsyncClient]:
    async with http_client(base_url=server.url, provider="Svc") as c:
        yield c


async def _lines(client: httpx.AsyncClient, **kw: Any) -> list[dict[str, Any]]:
    lines = stream_ndjson(client, "/api/chat", {"q": 1}, provider="Svc", secrets=[KEY], **kw)
    return [line async for line in lines]


async def _failure(client: httpx.AsyncClient, **kw: Any) -> tuple[list[Any], ProviderError]:
    seen: list[Any] = []
    with pytest.raises(ProviderError) as caught:
        async for line in stream_ndjson(client, "/api/chat", {}, provider="Svc", **kw):
            seen.append(line)
    assert caught.value.__context__ is None  # built from strings, never chained
    return seen, caught.value


class TestStreamNdjson:
    async def test_yields_each_line_as_an_object_and_returns_the_connection(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        assert await _lines(client) == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]
        assert server.requests[0].headers["accept"] == "application/x-ndjson"
        assert server.requests[0].json == {"q": 1}
        await _lines(client)  # a finished stream's connection went back to the pool
        assert [r.connection for r in server.requests] == [1, 1]

    async def test_blank_lines_crlf_and_a_last_line_without_its_end_are_read(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        body = [b'{"n": 0}\r\n\n', b'{"n"', b': 1}\n  \n{"n": 2}']
        server.enqueue(RawBody(body, headers={"content-type": "application/x-ndjson"}))
        assert await _lines(client) == [{"n": 0}, {"n": 1}, {"n": 2}]

    async def test_an_error_status_keeps_its_code_and_the_services_text(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        server.enqueue(HTTPError(404, message='model "llama9" not found'))
        _, error = await _failure(client)
        assert (error.status_code, error.retryable) == (404, False)
        assert error.message == 'Svc returned HTTP 404: model "llama9" not found'

    async def test_an_error_line_is_raised_retryable_with_the_services_text(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        server.enqueue(ErrorMidStream(2, message="the model runner crashed"))
        seen, error = await _failure(client)
        assert seen == [{"n": 0}, {"n": 1}]
        assert (error.status_code, error.retryable) == (None, True)
        assert error.message == "Svc stream failed: the model runner crashed"

    async def test_a_line_that_is_not_a_json_object_is_malformed_and_retryable(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        server.lines = [JSONLine({"n": 0}), JSONLine("not json"), JSONLine({"n": 2})]
        seen, error = await _failure(client)
        assert seen == [{"n": 0}]
        assert error.retryable is True
        assert error.message == "Svc sent a malformed response: a stream line is not a JSON object"

    @pytest.mark.parametrize("content_type", ["application/x-ndjson", "text/plain"])
    async def test_a_line_that_is_not_utf8_is_malformed_whatever_the_content_type(
        self, server: FakeLines, client: httpx.AsyncClient, content_type: str
    ) -> None:
        body = [b'{"n": 0}\n', b'{"n": "\xff\xfe"}\n']
        server.enqueue(RawBody(body, headers={"content-type": content_type}))
        _, error = await _failure(client)
        assert error.retryable is True
        assert "the stream is not valid UTF-8" in error.message

    async def test_an_endless_line_stops_at_the_line_limit(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        server.enqueue(RawBody(endless(b'{"x": "'), headers={"content-type": "text/plain"}))
        _, error = await _failure(client, max_event_bytes=100_000)
        assert error.retryable is False
        assert error.message == (
            "Svc's stream line exceeds the limit of 100000 bytes "
            '(provider_options["max_event_bytes"] raises it)'
        )
        assert await server.async_wait_idle(timeout=5)

    async def test_many_lines_in_one_chunk_do_not_count_as_one(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        server.enqueue(RawBody([b'{"pad": "ppppppppppppppppppppppppp"}\n' * 500]))
        assert len(await _lines(client, max_event_bytes=100)) == 500

    async def test_a_stream_cut_mid_way_is_retryable_after_the_lines_that_came(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        server.enqueue(TruncatedStream(after_events=2, abort=True))
        seen, error = await _failure(client, secrets=[KEY])
        assert seen == [{"n": 0}, {"n": 1}]
        assert (error.status_code, error.retryable) == (None, True)
        assert_holds_no_secret(error, KEY)

    async def test_a_connection_dropped_at_once_is_retryable_without_status(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        server.enqueue(DropConnection("before_response"))
        _, error = await _failure(client)
        assert (error.status_code, error.retryable) == (None, True)

    async def test_a_silent_stream_fails_naming_the_idle_timeout(self, server: FakeLines) -> None:
        server.enqueue(SlowStream(event_delay=3.0))
        timeouts = HttpTimeouts(idle=0.2)
        async with http_client(base_url=server.url, provider="Svc", timeouts=timeouts) as client:
            _, error = await _failure(client)
        assert error.retryable is True
        assert "nothing came for 0.2 s in the middle of the reply (the idle" in error.message
        assert await server.async_wait_idle(timeout=5)

    async def test_closing_the_stream_early_closes_its_connection(
        self, server: FakeLines, client: httpx.AsyncClient
    ) -> None:
        server.lines = [JSONLine({"n": i}) for i in range(50)]
        server.enqueue(SlowStream(event_delay=0.05))
        lines = stream_ndjson(client, "/api/chat", {}, provider="Svc")
        assert await anext(lines) == {"n": 0}
        await lines.aclose()
        assert await server.async_wait_idle(timeout=2)


class TestAioStreamNdjson:
    """The same reader over aiohttp: the same lines, the same errors."""

    @pytest.fixture
    async def aio(self) -> AsyncIterator[AioHttpClient]:
        client = AioHttpClient()
        yield client
        await client.aclose()

    async def _lines(self, aio: AioHttpClient, server: FakeLines, **kw: Any) -> list[Any]:
        url = server.url + "/api/chat"
        lines = aio_stream_ndjson(aio.get(), url, {"q": 1}, provider="Svc", secrets=[KEY], **kw)
        return [line async for line in lines]

    async def test_yields_each_line_as_an_object(
        self, server: FakeLines, aio: AioHttpClient
    ) -> None:
        assert await self._lines(aio, server) == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]
        assert server.requests[0].headers["accept"] == "application/x-ndjson"
        assert server.requests[0].json == {"q": 1}

    async def test_an_error_status_keeps_its_code_and_the_services_text(
        self, server: FakeLines, aio: AioHttpClient
    ) -> None:
        server.enqueue(HTTPError(429, message=f"slow down {KEY}", retry_after=2))
        with pytest.raises(ProviderError) as caught:
            await self._lines(aio, server)
        error = caught.value
        assert (error.status_code, error.retryable, error.retry_after) == (429, True, 2.0)
        assert error.message == "Svc returned HTTP 429: slow down [REDACTED]"

    async def test_an_error_line_is_raised_after_the_lines_before_it(
        self, server: FakeLines, aio: AioHttpClient
    ) -> None:
        server.enqueue(ErrorMidStream(1, message="the model runner crashed"))
        seen = []
        with pytest.raises(ProviderError) as caught:
            async for line in aio_stream_ndjson(
                aio.get(), server.url + "/api/chat", {}, provider="Svc"
            ):
                seen.append(line)
        assert seen == [{"n": 0}]
        assert caught.value.message == "Svc stream failed: the model runner crashed"
        assert caught.value.__context__ is None

    async def test_closing_the_stream_early_closes_its_connection(
        self, server: FakeLines, aio: AioHttpClient
    ) -> None:
        server.lines = [JSONLine({"n": i}) for i in range(50)]
        server.enqueue(SlowStream(event_delay=0.05))
        lines = aio_stream_ndjson(aio.get(), server.url + "/api/chat", {}, provider="Svc")
        assert await anext(lines) == {"n": 0}
        await lines.aclose()
        assert await server.async_wait_idle(timeout=2)

    async def test_an_endless_line_stops_at_the_line_limit(
        self, server: FakeLines, aio: AioHttpClient
    ) -> None:
        server.enqueue(RawBody(endless(b'{"x": "'), headers={"content-type": "text/plain"}))
        with pytest.raises(ProviderError) as caught:
            await self._lines(aio, server, limits=ReadLimits(max_event_bytes=100_000))
        assert "stream line exceeds the limit of 100000 bytes" in caught.value.message
        assert caught.value.retryable is False
        assert await server.async_wait_idle(timeout=5)


class TestLineSplitter:
    def test_a_line_split_over_chunks_comes_out_whole(self) -> None:
        splitter = LineSplitter("S", limit=100)
        assert splitter.feed(b'{"a"') == []
        assert splitter.feed(b": 1}\n{") == [b'{"a": 1}']
        assert splitter.feed(b'"b": 2}') == []
        assert splitter.close() == [b'{"b": 2}']

    def test_a_line_past_the_limit_is_refused_before_its_end_arrives(self) -> None:
        splitter = LineSplitter("S", limit=1000)
        splitter.feed(b"x" * 600)
        with pytest.raises(ProviderError, match="stream line exceeds the limit of 1000 bytes"):
            splitter.feed(b"x" * 600)

    def test_a_whole_line_past_the_limit_in_one_chunk_is_refused(self) -> None:
        with pytest.raises(ProviderError, match="exceeds the limit of 10 bytes"):
            LineSplitter("S", limit=10).feed(b'{"a": "long enough"}\n{}\n')


class TestLineJson:
    @pytest.mark.parametrize(
        ("line", "message"),
        [
            ('{"error": "boom"}', "S stream failed: boom"),
            (
                '{"error": {"type": "busy", "message": "try later"}}',
                "S stream failed (busy): try later",
            ),
        ],
    )
    def test_an_error_object_is_raised_with_the_services_text(
        self, line: str, message: str
    ) -> None:
        with pytest.raises(ProviderError) as caught:
            line_json(line, provider="S")
        assert (caught.value.message, caught.value.retryable) == (message, True)

    def test_a_null_error_member_is_no_error(self) -> None:
        assert line_json(b'{"error": null, "done": true}', provider="S") == {
            "error": None,
            "done": True,
        }

    def test_the_services_text_is_scrubbed_of_the_secrets(self) -> None:
        with pytest.raises(ProviderError) as caught:
            line_json(f'{{"error": "bad key {KEY}"}}', provider="S", secrets=[KEY])
        assert caught.value.message == "S stream failed: bad key [REDACTED]"


class TestNdjsonResponses:
    """The fake server's ``Response.ndjson``: what a test of an NDJSON service builds on."""

    async def test_lines_are_compact_json_one_per_line_labelled_ndjson(
        self, server: FakeLines
    ) -> None:
        server.lines = [JSONLine({"a": [1, 2]}), JSONLine({"done": True})]
        async with httpx.AsyncClient() as client:
            reply = await client.post(server.url + "/api/chat")
        assert reply.headers["content-type"] == "application/x-ndjson"
        assert reply.content == b'{"a":[1,2]}\n{"done":true}\n'

    async def test_a_truncated_stream_ends_cleanly_before_its_last_lines(
        self, server: FakeLines
    ) -> None:
        server.enqueue(TruncatedStream(after_events=-3))
        async with httpx.AsyncClient() as client:
            reply = await client.post(server.url + "/api/chat")
        assert reply.content == b'{"n":0}\n'
