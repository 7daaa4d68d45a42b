"""What a validated structured output adds to a run, and to each streamed chunk.

Run: ``python bench/structured.py``. The provider answers at once (no I/O) with the same JSON
text to an agent without an output type and to one with ``output_type`` (an attrs class, a
pydantic model, a JSON Schema dict), so the difference is the structured-output work per run:
the schema's instructions in the system prompt, finding the JSON in the reply, checking it and
building the object; in native and tool modes, the schema handed to the provider and the
output read from the reply's text or the output tool's call instead of instructions. It also
times what the OpenAI plugin adds to a request body for native mode (the schema made strict).
Streaming is timed per chunk against the same reply streamed as plain text without an output
type: in prompted mode (text chunks parsed as they arrive) and in tool mode (the output tool's
arguments streamed as ``ToolCallDelta`` pieces, one character each, then the whole call).
Every call is checked (success, and the object it returned). Goals:
<= 100 us added per run (a small object), <= 20 us added per streamed chunk (partial parse).
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import attrs
import pydantic

from oma_core import Agent, AgentConfig, Capabilities, PluginHost
from oma_core.messages import LLMMessage, TextBlock, ToolUseBlock
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ResponseComplete,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)

RUN_GOAL_US = 100.0
CHUNK_GOAL_US = 20.0
REPLY = '{"number": "INV-2026-0042", "total": 1234.5, "paid": false, "lines": ["a", "b", "c"]}'


@attrs.frozen
class Invoice:
    number: str
    total: float
    paid: bool
    lines: list[str]


class InvoiceModel(pydantic.BaseModel):
    number: str
    total: float
    paid: bool
    lines: list[str]


SCHEMA = {
    "type": "object",
    "properties": {
        "number": {"type": "string"},
        "total": {"type": "number"},
        "paid": {"type": "boolean"},
        "lines": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["number", "total", "paid", "lines"],
}


class InstantProvider:
    """Answers at once with ``REPLY``; streams it one character per delta."""

    name = display_name = "instant"

    def __init__(self) -> None:
        self.response = ProviderResponse(LLMMessage("assistant", (TextBlock(REPLY),)), Usage(3, 3))

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self.response

    async def stream(self, request: ProviderRequest) -> AsyncIterator[object]:
        for char in REPLY:
            yield TextDelta(char)
        yield ResponseComplete(self.response)


class NativeProvider(InstantProvider):
    """``InstantProvider`` declaring native mode: the request carries the schema as
    ``ProviderRequest.output`` (checked), and the reply's text is the JSON."""

    capabilities = attrs.evolve(Capabilities.everything(), output_modes={"native", "prompted"})

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        assert request.output is not None and request.output.mode == "native"
        return self.response


class ToolProvider(InstantProvider):
    """``InstantProvider`` declaring tool mode: it answers with the output tool's call."""

    capabilities = attrs.evolve(Capabilities.everything(), output_modes={"tool", "prompted"})

    def __init__(self) -> None:
        call = ToolUseBlock("c1", "final_result", json.loads(REPLY))
        self.response = ProviderResponse(LLMMessage("assistant", (call,)), Usage(3, 3))

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        assert request.output is not None and request.output.mode == "tool"
        return self.response

    async def stream(self, request: ProviderRequest) -> AsyncIterator[object]:
        assert request.output is not None and request.output.mode == "tool"
        for char in REPLY:
            yield ToolCallDelta(0, char, "final_result", "c1")
        block = self.response.message.content[0]
        assert isinstance(block, ToolUseBlock)
        yield ToolCall(block)
        yield ResponseComplete(self.response)


async def best_of(repeats: int, count: int, body: Callable[[], Awaitable[object]]) -> float:
    """The best mean seconds per call over ``repeats`` rounds of ``count`` calls."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(count):
            await body()
        best = min(best, (time.perf_counter() - started) / count)
    return best


def agent(output_type: Any, provider: Any = None) -> Agent[Any]:
    config = AgentConfig("bench", provider=provider or InstantProvider(), output_type=output_type)
    return Agent(config, plugins=PluginHost(load_entrypoints=False))


def openai_body_cost() -> tuple[float, float] | None:
    """Seconds to build one OpenAI Chat Completions body without and with the native output
    (the strict schema made per call); None when oma-openai is not installed."""
    try:
        from oma_openai.convert import request_body
        from oma_openai.presets import preset
    except ImportError:
        return None
    from oma_core._output import output_spec

    spec = output_spec(Invoice)
    assert spec is not None
    plain = ProviderRequest("gpt-test", (LLMMessage("user", (TextBlock("go"),)),))
    native = attrs.evolve(plain, output=spec.request("native"))
    openai = preset("openai")
    timings = []
    for request in (plain, native):
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(5000):
                request_body(request, openai, stream=False)
            best = min(best, (time.perf_counter() - started) / 5000)
        timings.append(best)
    return timings[0], timings[1]


class LongProvider:
    """Answers with ``LONG`` (as text, or as the output tool's call in tool mode), streamed in
    pieces of ``LONG_PIECE`` characters (the call's arguments as ``ToolCallDelta`` pieces)."""

    name = display_name = "long"

    def __init__(self, tool: bool = False) -> None:
        self.tool = tool
        if tool:
            call = ToolUseBlock("c1", "final_result", json.loads(LONG))
            message = LLMMessage("assistant", (call,))
            self.capabilities = attrs.evolve(
                Capabilities.everything(), output_modes={"tool", "prompted"}
            )
        else:
            message = LLMMessage("assistant", (TextBlock(LONG),))
        self.response = ProviderResponse(message, Usage(3, 3))

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self.response

    async def stream(self, request: ProviderRequest) -> AsyncIterator[object]:
        for start in range(0, len(LONG), LONG_PIECE):
            piece = LONG[start : start + LONG_PIECE]
            yield ToolCallDelta(0, piece, "final_result", "c1") if self.tool else TextDelta(piece)
        if self.tool:
            block = self.response.message.content[0]
            assert isinstance(block, ToolUseBlock)
            yield ToolCall(block)
        yield ResponseComplete(self.response)


@attrs.frozen
class Essay:
    title: str
    body: str


LONG = json.dumps({"title": "On streams", "body": "x" * (512 * 1024)})
LONG_PIECE = 4
#: What reading a long output as it streams may parse in all, in multiples of its size (one
#: parse of the whole is 1x; read again at every piece, 512 KB in 4-char pieces is ~65,000x).
LONG_PARSE_GOAL = 10.0


async def cpu_seconds(body: Callable[[], Awaitable[object]], repeats: int = 5) -> float:
    """The least event-loop CPU seconds (``time.process_time``) of ``repeats`` calls."""
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        await body()
        best = min(best, time.process_time() - started)
    return best


def long_parse_factor(tool: bool) -> float:
    """The characters parsed to show ``LONG``'s partials as its pieces arrive, over its size
    (counted, not timed: ``PartialText.read_chars``)."""
    from oma_core._output import PartialText, StreamedOutputCall, output_spec

    pieces = [LONG[i : i + LONG_PIECE] for i in range(0, len(LONG), LONG_PIECE)]
    if tool:
        spec = output_spec(Essay)
        assert spec is not None
        call = StreamedOutputCall(spec, "final_result")
        for piece in pieces:
            call.feed(ToolCallDelta(0, piece, "final_result", "c1"))
        text = call.text
    else:
        text = PartialText()
        for piece in pieces:
            text.feed(piece)
    text.flush()
    return text.read_chars / len(LONG)


async def long_stream_rows() -> None:
    """A 512 KB output streamed in 4-character pieces: the event-loop CPU of the whole
    streamed run per chunk (partial output read as it arrives), beside the same text streamed
    without an output type and the output checked whole in an unstreamed run; and the
    characters parsed, over the output's size."""
    want = Essay("On streams", "x" * (512 * 1024))
    chunks = len(LONG) / LONG_PIECE

    async def once(chosen: Agent[Any], stream: bool, typed: bool) -> None:
        if not stream:
            result = await chosen.run("go")
        else:
            async for event in chosen.stream("go"):
                result = event.data
        assert result.success and (result.structured == want if typed else True)

    plain = agent(None, LongProvider())
    plain_stream = await cpu_seconds(lambda: once(plain, True, False))
    plain_run = await cpu_seconds(lambda: once(plain, False, False))
    for label, tool in (("text", False), ("tool call", True)):
        typed = agent(Essay, LongProvider(tool))
        whole = await cpu_seconds(functools.partial(once, typed, False, True)) - plain_run
        streamed = await cpu_seconds(functools.partial(once, typed, True, True))
        per_chunk = streamed / chunks * 1e6
        factor = long_parse_factor(tool)
        verdict = "ok" if factor <= LONG_PARSE_GOAL and per_chunk <= CHUNK_GOAL_US else "MISSED"
        print(
            f"512 KB in {LONG_PIECE}-char pieces, {label:<9} stream {streamed:6.3f} s "
            f"({per_chunk:5.2f} us/chunk, goal <= {CHUNK_GOAL_US:.0f} us; untyped text "
            f"{plain_stream:5.3f} s), checked whole {whole:6.4f} s; parsed {factor:4.1f}x its "
            f"size (goal <= {LONG_PARSE_GOAL:.0f}x)  {verdict}"
        )


async def main() -> None:
    plain = agent(None)
    cases: dict[str, tuple[Any, Any]] = {
        "attrs class": (Invoice, None),
        "pydantic model": (InvoiceModel, None),
        "JSON Schema dict": (SCHEMA, None),
        "attrs, native mode": (Invoice, NativeProvider()),
        "attrs, tool mode": (Invoice, ToolProvider()),
    }

    async def plain_run() -> object:
        result = await plain.run("go")
        assert result.success and result.structured is None
        return result

    await best_of(1, 200, plain_run)  # warm up
    base = await best_of(5, 2000, plain_run)
    print(f"Agent.run without output_type          {base * 1e6:8.1f} us/run")
    for label, (output_type, provider) in cases.items():
        typed = agent(output_type, provider)
        expected = await typed.run("go")
        assert expected.success, expected.status

        async def typed_run(typed: Agent[Any] = typed, want: Any = expected.structured) -> object:
            result = await typed.run("go")
            assert result.success and result.structured == want
            return result

        await best_of(1, 200, typed_run)
        took = await best_of(5, 2000, typed_run)
        added = (took - base) * 1e6
        verdict = "ok" if added <= RUN_GOAL_US else "MISSED"
        print(
            f"  with {label:<18}  added {added:8.1f} us/run   (goal <= {RUN_GOAL_US:.0f} us)"
            f"  {verdict}"
        )

    async def drain(chosen: Agent[Any]) -> object:
        last = None
        async for event in chosen.stream("go"):
            last = event
        assert last is not None and last.data.success
        return last

    plain_stream = await best_of(5, 50, lambda: drain(plain))
    streams = {"prompted": agent(Invoice), "tool mode": agent(Invoice, ToolProvider())}
    for label, typed in streams.items():
        partials = [event async for event in typed.stream("go") if event.type == "partial"]
        # shown as it arrives (read again as it grows by an eighth: PartialText)
        assert len(partials) >= 10, (label, len(partials))
        typed_stream = await best_of(5, 50, functools.partial(drain, typed))
        per_chunk = (typed_stream - plain_stream) / len(REPLY) * 1e6
        verdict = "ok" if per_chunk <= CHUNK_GOAL_US else "MISSED"
        print(
            f"Agent.stream partial output, {label:<9} added {per_chunk:8.2f} us/chunk "
            f"(goal <= {CHUNK_GOAL_US:.0f} us)  {verdict}"
        )

    await long_stream_rows()

    costs = openai_body_cost()
    if costs is not None:
        plain_body, native_body = costs
        added = (native_body - plain_body) * 1e6
        verdict = "ok" if added <= RUN_GOAL_US else "MISSED"
        print(
            f"OpenAI body with the strict schema  added {added:8.1f} us/call  "
            f"(goal <= {RUN_GOAL_US:.0f} us)  {verdict}"
        )


if __name__ == "__main__":
    asyncio.run(main())
