"""The fake-server kit: real HTTP on 127.0.0.1, recorded requests, counters and faults."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from oma_core.testing.fake_server import (
    Delay,
    DropConnection,
    EchoRequestError,
    ErrorMidStream,
    FakeServer,
    HTTPError,
    RawBody,
    RecordedRequest,
    Redirect,
    Response,
    SlowStream,
    SSEEvent,
    TruncatedStream,
    endless,
    gzip_bomb,
    keep_alive_after,
)


class FakeEcho(FakeServer):
    """Echoes the JSON body; ``{"stream": n}`` answers with n numbered events then "end"."""

    def handle(self, request: RecordedRequest) -> Response:
        body: Any = request.json
        if request.path != "/echo":
            return self.error_response(404, "no such path")
        if isinstance(body, dict) and "stream" in body:
            events = [SSEEvent({"i": i}, event="item") for i in range(body["stream"])]
            return Response.sse([*events, SSEEvent({}, event="end")])
        return Response.json({"echo": body})


def _events(text: str) -> list[str]:
    return [line[len("event: ") :] for line in text.splitlines() if line.startswith("event: ")]


@pytest.fixture
def server() -> Any:
    with FakeEcho() as srv:
        yield srv


def test_json_round_trip_is_recorded(server: FakeEcho) -> None:
    with httpx.Client(base_url=server.url) as client:
        reply = client.post("/echo?x=1", json={"a": 1}, headers={"X-Api-Key": "k"})
    assert reply.json() == {"echo": {"a": 1}}
    [req] = server.requests
    assert (req.method, req.path, req.query) == ("POST", "/echo", "x=1")
    assert req.headers["x-api-key"] == "k"
    assert req.headers["X-API-KEY"] == "k"
    assert req.json == {"a": 1}
    assert req.body == reply.request.content


def test_keep_alive_reuses_one_connection(server: FakeEcho) -> None:
    with httpx.Client(base_url=server.url) as client:
        for _ in range(3):
            client.post("/echo", json={})
    assert [r.connection for r in server.requests] == [1, 1, 1]
    assert server.total_connections == 1


def test_sse_stream_arrives_in_order(server: FakeEcho) -> None:
    with httpx.Client(base_url=server.url) as client:
        reply = client.post("/echo", json={"stream": 3})
    assert reply.headers["content-type"] == "text/event-stream"
    assert _events(reply.text) == ["item", "item", "item", "end"]


def test_http_error_fault_sets_retry_headers_and_skips_nothing_else(server: FakeEcho) -> None:
    server.enqueue(HTTPError(429, retry_after=2, retry_after_ms=1500))
    with httpx.Client(base_url=server.url) as client:
        first = client.post("/echo", json={})
        second = client.post("/echo", json={})
    assert first.status_code == 429
    assert first.headers["retry-after"] == "2"
    assert first.headers["retry-after-ms"] == "1500"
    assert first.json()["error"]["message"] == "scripted error"
    assert second.status_code == 200
    assert len(server.requests) == 2


def test_dropped_connection_before_response_is_a_protocol_error(server: FakeEcho) -> None:
    server.enqueue(DropConnection())
    with httpx.Client(base_url=server.url) as client, pytest.raises(httpx.RemoteProtocolError):
        client.post("/echo", json={})


def test_connection_dropped_mid_body_is_an_incomplete_read(server: FakeEcho) -> None:
    server.enqueue(DropConnection("mid_body"))
    with httpx.Client(base_url=server.url) as client, pytest.raises(httpx.RemoteProtocolError):
        client.post("/echo", json={"pad": "x" * 1000})


def test_error_mid_stream_replaces_the_rest(server: FakeEcho) -> None:
    server.enqueue(ErrorMidStream(after_events=1))
    with httpx.Client(base_url=server.url) as client:
        reply = client.post("/echo", json={"stream": 3})
    assert _events(reply.text) == ["item", "error"]
    assert "overloaded_error" in reply.text


def test_truncated_stream_ends_cleanly_without_its_last_event(server: FakeEcho) -> None:
    server.enqueue(TruncatedStream())
    with httpx.Client(base_url=server.url) as client:
        reply = client.post("/echo", json={"stream": 2})
    assert _events(reply.text) == ["item", "item"]


def test_aborted_stream_is_cut_mid_body(server: FakeEcho) -> None:
    server.enqueue(TruncatedStream(after_events=1, abort=True))
    with httpx.Client(base_url=server.url) as client, pytest.raises(httpx.RemoteProtocolError):
        client.post("/echo", json={"stream": 3})


def test_slow_stream_spaces_events(server: FakeEcho) -> None:
    server.enqueue(SlowStream(event_delay=0.05))
    lines = 0
    began = time.monotonic()
    with (
        httpx.Client(base_url=server.url) as client,
        client.stream("POST", "/echo", json={"stream": 3}) as reply,
    ):
        for _ in reply.iter_lines():
            lines += 1
    # A lower bound on the whole reply (the server slept between events) holds under any
    # load; the gaps the client sees between lines do not (a late reader gets them at once).
    assert time.monotonic() - began >= 0.1
    assert lines >= 3


async def test_closing_a_slow_stream_leaves_no_open_connection(server: FakeEcho) -> None:
    server.enqueue(SlowStream(event_delay=1.0))
    async with (
        httpx.AsyncClient(base_url=server.url) as client,
        client.stream("POST", "/echo", json={"stream": 5}) as reply,
    ):
        async for _ in reply.aiter_lines():
            break
        assert server.open_connections == 1
    assert await server.async_wait_idle(timeout=0.5)


async def test_counters_see_concurrent_requests(server: FakeEcho) -> None:
    server.response_delay = 0.2
    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(base_url=server.url, limits=limits) as client:
        replies = await asyncio.gather(*(client.post("/echo", json={}) for _ in range(60)))
    assert all(r.status_code == 200 for r in replies)
    assert server.max_in_flight >= 50
    assert server.max_open_connections >= 50
    assert server.in_flight == 0


def test_delay_fault_holds_one_reply(server: FakeEcho) -> None:
    server.enqueue(Delay(0.1))
    with httpx.Client(base_url=server.url) as client:
        start = time.monotonic()
        client.post("/echo", json={})
        assert time.monotonic() - start >= 0.1


def test_handler_bug_answers_500_and_is_recorded() -> None:
    class Broken(FakeServer):
        def handle(self, request: RecordedRequest) -> Response:
            raise KeyError("oops")

    with Broken() as srv, httpx.Client(base_url=srv.url) as client:
        assert client.get("/").status_code == 500
        assert isinstance(srv.handler_errors[0], KeyError)


def test_close_joins_the_thread_and_cuts_open_connections() -> None:
    before = threading.active_count()
    srv = FakeEcho().start()
    srv.enqueue(SlowStream(event_delay=5.0))
    with (
        httpx.Client(base_url=srv.url) as client,
        client.stream("POST", "/echo", json={"stream": 3}) as reply,
    ):
        next(reply.iter_lines())
        srv.close()
    assert threading.active_count() == before
    with pytest.raises(RuntimeError):
        _ = srv.url


def test_reset_forgets_requests_and_faults(server: FakeEcho) -> None:
    server.enqueue(HTTPError(500))
    with httpx.Client(base_url=server.url) as client:
        client.post("/echo", json={})
    server.enqueue(HTTPError(500))
    server.reset()
    assert server.requests == [] and server.pending_faults == 0


def test_negative_counts_keep_all_but_the_last_events(server: FakeEcho) -> None:
    server.enqueue(TruncatedStream(after_events=-2), ErrorMidStream(after_events=-2))
    with httpx.Client(base_url=server.url) as client:
        truncated = client.post("/echo", json={"stream": 4}).text
        errored = client.post("/echo", json={"stream": 4}).text
    assert _events(truncated) == ["item", "item", "item"]
    assert _events(errored) == ["item", "item", "item", "error"]


def test_echo_request_error_repeats_headers_and_body(server: FakeEcho) -> None:
    server.enqueue(EchoRequestError(422))
    with httpx.Client(base_url=server.url) as client:
        reply = client.post("/echo", json={"secret": "payload"}, headers={"x-api-key": "k-1"})
    assert reply.status_code == 422
    message = reply.json()["error"]["message"]
    assert "x-api-key: k-1" in message and '{"secret":"payload"}' in message
    assert len(server.requests) == 1


# -- hostile replies ------------------------------------------------------------------------


def test_redirect_answers_with_its_status_and_location_without_the_handler(
    server: FakeEcho,
) -> None:
    server.enqueue(Redirect("http://127.0.0.1:9/x", status=308))
    reply = httpx.post(server.url + "/echo", json={"a": 1})
    assert (reply.status_code, reply.headers["location"]) == (308, "http://127.0.0.1:9/x")


def test_a_gzip_bomb_is_valid_gzip_of_the_size_asked() -> None:
    import gzip

    packed = b"".join(gzip_bomb(3 * 1024 * 1024, prefix=b"{", fill=b"ab"))
    assert len(packed) < 10_000
    assert gzip.decompress(packed) == b"{" + b"ab" * (1024 * 1024)  # whole blocks only


def test_raw_body_sends_its_chunks_as_they_are_made(server: FakeEcho) -> None:
    server.enqueue(RawBody([b"one ", b"two"], headers={"content-type": "text/plain"}))
    reply = httpx.post(server.url + "/echo", json={})
    assert reply.text == "one two"


def test_keep_alive_after_sends_the_whole_reply_then_comments_until_the_client_leaves(
    server: FakeEcho,
) -> None:
    server.enqueue(RawBody(keep_alive_after(), headers={"content-type": "text/event-stream"}))
    with httpx.stream("POST", server.url + "/echo", json={"stream": 2}) as reply:
        seen = b""
        for chunk in reply.iter_bytes():
            seen += chunk
            if seen.count(b":\n\n") >= 3:
                break
    assert _events(seen.decode()) == ["item", "item", "end"]
    assert server.wait_idle(timeout=2)


def test_endless_never_ends() -> None:
    chunks = endless(b"data: ", size=10)
    assert [next(chunks) for _ in range(3)] == [b"data: ", b"a" * 10, b"a" * 10]
