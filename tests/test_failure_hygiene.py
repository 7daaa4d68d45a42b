"""What a failed run hands out holds nothing it should not: no key, prompt or media reachable
from the error, no prompt on a span unless content tracing is on; and a stream can be closed
from any task, at any time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from oma_core import (
    Agent,
    AgentConfig,
    Capabilities,
    LLMMessage,
    OpenMultiAgent,
    PluginHost,
    ProviderError,
    RunSettings,
    TextBlock,
    image_base64,
)
from oma_core.testing import assert_holds_no_secret, reachable_secrets
from oma_core.toolkit import ProviderRequest, ProviderResponse, ResponseComplete, TextDelta

KEY = "sk-test-0123456789abcdefSECRET"
PROMPT = "the secret plan is to paint the moon"
PIXELS = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAA"
    "BJRU5ErkJggg=="
)


class _Response:
    """What an SDK error keeps: the request it sent, headers and all."""

    def __init__(self, request: ProviderRequest) -> None:
        self.headers = {"authorization": f"Bearer {KEY}"}
        self.request = request


class SdkError(Exception):
    def __init__(self, request: ProviderRequest) -> None:
        super().__init__("400 Bad Request")
        self.response = _Response(request)
        self.body = {"echo": [m.content[0] for m in request.messages]}


class Leaky:
    """A careless provider: it raises its ProviderError inside ``except`` (so the SDK error,
    holding the key, the prompt and the image, is its ``__context__``) and keeps a non-plain
    attribute on it."""

    name = "leaky"
    display_name = "Leaky"
    capabilities = Capabilities.everything()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        try:
            raise SdkError(request)
        except SdkError as sdk:
            error = ProviderError(f"bad request for {KEY}", status_code=400, provider="Leaky")
            error.sdk_error = sdk  # type: ignore[attr-defined]
            raise error from None


def _conversation() -> list[dict[str, Any]]:
    picture = image_base64(PIXELS, "image/png")
    return [{"role": "user", "content": [picture, {"type": "text", "text": PROMPT}]}]


async def test_a_failed_runs_error_holds_no_key_prompt_or_media() -> None:
    agent = Agent(AgentConfig(name="a", provider=Leaky(), max_retries=0))
    result = await agent.run(_conversation())
    error = result.status.error
    assert isinstance(error, ProviderError) and error.status_code == 400
    assert_holds_no_secret(error, KEY, PROMPT, PIXELS, tracebacks=True)
    assert error.__context__ is None and error.__cause__ is None


async def test_the_walk_would_have_found_them() -> None:
    """The check above is not vacuous: the raw error reaches all three."""
    try:
        await Leaky().complete(ProviderRequest("m", tuple(_msgs())))
    except ProviderError as raw:
        assert reachable_secrets(raw, [KEY, PROMPT, PIXELS]) == {KEY, PROMPT, PIXELS}


def _msgs() -> list[LLMMessage]:
    from oma_core import load_messages

    return list(load_messages(_conversation()))


async def test_a_streamed_failure_and_an_orchestrated_one_hold_nothing_either() -> None:
    config = AgentConfig(name="a", provider=Leaky(), max_retries=0)
    events = [e async for e in Agent(config).stream(_conversation())]
    assert events[-2].type == "error"
    assert_holds_no_secret(events[-2].data, KEY, PROMPT, PIXELS, tracebacks=True)
    seen: list[Any] = []
    oma = OpenMultiAgent(on_progress=seen.append, plugins=PluginHost(load_entrypoints=False))
    result = await oma.run_agent(config, _conversation())
    assert_holds_no_secret(result.status.error, KEY, PROMPT, PIXELS, tracebacks=True)
    (failed,) = [e for e in seen if e.type == "error"]
    assert_holds_no_secret(failed.data["error"], KEY, PROMPT, PIXELS, tracebacks=True)


# -- spans carry no prompt on error unless content tracing is on ----------------------------------


class Echoing:
    """A provider whose error text quotes the prompt, as some services do."""

    name = "echoing"
    display_name = "Echoing"
    capabilities = Capabilities.everything()

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        text = request.messages[-1].content[0].text  # type: ignore[union-attr]
        raise ProviderError(f"could not parse: {text}", status_code=400, provider="Echoing")


@pytest.mark.parametrize("content", [False, True])
async def test_error_text_on_spans_is_the_class_and_status_unless_content_tracing(
    content: bool,
) -> None:
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    oma = OpenMultiAgent(
        plugins=PluginHost(load_entrypoints=False),
        tracer_provider=tracing,
        trace_content=content,
    )
    config = AgentConfig(name="a", provider=Echoing(), max_retries=0)
    result = await oma.run_agent(config, PROMPT)
    assert result.status.code == "error"
    spans = exporter.get_finished_spans()
    assert {s.name.split()[0] for s in spans} == {"invoke_agent", "chat"}
    texts = [
        str(value)
        for span in spans
        for value in [
            span.status.description,
            *(str(event.attributes) for event in span.events),
            *(str(v) for v in (span.attributes or {}).values()),
        ]
    ]
    assert any("the secret plan" in t for t in texts) is content
    if not content:
        assert any("ProviderError (status 400)" in t for t in texts)


# -- closing a stream from anywhere ---------------------------------------------------------------


class Slow:
    """Streams one chunk, then waits; counts how often its stream was closed."""

    name = "slow"
    display_name = "Slow"
    capabilities = Capabilities.everything()

    def __init__(self) -> None:
        self.closed = 0

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        try:
            yield TextDelta("first ")
            await asyncio.sleep(30)
            message = LLMMessage("assistant", (TextBlock("never"),))
            yield ResponseComplete(ProviderResponse(message))
        finally:
            self.closed += 1


async def test_closing_a_stream_from_another_task_stops_the_run() -> None:
    provider = Slow()
    stream = Agent(AgentConfig(name="a", provider=provider)).stream("hi")
    seen: list[str] = []
    started = asyncio.Event()

    async def consume() -> None:
        async for event in stream:
            seen.append(event.type)
            started.set()

    reader = asyncio.create_task(consume())
    await started.wait()
    await stream.aclose()  # while the reader waits for the next event
    await asyncio.wait_for(reader, 5)  # the reader's loop simply ended
    assert seen == ["text"]
    assert provider.closed == 1
    await stream.aclose()  # twice is fine
    assert provider.closed == 1


async def test_closing_a_stream_before_and_after_iteration_is_fine() -> None:
    provider = Slow()
    stream = Agent(AgentConfig(name="a", provider=provider)).stream("hi")
    await stream.aclose()
    assert [e async for e in stream] == []
    assert provider.closed == 0  # never started
    other = Agent(AgentConfig(name="a")).stream("hi")
    events = [e.type async for e in other]
    await other.aclose()
    assert events[-1] == "done"


async def test_a_reader_cancelled_from_outside_while_another_task_closes_stays_cancelled() -> None:
    provider = Slow()
    stream = Agent(AgentConfig(name="a", provider=provider)).stream("hi")
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in stream:
            started.set()

    reader = asyncio.create_task(consume())
    await started.wait()
    reader.cancel()  # someone else cancels the reader too
    await stream.aclose()
    with pytest.raises(asyncio.CancelledError):
        await reader
    assert provider.closed == 1


async def test_settings_reach_a_plain_agent_run() -> None:
    result = await Agent(AgentConfig(name="a")).run("hi", settings=RunSettings(run_id="r1"))
    assert result.success
