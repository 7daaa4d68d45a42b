"""The provider conformance suite: what every provider plugin proves against its fake server.

A plugin subclasses ``ProviderConformance`` in its tests, names its provider, supplies a
``server`` fixture (its fake server, a ``FakeServer`` subclass) and three small hooks, and
inherits the tests::

    import pytest
    from oma_core.testing.conformance import ProviderConformance, Sample

    class TestAnthropicConformance(ProviderConformance):
        provider_name = "anthropic"

        @pytest.fixture
        def server(self, fake_server_factory):      # from oma_core.testing.pytest_plugin
            return fake_server_factory(FakeAnthropic)

        def script_text(self, server, text): server.reply_text(text)
        def script_tool_call(self, server, call_id, name, arguments): ...
        def assert_on_wire(self, sample, request): ...   # the block in this provider's shape

The tests drive the real path, ``Agent(AgentConfig(provider=NAME, base_url=server.url, ...))``
over HTTP to the fake server, and check: every block the provider declares (its
``Capabilities``) reaches the wire in the provider's shape; every block it does not declare is
refused with ``UnsupportedContentBlockError`` and no request is sent; invalid input never
reaches the wire; streaming and non-streaming agree; usage is reported; HTTP errors map to
``ProviderError`` with the right ``status_code``, ``retryable`` and ``retry_after``; retries
send exactly the expected number of requests; a cancelled stream closes its connection; 200
concurrent runs all complete with at least 50 in flight; ``render`` is what reaches the wire.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs
import pytest

from ..agent import Agent, AgentConfig, RunResult
from ..capabilities import IN_TOOL_RESULT, Capabilities, ProviderSpec
from ..errors import InvalidMessageError, ProviderError, UnsupportedContentBlockError
from ..plugins import PluginHost
from ..providers import (
    Provider,
    ProviderRequest,
    ProviderResponse,
    ProviderSettings,
    ResponseComplete,
    TextDelta,
    ToolCall,
)
from ..validation import load_messages
from .fake_server import (
    Delay,
    DropConnection,
    FakeServer,
    HTTPError,
    RecordedRequest,
    SlowStream,
)

__all__ = ["MEDIA_SAMPLES", "ProviderConformance", "Sample", "declared", "samples"]

# Smallest payloads whose first bytes are what their media type says (fake servers may check).
MEDIA_SAMPLES: Mapping[str, bytes] = {
    "image/png": bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    ),
    "image/jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9",
    "image/gif": b"GIF89a\x01\x00\x01\x00\x00\x00\x00;",
    "image/webp": b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00"
    b"\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00",
    "image/bmp": b"BM\x1e\x00\x00\x00\x00\x00\x00\x00\x1a\x00\x00\x00",
    "video/mp4": b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom",
    "application/pdf": b"%PDF-1.4\n%oma conformance sample\n%%EOF\n",
    "text/plain": b"a plain text file\n",
}
_EXTENSIONS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
    "image/bmp": "bmp",
    "video/mp4": "mp4",
    "application/pdf": "pdf",
    "text/plain": "txt",
}


@attrs.frozen
class Sample:
    """One block in one place, inside the smallest valid conversation that carries it.

    ``where`` is the role, or ``"tool_result"`` for a part inside a tool result; ``locator``
    is ``(message index, block index, part index or None)`` of the block in ``conversation``
    (the section-2 JSON shape), so a plugin can find its counterpart on the wire.
    """

    block_type: str
    where: str
    source: str | None
    media_type: str | None
    conversation: tuple[Mapping[str, Any], ...]
    locator: tuple[int, int, int | None]

    @property
    def id(self) -> str:
        parts = [self.block_type, self.where, self.source or "", self.media_type or ""]
        return "-".join(p for p in parts if p)

    @property
    def block(self) -> Mapping[str, Any]:
        """The sample's block (or tool-result part) in the section-2 JSON shape."""
        message, index, part = self.locator
        block = self.conversation[message]["content"][index]
        return block if part is None else block["content"][part]  # type: ignore[no-any-return]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _assistant(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def _source(kind: str, media_type: str, marker: str) -> dict[str, Any]:
    if kind == "base64":
        data = base64.b64encode(MEDIA_SAMPLES[media_type]).decode()
        return {"type": "base64", "media_type": media_type, "data": data}
    url = f"https://example.com/oma-conformance/{marker}.{_EXTENSIONS[media_type]}"
    return {"type": "url", "media_type": media_type, "url": url}


def _tool_round(*parts: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """A user question, an assistant tool call and the user's tool result carrying ``parts``."""
    call = {"type": "tool_use", "id": "call_conf_1", "name": "lookup", "input": {"q": "x"}}
    content: Any = list(parts) if parts else "the tool's answer"
    result = {"type": "tool_result", "tool_use_id": "call_conf_1", "content": content}
    return (_user(_text("use the tool")), _assistant(call), _user(result))


def samples() -> Iterator[Sample]:
    """Every block the message model has, in every place it may appear, per source kind and
    a range of media types (including ones few providers take)."""
    yield Sample("text", "user", None, None, (_user(_text("conformance text")),), (0, 0, None))
    yield Sample(
        "text",
        "assistant",
        None,
        None,
        (_user(_text("hi")), _assistant(_text("conformance reply")), _user(_text("go on"))),
        (1, 0, None),
    )
    for family, types in (
        ("image", ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp")),
        ("video", ("video/mp4",)),
    ):
        for media_type in types:
            for kind in ("base64", "url"):
                marker = f"{family}-{kind}"
                block = {"type": family, "source": _source(kind, media_type, marker)}
                yield Sample(
                    family,
                    "user",
                    kind,
                    media_type,
                    (_user(_text("what is this?"), block),),
                    (0, 1, None),
                )
                yield Sample(
                    family,
                    "assistant",
                    kind,
                    media_type,
                    (_user(_text("show me")), _assistant(block), _user(_text("thanks"))),
                    (1, 0, None),
                )
    yield Sample("tool_use", "assistant", None, None, _tool_round(), (1, 0, None))
    yield Sample("tool_result", "user", None, None, _tool_round(), (2, 0, None))
    reasoning = {"type": "reasoning", "text": "conformance thinking", "signature": "sig-conf"}
    yield Sample(
        "reasoning",
        "assistant",
        None,
        None,
        (_user(_text("think")), _assistant(reasoning, _text("done")), _user(_text("more"))),
        (1, 0, None),
    )
    for media_type in ("image/png", "image/jpeg", "image/bmp"):
        for kind in ("base64", "url"):
            image = {"type": "image", "source": _source(kind, media_type, f"tool-image-{kind}")}
            yield Sample(
                "image",
                IN_TOOL_RESULT,
                kind,
                media_type,
                _tool_round(_text("the chart:"), image),
                (2, 0, 1),
            )
    for media_type in ("application/pdf", "text/plain"):
        for kind in ("base64", "url"):
            file = {
                "type": "file",
                "filename": f"report.{_EXTENSIONS[media_type]}",
                "source": _source(kind, media_type, f"tool-file-{kind}"),
            }
            yield Sample(
                "file",
                IN_TOOL_RESULT,
                kind,
                media_type,
                _tool_round(_text("the file:"), file),
                (2, 0, 1),
            )


def declared(capabilities: Capabilities, sample: Sample) -> bool:
    """Whether ``capabilities`` carry the sample's block in the sample's place."""
    messages = load_messages(sample.conversation)
    message, index, part = sample.locator
    block = messages[message].content[index]
    if part is None:
        single = (attrs.evolve(messages[message], content=(block,)),)
    else:
        single = (attrs.evolve(messages[message], content=(_only_part(block, part),)),)
    try:
        capabilities.check(single, "probe")
    except UnsupportedContentBlockError:
        return False
    return True


def _only_part(block: Any, part: int) -> Any:
    return attrs.evolve(block, content=(block.content[part],))


_INVALID_INPUTS: tuple[Any, ...] = (
    [],
    [{"role": "system", "content": [_text("x")]}],
    [{"role": "user", "content": "not a list"}],
    [_user({"type": "image", "source": {"type": "url", "media_type": "image/png",
                                        "url": "file:///etc/passwd"}})],
    [_user({"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                        "data": "not base64!"}})],
    [_user({"type": "text", "text": "x", "magic": True})],
    [_user({"type": "tool_use", "id": "a", "name": "b", "input": {}})],
)  # fmt: skip


class ProviderConformance:
    """Inherit in a ``Test...`` class; see the module docstring. Not collected by itself."""

    #: The registered provider name (an entry point of the ``oma`` group).
    provider_name: str = ""
    #: The model sent; None lets the provider's default stand.
    model: str | None = None
    api_key: str = "test-key"

    # -- what a plugin supplies ------------------------------------------------------------

    def script_text(self, server: Any, text: str) -> None:
        """Make the server's next reply an assistant text."""
        raise NotImplementedError

    def script_tool_call(
        self, server: Any, call_id: str, name: str, arguments: Mapping[str, Any]
    ) -> None:
        """Make the server's next reply one tool call."""
        raise NotImplementedError

    def assert_on_wire(self, sample: Sample, request: RecordedRequest) -> None:
        """Assert that ``sample.block`` reached the wire in this provider's shape."""
        raise NotImplementedError

    # -- helpers a plugin may use or override ------------------------------------------------

    def settings(self, server: FakeServer, **options: Any) -> ProviderSettings:
        return ProviderSettings(base_url=server.url, api_key=self.api_key, options=options)

    def agent(self, server: FakeServer, **config: Any) -> Agent:
        values: dict[str, Any] = {
            "name": "conformance",
            "provider": self.provider_name,
            "base_url": server.url,
            "api_key": self.api_key,
            "model": self.model,
            "max_retries": 0,
        }
        values.update(config)
        return Agent(AgentConfig(**values))

    def provider(self, server: FakeServer, **options: Any) -> Provider:
        return self.spec().factory(self.settings(server, **options))

    def spec(self) -> ProviderSpec:
        return PluginHost.default().provider_spec(self.provider_name)

    def request(self, text: str = "hello") -> ProviderRequest:
        messages = load_messages([_user(_text(text))])
        return ProviderRequest(model=self.model or self.spec().default_model, messages=messages)

    async def run(
        self, server: FakeServer, conversation: Sequence[Any], **config: Any
    ) -> RunResult:
        async with self.agent(server, **config) as agent:
            return await agent.run(list(conversation))

    # -- the suite ---------------------------------------------------------------------------

    def test_provider_is_registered_with_its_capabilities(self) -> None:
        spec = self.spec()
        assert spec.name == self.provider_name
        assert isinstance(spec.capabilities, Capabilities)
        assert spec.display_name

    async def test_declared_blocks_reach_the_wire(self, server: FakeServer) -> None:
        capabilities = self.spec().capabilities
        checked = []
        for sample in samples():
            if not declared(capabilities, sample):
                continue
            if not _scaffolding_declared(capabilities, sample):
                continue
            server.reset()
            result = await self.run(server, sample.conversation)
            assert result.success, f"{sample.id}: {result.status.error!r}"
            assert len(server.requests) == 1, sample.id
            self.assert_on_wire(sample, server.requests[0])
            checked.append(sample.id)
        assert checked, "the provider declares no block the suite can send"

    async def test_undeclared_blocks_are_refused_before_any_request(
        self, server: FakeServer
    ) -> None:
        capabilities = self.spec().capabilities
        display_name = self.spec().display_name
        for sample in samples():
            if declared(capabilities, sample):
                continue
            server.reset()
            result = await self.run(server, sample.conversation)
            error = result.status.error
            assert isinstance(error, UnsupportedContentBlockError), (sample.id, error)
            assert error.block_type == sample.block_type, sample.id
            assert error.provider == display_name
            assert server.requests == [], f"{sample.id} reached the wire"

    async def test_invalid_messages_never_reach_the_wire(self, server: FakeServer) -> None:
        async with self.agent(server) as agent:
            for bad in _INVALID_INPUTS:
                with pytest.raises(InvalidMessageError):
                    agent.run(bad)
                with pytest.raises(InvalidMessageError):
                    agent.stream(bad)
        assert server.requests == []

    async def test_streaming_and_complete_give_the_same_text_reply(
        self, server: FakeServer
    ) -> None:
        text = "The quick brown fox jumps over the lazy dog, twice."
        self.script_text(server, text)
        self.script_text(server, text)
        provider = self.provider(server)
        try:
            whole = await provider.complete(self.request())
            deltas, final = await _drain(provider, self.request())
        finally:
            await provider.aclose()
        assert final == whole
        assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == text
        assert [b.type for b in whole.message.content] == ["text"]

    async def test_streaming_and_complete_give_the_same_tool_call(self, server: FakeServer) -> None:
        arguments = {"city": "Paris", "days": 3, "units": ["C"], "nested": {"a": None}}
        self.script_tool_call(server, "call_42", "forecast", arguments)
        self.script_tool_call(server, "call_42", "forecast", arguments)
        provider = self.provider(server)
        try:
            whole = await provider.complete(self.request())
            events, final = await _drain(provider, self.request())
        finally:
            await provider.aclose()
        assert final == whole
        calls = [e.block for e in events if isinstance(e, ToolCall)]
        assert [c.id for c in calls] == ["call_42"]
        assert calls[0].name == "forecast"
        assert _plain(calls[0].input) == arguments
        assert calls[0] in whole.message.content

    async def test_agent_run_and_stream_give_the_same_result(self, server: FakeServer) -> None:
        self.script_text(server, "same either way")
        self.script_text(server, "same either way")
        async with self.agent(server) as agent:
            ran = await agent.run("hi")
            async with agent.stream("hi") as events:
                streamed = [e async for e in events]
        done = streamed[-1].data
        assert ran.success and done.success
        assert ran.output == done.output == "same either way"
        assert ran.messages == done.messages
        assert ran.usage == done.usage

    async def test_usage_is_reported(self, server: FakeServer) -> None:
        provider = self.provider(server)
        try:
            whole = await provider.complete(self.request())
            _, final = await _drain(provider, self.request())
        finally:
            await provider.aclose()
        for response in (whole, final):
            assert response.usage.input_tokens > 0
            assert response.usage.output_tokens > 0

    @pytest.mark.parametrize(
        ("status", "retryable"), [(400, False), (401, False), (404, False), (429, True),
                                  (500, True), (503, True)]
    )  # fmt: skip
    async def test_http_errors_map_to_provider_error(
        self, server: FakeServer, status: int, retryable: bool
    ) -> None:
        for streaming in (False, True):
            server.enqueue(HTTPError(status, message="scripted failure"))
            error = await _failure(self.provider(server), self.request(), streaming)
            assert error.status_code == status
            assert error.retryable is retryable
            assert error.provider == self.spec().display_name

    async def test_retry_after_headers_are_parsed(self, server: FakeServer) -> None:
        server.enqueue(HTTPError(429, retry_after=3))
        error = await _failure(self.provider(server), self.request(), False)
        assert error.retry_after == 3.0
        server.enqueue(HTTPError(429, retry_after=3, retry_after_ms=1500))
        error = await _failure(self.provider(server), self.request(), True)
        assert error.retry_after == 1.5

    async def test_dropped_connection_is_a_retryable_error_without_status(
        self, server: FakeServer
    ) -> None:
        for stage in ("before_response", "mid_body"):
            for streaming in (False, True):
                server.enqueue(DropConnection(stage))
                error = await _failure(self.provider(server), self.request(), streaming)
                assert error.status_code is None, (stage, streaming)
                assert error.retryable is True, (stage, streaming)

    @pytest.mark.parametrize("streaming", [False, True])
    async def test_retries_send_exactly_the_expected_requests(
        self, server: FakeServer, streaming: bool
    ) -> None:
        server.enqueue(HTTPError(429, retry_after_ms=10), HTTPError(503))
        async with self.agent(server, max_retries=2, retry_delay=0.01) as agent:
            if streaming:
                async with agent.stream("hi") as events:
                    result = [e async for e in events][-1].data
            else:
                result = await agent.run("hi")
        assert result.success
        assert len(server.requests) == 3
        server.reset()
        server.enqueue(HTTPError(400))
        async with self.agent(server, max_retries=2, retry_delay=0.01) as agent:
            failed = await agent.run("hi")
        assert not failed.success
        assert len(server.requests) == 1

    async def test_cancelling_a_stream_closes_its_connection(self, server: FakeServer) -> None:
        self.script_text(server, "a long answer " * 20)
        server.enqueue(SlowStream(event_delay=0.05))
        provider = self.provider(server)
        try:
            events = provider.stream(self.request())
            first = await anext(events)
            assert isinstance(first, TextDelta)
            assert server.open_connections == 1
            await events.aclose()  # type: ignore[attr-defined]
            assert await server.async_wait_idle(timeout=2.0), "the stream's connection stayed open"
        finally:
            await provider.aclose()

    async def test_cancelling_an_agent_stream_closes_its_connection(
        self, server: FakeServer
    ) -> None:
        self.script_text(server, "a long answer " * 20)
        server.enqueue(SlowStream(event_delay=0.05))
        async with self.agent(server) as agent:
            async with agent.stream("hi") as events:
                async for event in events:
                    if event.type == "text":
                        break
            assert await server.async_wait_idle(timeout=2.0)

    async def test_a_cancelled_task_leaves_no_open_connection(self, server: FakeServer) -> None:
        server.enqueue(Delay(5.0))
        async with self.agent(server) as agent:
            task = asyncio.ensure_future(agent.run("hi"))
            assert await server.async_wait_until(lambda: server.in_flight == 1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await server.async_wait_idle(timeout=2.0)

    async def test_many_concurrent_runs_all_complete(self, server: FakeServer) -> None:
        server.response_delay = 0.3
        async with self.agent(server) as agent:
            results = await asyncio.gather(*(agent.run(f"run {i}") for i in range(200)))
        assert all(r.success for r in results)
        assert len(server.requests) == 200
        assert server.max_in_flight >= 50

    async def test_render_is_what_reaches_the_wire(self, server: FakeServer) -> None:
        capabilities = self.spec().capabilities
        for sample in samples():
            if not declared(capabilities, sample):
                continue
            if not _scaffolding_declared(capabilities, sample):
                continue
            server.reset()
            async with self.agent(server, system_prompt="be brief") as agent:
                rendered = agent.provider().render(agent.build_request(list(sample.conversation)))
                result = await agent.run(list(sample.conversation))
            assert result.success, sample.id
            assert server.requests[0].json == rendered, sample.id


def _scaffolding_declared(capabilities: Capabilities, sample: Sample) -> bool:
    """Whether the blocks around the sample (text, tool calls and results) are carried too."""
    message, index, part = sample.locator
    around: list[Any] = []
    for i, m in enumerate(sample.conversation):
        blocks = []
        for j, block in enumerate(m["content"]):
            if (i, j) == (message, index):
                if part is None:
                    continue
                block = dict(
                    block, content=[p for k, p in enumerate(block["content"]) if k != part]
                )
            blocks.append(block)
        if blocks:
            around.append(dict(m, content=blocks))
    try:
        capabilities.check(load_messages(around, allow_empty=True), "probe")
    except UnsupportedContentBlockError:
        return False
    return True


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


async def _drain(
    provider: Provider, request: ProviderRequest
) -> tuple[list[Any], ProviderResponse]:
    events = [e async for e in provider.stream(request)]
    assert isinstance(events[-1], ResponseComplete), "a stream must end with ResponseComplete"
    assert not any(isinstance(e, ResponseComplete) for e in events[:-1])
    return events[:-1], events[-1].response


async def _failure(provider: Provider, request: ProviderRequest, streaming: bool) -> ProviderError:
    try:
        with pytest.raises(ProviderError) as caught:
            if streaming:
                async for _ in provider.stream(request):
                    pass
            else:
                await provider.complete(request)
    finally:
        await provider.aclose()
    return caught.value
