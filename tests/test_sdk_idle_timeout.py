"""The idle timeout under an SDK's own client (``guard_hooks``): kept by the HTTP library.

On httpx's own transport (httpcore reads the body; httpx2, the SDKs' fork, reads it the same
way) the guard sets the body's read timeout to ``idle`` as the reply arrives, instead of running
a timer of its own per chunk: a reply that stops in the middle fails with the toolkit's
``idle_timeout`` after ``idle`` seconds, while the headers keep the longer first-byte limit.
Each client is a real one against a loopback server, with a read timeout of its own far past
``idle``, as an SDK makes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from oma_core.errors import ProviderError
from oma_core.http import guard_hooks
from oma_core.testing.fake_server import (
    Delay,
    FakeServer,
    RecordedRequest,
    Response,
    SlowStream,
    SSEEvent,
)

IDLE = 0.3
#: The client's own read timeout (what an SDK keeps): far past ``IDLE``.
READ = 60.0
#: The HTTP libraries whose clients are checked (the core's tests install httpx).
LIBRARIES = [httpx]


class Events(FakeServer):
    """Streams four events on any path."""

    def handle(self, request: RecordedRequest) -> Response:
        return Response.sse([SSEEvent({"n": i}) for i in range(4)])


@pytest.fixture
def server() -> Iterator[Events]:
    srv = Events().start()
    try:
        yield srv  # type: ignore[misc]
    finally:
        srv.close()


def _client(library: Any, **hooks: Any) -> Any:
    timeout = library.Timeout(READ, connect=5.0)
    return library.AsyncClient(
        timeout=timeout, follow_redirects=False, event_hooks=guard_hooks("Svc", **hooks)
    )


async def _read(client: Any, url: str) -> bytes:
    async with client.stream("POST", url, json={"q": 1}) as response:
        return b"".join([piece async for piece in response.aiter_raw()])


@pytest.mark.parametrize("library", LIBRARIES)
async def test_a_reply_that_stops_midway_fails_naming_the_idle_timeout(
    server: Events, library: Any
) -> None:
    server.enqueue(SlowStream(event_delay=READ))  # the first event, then silence
    async with _client(library, idle=IDLE) as client:
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(_read(client, server.url + "/events"), READ / 2)
    error = caught.value
    assert error.retryable is True
    assert f"nothing came for {IDLE:g} s in the middle of the reply" in error.message
    assert await server.async_wait_idle(timeout=10)


@pytest.mark.parametrize("library", LIBRARIES)
async def test_the_headers_keep_the_first_byte_limit(server: Events, library: Any) -> None:
    server.enqueue(Delay(IDLE * 3))  # slow to start: past idle, well within the read timeout
    async with _client(library, idle=IDLE, first_byte=READ) as client:
        body = await _read(client, server.url + "/events")
    assert body.count(b"data:") == 4


@pytest.mark.parametrize("library", LIBRARIES)
async def test_without_idle_the_librarys_own_read_timeout_is_left_as_it_is(
    server: Events, library: Any
) -> None:
    server.enqueue(SlowStream(event_delay=READ))
    client = library.AsyncClient(
        timeout=library.Timeout(IDLE, connect=5.0), event_hooks=guard_hooks("Svc", idle=None)
    )
    async with client:
        with pytest.raises(library.ReadTimeout):
            await asyncio.wait_for(_read(client, server.url + "/events"), READ / 2)
    assert await server.async_wait_idle(timeout=10)
