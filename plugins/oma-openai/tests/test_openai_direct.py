"""``provider_options={"transport": "direct"}``: the rendered body over the plugin's own aiohttp
client, no SDK client made; the same body, replies and errors as the SDK's transports. (The
mapping, streaming, fault, leak and conformance suites run on it too: the ``transport``
fixture.) Also the toolkit's event-stream parser it reads streams with."""

from __future__ import annotations

import asyncio
import json

import pytest
from fake_openai import FakeChatCompletions, Reply
from hypothesis import given
from hypothesis import strategies as st
from openai_builders import API_KEY, provider_for, request

from oma_core import Agent, AgentConfig, ProviderError
from oma_core.errors import PluginError
from oma_core.http import SSEParser


class TestDirectTransport:
    async def test_it_makes_no_sdk_client(self, server: FakeChatCompletions) -> None:
        provider = provider_for(server, transport="direct")
        try:
            response = await provider.complete(request("hi"))
            assert provider._sdk is None
        finally:
            await provider.aclose()
        assert response.message.content[0].text == "Hello from the fake service."  # type: ignore[union-attr]
        assert await server.async_wait_idle(timeout=30)

    async def test_it_sends_the_body_render_shows(self, server: FakeChatCompletions) -> None:
        direct = provider_for(server, transport="direct")
        sdk = provider_for(server)
        try:
            call = request("hi", max_tokens=20, temperature=0.5)
            await direct.complete(call)
            await sdk.complete(call)
        finally:
            await direct.aclose()
            await sdk.aclose()
        direct_body, sdk_body = (r.json for r in server.requests)
        assert direct_body == sdk_body == direct.render(call) == sdk.render(call)
        assert (
            server.requests[0].body
            == json.dumps(direct.render(call), ensure_ascii=False, separators=(",", ":")).encode()
        )

    async def test_organization_project_headers_and_query_are_sent(
        self, server: FakeChatCompletions
    ) -> None:
        provider = provider_for(
            server,
            transport="direct",
            organization="org-1",
            project="proj-1",
            headers={"x-team": "a"},
            default_query={"api-version": "1"},
        )
        try:
            await provider.complete(request("hi"))
        finally:
            await provider.aclose()
        sent = server.requests[0]
        assert sent.headers["openai-organization"] == "org-1"
        assert sent.headers["openai-project"] == "proj-1"
        assert sent.headers["x-team"] == "a"
        assert sent.query == "api-version=1"

    async def test_a_reply_that_is_not_an_object_is_malformed(
        self, server: FakeChatCompletions
    ) -> None:
        from oma_core.testing import Response

        server.handle = lambda r: Response.json([1, 2])  # type: ignore[method-assign]
        provider = provider_for(server, transport="direct")
        with pytest.raises(ProviderError) as info:
            await provider.complete(request("hi"))
        await provider.aclose()
        assert "malformed" in str(info.value) and info.value.retryable

    async def test_a_stream_reads_to_its_done_marker(self, server: FakeChatCompletions) -> None:
        server.reply(Reply(text="one two three"))
        provider = provider_for(server, transport="direct")
        try:
            events = [e async for e in provider.stream(request("hi"))]
        finally:
            await provider.aclose()
        assert events[-1].response.message.content[0].text == "one two three"  # type: ignore[attr-defined]


def _stream(events: list[tuple[str | None, list[str]]], end: bytes) -> bytes:
    out = b""
    for name, lines in events:
        if name is not None:
            out += b"event: " + name.encode() + end
        for line in lines:
            out += b"data: " + line.encode() + end
        out += end
    return out


_line = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)))
_events = st.lists(
    st.tuples(st.none() | st.sampled_from(["ping", "delta"]), st.lists(_line, min_size=1)),
    max_size=8,
)


class TestSSEParser:
    @given(_events, st.sampled_from([b"\n", b"\r\n", b"\r"]), st.data())
    def test_events_are_the_same_however_the_bytes_are_split(
        self, events: list[tuple[str | None, list[str]]], end: bytes, data: st.DataObject
    ) -> None:
        raw = _stream(events, end)
        cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=10)))
        parser = SSEParser("test")
        got = []
        start = 0
        for cut in [*cuts, len(raw)]:
            got.extend(parser.feed(raw[start:cut]))
            start = cut
        got.extend(parser.feed(end))  # a CR-ended stream's last line end is known only now
        assert [(e.event, e.data) for e in got] == [
            (name or "message", "\n".join(lines)) for name, lines in events
        ]

    def test_comments_and_unknown_fields_are_skipped_and_one_space_is_stripped(self) -> None:
        parser = SSEParser("test")
        events = parser.feed(b": keep-alive\nid: 7\nretry: 10\nfoo: bar\ndata:  two\n\n")
        assert [(e.data, e.id, e.retry) for e in events] == [(" two", "7", 10)]

    def test_an_event_without_its_blank_line_is_not_dispatched(self) -> None:
        parser = SSEParser("test")
        assert parser.feed(b"data: half") == []
        assert parser.close() == []

    def test_an_endless_event_is_refused_naming_the_limit(self) -> None:
        parser = SSEParser("test", limit=1000)
        with pytest.raises(ProviderError) as info:
            for _ in range(20):
                parser.feed(b"data: " + b"x" * 100 + b"\n")
        assert "exceeds the limit of 1000 bytes" in str(info.value)
        assert info.value.retryable is False


async def test_calls_past_the_pool_queue_beyond_the_connect_timeout(
    server: FakeChatCompletions,
) -> None:
    # 16 one-second calls through a pool of 2: the last wait 7 s for a connection, longer
    # than the 5 s connect timeout, which bounds the socket connect only
    server.response_delay = 1.0
    config = AgentConfig(
        name="pool",
        provider="openai",
        base_url=server.base_url,
        api_key=API_KEY,
        max_retries=0,
        provider_options={"transport": "direct", "max_connections": 2},
    )
    async with Agent(config) as agent:
        results = await asyncio.gather(*(agent.run(f"call {i}") for i in range(16)))
    assert [r.status.error for r in results if not r.success] == []
    assert server.max_open_connections <= 2
    assert len(server.requests) == 16


def test_the_pool_size_must_be_a_whole_number(server: FakeChatCompletions) -> None:
    with pytest.raises(PluginError, match=r'"max_connections"\] must be a whole number > 0'):
        provider_for(server, transport="direct", max_connections=0)
