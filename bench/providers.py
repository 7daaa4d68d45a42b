"""What a provider plugin costs over its bare SDK, against the plugin's fake server.

    python bench/providers.py              # every provider section below
    python bench/providers.py anthropic    # one

Per provider, the same message goes through ``Agent.run`` (the plugin) and through the bare
SDK call, against the same fake server running in a child process (so it does not share the
GIL with the code measured):

- a small text call (goal: plugin <= 1.1 x the SDK's time);
- a 5 MiB image, as base64 (goal: <= 1.05 x; the messages are built once, as
  ``LLMMessage`` objects are valid by construction and never re-scanned);
- streaming a long reply: time added per chunk (goal: <= 10 us);
- 1,000 calls at 100 in flight (goal: throughput >= 90 % of the SDK's);
- ``OpenMultiAgent().run_agent`` with default settings (a fresh ``Agent`` per run, providers
  shared by default) against ``Agent.run`` on one reused agent: one call at a time (goal:
  <= 1.10 x) and at 100 in flight against the bare SDK (goal: throughput >= 0.9 x the SDK's);
- the transports at 100 in flight, in one run beside the bare SDK and raw aiohttp (the same
  request bytes posted with one ``aiohttp.ClientSession``: the ceiling): the plugin on
  ``provider_options={"transport": "aiohttp"}`` (the SDK's own aiohttp client; goal >= 2.3 x the
  default transport's throughput, and no slower one call at a time) and on ``"direct"`` (the
  plugin's own aiohttp client; goal >= 5 x the default's, moonshot >= 4,000 calls/s).

``python bench/providers.py --transports [provider]`` runs only the transport comparison;
``--run-agent`` only the ``run_agent`` one.

Timings interleave the two paths and take medians, to be fair on a busy machine. A provider is
one ``Target`` in ``TARGETS``; add a section for another plugin the same way. Every call of
the plugin is checked (``success`` and the reply's text) before it counts: a call refused
locally or failed would otherwise be timed as a fast one.
"""

from __future__ import annotations

import asyncio
import base64
import json
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SMALL_ROUNDS = 150
IMAGE_ROUNDS = 8
STREAM_ROUNDS = 5
STREAM_TEXT = "token " * 1500  # 9,000 characters
STREAM_CHUNK = 4  # characters per delta: 2,250 chunks
THROUGHPUT_CALLS = 1000
THROUGHPUT_ROUNDS = 4
IN_FLIGHT = 100
# 5 MiB of base64 less 1 KiB: inside Anthropic's 5 MiB per-image limit (a larger image is
# refused locally, before any request: not a call to measure).
IMAGE_BYTES = (5 * 1024 * 1024 - 1024) * 3 // 4
REPLY = "Hello from the bench."


@dataclass
class Target:
    """One provider section: how to start its fake server, build an agent and call the SDK."""

    name: str
    #: (reply text, chunk size) -> a context manager yielding the fake server's URL
    server: Callable[[str, int], Any]
    #: (base URL, transport) -> the plugin's AgentConfig
    agent_config: Callable[[str, str], Any]
    #: base URL -> a bare SDK client
    sdk_client: Callable[[str], Any]
    #: (client, text, image base64 or None) -> the bare SDK's non-streaming call
    sdk_complete: Callable[[Any, str, str | None], Awaitable[Any]]
    #: (client, text) -> drain the bare SDK's stream, return the number of text chunks
    sdk_stream: Callable[[Any, str], Awaitable[int]]
    #: base URL -> (URL, headers, body) of one small call, posted as it is by raw aiohttp
    raw_request: Callable[[str], tuple[str, dict[str, str], bytes]]


# --------------------------------------------------------------------------- anthropic


def _serve_anthropic(conn: Any, text: str, chunk_size: int) -> None:
    sys.path.insert(0, str(ROOT / "plugins" / "oma-anthropic" / "tests"))
    from fake_anthropic import FakeAnthropic, Reply

    server = FakeAnthropic(chunk_size=chunk_size)
    server.default_reply = Reply(({"type": "text", "text": text},))
    with server:
        conn.send(server.url)
        conn.recv()


def _anthropic() -> Target:
    import anthropic

    from oma_core import AgentConfig

    model = "claude-sonnet-4-6"

    def agent_config(url: str, transport: str = "httpx") -> AgentConfig:
        return AgentConfig(
            name="bench",
            provider="anthropic",
            model=model,
            base_url=url,
            api_key="bench-key",
            provider_options={"transport": transport},
        )

    def client(url: str) -> Any:
        return anthropic.AsyncAnthropic(api_key="bench-key", base_url=url, max_retries=0)

    def content(text: str, image: str | None) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if image is not None:
            source = {"type": "base64", "media_type": "image/png", "data": image}
            blocks.append({"type": "image", "source": source})
        blocks.append({"type": "text", "text": text})
        return blocks

    async def complete(sdk: Any, text: str, image: str | None) -> Any:
        messages = [{"role": "user", "content": content(text, image)}]
        return await sdk.messages.create(model=model, max_tokens=4096, messages=messages)

    async def stream(sdk: Any, text: str) -> int:
        messages = [{"role": "user", "content": content(text, None)}]
        events = await sdk.messages.create(
            model=model, max_tokens=4096, messages=messages, stream=True
        )
        chunks = 0
        async for event in events:
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                chunks += 1
        return chunks

    def raw(url: str) -> tuple[str, dict[str, str], bytes]:
        body = {"model": model, "max_tokens": 4096, "messages": [{"role": "user", "content": "hi"}]}
        headers = {
            "x-api-key": "bench-key",
            "anthropic-version": "2023-06-01",
            "content-type": "application/json",
        }
        return f"{url}/v1/messages", headers, json.dumps(body).encode()

    return Target(
        name="anthropic",
        server=lambda text, chunk: _child_server(_serve_anthropic, text, chunk),
        agent_config=agent_config,
        sdk_client=client,
        sdk_complete=complete,
        sdk_stream=stream,
        raw_request=raw,
    )


TARGETS: dict[str, Callable[[], Target]] = {"anthropic": _anthropic}


# --------------------------------------------------------------------------- openai


def _serve_openai(conn: Any, text: str, chunk_size: int) -> None:
    sys.path.insert(0, str(ROOT / "plugins" / "oma-openai" / "tests"))
    from fake_openai import FakeChatCompletions, Reply

    server = FakeChatCompletions(api_key="bench-key", chunk_size=chunk_size)
    server.default_reply = Reply(text=text)
    with server:
        conn.send(server.base_url)  # Chat Completions' base URL includes /v1
        conn.recv()


def _openai() -> Target:
    import openai

    from oma_core import AgentConfig

    model = "gpt-4o-mini"

    def agent_config(url: str, transport: str = "httpx") -> AgentConfig:
        return AgentConfig(
            name="bench",
            provider="openai",
            model=model,
            base_url=url,
            api_key="bench-key",
            provider_options={"transport": transport},
        )

    def client(url: str) -> Any:
        return openai.AsyncOpenAI(api_key="bench-key", base_url=url, max_retries=0)

    def content(text: str, image: str | None) -> Any:
        if image is None:
            return text
        url = f"data:image/png;base64,{image}"
        return [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": text}]

    async def complete(sdk: Any, text: str, image: str | None) -> Any:
        messages = [{"role": "user", "content": content(text, image)}]
        return await sdk.chat.completions.create(model=model, messages=messages)

    async def stream(sdk: Any, text: str) -> int:
        chunks = await sdk.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": text}],
            stream=True,
            stream_options={"include_usage": True},
        )
        count = 0
        async for chunk in chunks:
            if chunk.choices and chunk.choices[0].delta.content:
                count += 1
        return count

    def raw(url: str) -> tuple[str, dict[str, str], bytes]:
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
        headers = {"authorization": "Bearer bench-key", "content-type": "application/json"}
        return f"{url}/chat/completions", headers, json.dumps(body).encode()

    return Target(
        name="openai",
        server=lambda text, chunk: _child_server(_serve_openai, text, chunk),
        agent_config=agent_config,
        sdk_client=client,
        sdk_complete=complete,
        sdk_stream=stream,
        raw_request=raw,
    )


TARGETS["openai"] = _openai


# --------------------------------------------------------------------------- the measures


@contextmanager
def _child_server(serve: Callable[..., None], text: str, chunk_size: int) -> Iterator[str]:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=serve, args=(child, text, chunk_size), daemon=True)
    process.start()
    try:
        yield parent.recv()
    finally:
        parent.send("stop")
        process.join(timeout=10)


def _image() -> str:
    payload = b"\x89PNG\r\n\x1a\n" + os.urandom(IMAGE_BYTES - 8)
    return base64.b64encode(payload).decode()


async def _pairs(
    rounds: int, plugin: Callable[[], Awaitable[Any]], sdk: Callable[[], Awaitable[Any]]
) -> tuple[float, float]:
    """Median seconds per call of each path, interleaved, after one warm-up call each."""
    await plugin()
    await sdk()
    ours: list[float] = []
    theirs: list[float] = []
    for i in range(rounds):
        order = (plugin, sdk) if i % 2 == 0 else (sdk, plugin)
        for call in order:
            start = time.perf_counter()
            await call()
            (ours if call is plugin else theirs).append(time.perf_counter() - start)
    return statistics.median(ours), statistics.median(theirs)


async def _checked(run: Awaitable[Any], reply: str = REPLY) -> None:
    """Await one plugin call (a ``RunResult``) and stop the bench unless it succeeded with
    the fake server's reply."""
    result = await run
    assert result.success, f"a measured call failed: {result.status}: {result.error!r}"
    assert result.output == reply, f"a measured call returned {result.output[:80]!r}"


def _report(label: str, figure: str, goal: str, ok: bool) -> None:
    print(f"  {label:<34} {figure:<34} goal {goal:<18} {'ok' if ok else 'MISSED'}")


async def _bench(target: Target) -> None:
    from oma_core import Agent, load_messages

    print(f"{target.name}:")
    with target.server(REPLY, 64) as url:
        sdk = target.sdk_client(url)
        async with Agent(target.agent_config(url, "httpx")) as agent:
            ours, theirs = await _pairs(
                SMALL_ROUNDS,
                lambda: _checked(agent.run("hi")),
                lambda: target.sdk_complete(sdk, "hi", None),
            )
            ratio = ours / theirs
            _report(
                "small text call",
                f"{ours * 1e3:.2f} ms vs SDK {theirs * 1e3:.2f} ms ({ratio:.3f}x)",
                "<= 1.1x",
                ratio <= 1.1,
            )

            image = _image()
            conversation = [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": image},
                        },
                        {"type": "text", "text": "what is it?"},
                    ],
                }
            ]
            built = load_messages(conversation)
            ours, theirs = await _pairs(
                IMAGE_ROUNDS,
                lambda: _checked(agent.run(built)),
                lambda: target.sdk_complete(sdk, "what is it?", image),
            )
            ratio = ours / theirs
            _report(
                "5 MiB image call",
                f"{ours * 1e3:.1f} ms vs SDK {theirs * 1e3:.1f} ms ({ratio:.3f}x)",
                "<= 1.05x",
                ratio <= 1.05,
            )

            start = time.perf_counter()
            load_messages(conversation)
            scan = (time.perf_counter() - start) * 1e3
            print(f"  {'(validating the 5 MiB image once)':<34} {scan:.1f} ms")

            many = _many

            await many(lambda: target.sdk_complete(sdk, "hi", None))  # warm the pools
            await many(lambda: _checked(agent.run("hi")))
            # Interleaved rounds, best of each: a load spike on the shared machine during one
            # path's block of rounds would otherwise decide the comparison.
            ours_runs: list[float] = []
            theirs_runs: list[float] = []
            for i in range(THROUGHPUT_ROUNDS):
                plugin_first = i % 2 == 0
                for plugin_turn in (plugin_first, not plugin_first):
                    if plugin_turn:
                        ours_runs.append(await many(lambda: _checked(agent.run("hi"))))
                    else:
                        theirs_runs.append(await many(lambda: target.sdk_complete(sdk, "hi", None)))
            ours_t, theirs_t = min(ours_runs), min(theirs_runs)
            share = theirs_t / ours_t
            _report(
                f"{THROUGHPUT_CALLS} calls, {IN_FLIGHT} in flight",
                f"{THROUGHPUT_CALLS / ours_t:.0f}/s vs SDK {THROUGHPUT_CALLS / theirs_t:.0f}/s "
                f"({share:.0%})",
                ">= 90%",
                share >= 0.9,
            )
        await sdk.close()

    await _bench_run_agent(target)
    await _bench_transports(target)

    with target.server(STREAM_TEXT, STREAM_CHUNK) as url:
        sdk = target.sdk_client(url)
        async with Agent(target.agent_config(url, "httpx")) as agent:
            chunks = await target.sdk_stream(sdk, "go")

            async def plugin_stream() -> None:
                async with agent.stream("go") as events:
                    async for _ in events:
                        pass

            ours, theirs = await _pairs(
                STREAM_ROUNDS, plugin_stream, lambda: target.sdk_stream(sdk, "go")
            )
            added = (ours - theirs) / chunks
            _report(
                f"streaming, {chunks} chunks",
                f"{ours / chunks * 1e6:.1f} us/chunk vs SDK {theirs / chunks * 1e6:.1f} "
                f"(+{added * 1e6:.1f} us)",
                "<= 10 us added",
                added <= 10e-6,
            )
        await sdk.close()


async def _many(call: Callable[[], Awaitable[Any]], in_flight: int = IN_FLIGHT) -> float:
    """Seconds for ``THROUGHPUT_CALLS`` calls with at most ``in_flight`` at once."""
    semaphore = asyncio.Semaphore(in_flight)

    async def bounded() -> None:
        async with semaphore:
            await call()

    start = time.perf_counter()
    await asyncio.gather(*(bounded() for _ in range(THROUGHPUT_CALLS)))
    return time.perf_counter() - start


def _transports() -> tuple[str, ...]:
    """The plugin transports to measure beside the default (those the plugins offer)."""
    from oma_openai.provider import TRANSPORTS

    return tuple(t for t in ("aiohttp", "direct") if t in TRANSPORTS)


async def _interleaved(paths: dict[str, Callable[[], Awaitable[Any]]]) -> dict[str, float]:
    """Best seconds for ``THROUGHPUT_CALLS`` calls of each path, rounds interleaved (a load
    spike on the shared machine would otherwise decide the comparison), after a warm-up."""
    for call in paths.values():
        await _many(call)
    runs: dict[str, list[float]] = {name: [] for name in paths}
    names = list(paths)
    for i in range(THROUGHPUT_ROUNDS):
        for name in names if i % 2 == 0 else reversed(names):
            runs[name].append(await _many(paths[name]))
    return {name: min(times) for name, times in runs.items()}


async def _bench_transports(target: Target) -> None:
    """The plugin on each transport, beside the bare SDK and raw aiohttp, at 100 in flight."""
    import aiohttp

    from oma_core import Agent

    with target.server(REPLY, 64) as url:
        sdk = target.sdk_client(url)
        raw_url, raw_headers, raw_body = target.raw_request(url)
        connector = aiohttp.TCPConnector(limit=IN_FLIGHT)
        session = aiohttp.ClientSession(connector=connector)

        async def raw() -> None:
            async with session.post(raw_url, data=raw_body, headers=raw_headers) as response:
                assert response.status == 200, response.status
                await response.read()

        agents = {t: Agent(target.agent_config(url, t)) for t in ("httpx", *_transports())}
        try:
            paths: dict[str, Callable[[], Awaitable[Any]]] = {
                "sdk": lambda: target.sdk_complete(sdk, "hi", None),
                "raw": raw,
            }
            for transport, agent in agents.items():
                paths[transport] = lambda a=agent: _checked(a.run("hi"))
            best = await _interleaved(paths)
            rate = {name: THROUGHPUT_CALLS / seconds for name, seconds in best.items()}
            print(
                f"  {IN_FLIGHT} in flight: bare SDK {rate['sdk']:.0f}/s, raw aiohttp "
                f"{rate['raw']:.0f}/s, plugin default (httpx) {rate['httpx']:.0f}/s"
            )
            if "aiohttp" in rate:
                gain = rate["aiohttp"] / rate["httpx"]
                _report(
                    f"aiohttp transport, {IN_FLIGHT} in flight",
                    f"{rate['aiohttp']:.0f}/s vs httpx {rate['httpx']:.0f}/s ({gain:.2f}x)",
                    ">= 2.3x",
                    gain >= 2.3,
                )
                aio_one, default_one = await _pairs(
                    SMALL_ROUNDS,
                    lambda: _checked(agents["aiohttp"].run("hi")),
                    lambda: _checked(agents["httpx"].run("hi")),
                )
                ratio = aio_one / default_one
                _report(
                    "aiohttp transport, 1 in flight",
                    f"{aio_one * 1e3:.2f} ms vs httpx {default_one * 1e3:.2f} ms ({ratio:.3f}x)",
                    "<= 1.0x",
                    ratio <= 1.0,
                )
            if "direct" in rate:
                gain = rate["direct"] / rate["httpx"]
                _report(
                    f"direct transport, {IN_FLIGHT} in flight",
                    f"{rate['direct']:.0f}/s vs httpx {rate['httpx']:.0f}/s ({gain:.2f}x)",
                    ">= 5x",
                    gain >= 5,
                )
                _report(
                    "  direct: moonshot",
                    f"{rate['direct']:.0f}/s ({rate['direct'] / rate['raw']:.0%} of raw aiohttp)",
                    ">= 4000/s",
                    rate["direct"] >= 4000,
                )
                direct_one, default_one = await _pairs(
                    SMALL_ROUNDS,
                    lambda: _checked(agents["direct"].run("hi")),
                    lambda: _checked(agents["httpx"].run("hi")),
                )
                ratio = direct_one / default_one
                _report(
                    "direct transport, 1 in flight",
                    f"{direct_one * 1e3:.2f} ms vs httpx {default_one * 1e3:.2f} ms ({ratio:.3f}x)",
                    "<= 1.0x",
                    ratio <= 1.0,
                )
        finally:
            for agent in agents.values():
                await agent.aclose()
            await session.close()
            await sdk.close()


async def _bench_run_agent(target: Target) -> None:
    """``OpenMultiAgent().run_agent`` with default settings against ``Agent.run`` on a reused
    agent (one call at a time) and against the bare SDK (at 100 in flight)."""
    from oma_core import Agent, OpenMultiAgent

    with target.server(REPLY, 64) as url:
        sdk = target.sdk_client(url)
        config = target.agent_config(url, "httpx")
        oma = OpenMultiAgent()  # the documented first example: no options
        try:
            async with Agent(config) as agent:
                ours, theirs = await _pairs(
                    SMALL_ROUNDS,
                    lambda: _checked(oma.run_agent(config, "hi")),
                    lambda: _checked(agent.run("hi")),
                )
            ratio = ours / theirs
            _report(
                "run_agent, default settings",
                f"{ours * 1e3:.2f} ms vs Agent.run {theirs * 1e3:.2f} ms ({ratio:.3f}x)",
                "<= 1.10x",
                ratio <= 1.10,
            )
            unshared = OpenMultiAgent(share_providers=False)  # the default before sharing
            async with Agent(config) as agent:
                ours, theirs = await _pairs(
                    SMALL_ROUNDS // 5,
                    lambda: _checked(unshared.run_agent(config, "hi")),
                    lambda: _checked(agent.run("hi")),
                )
            print(
                f"  {'(share_providers=False: a client per run)':<34} {ours * 1e3:.2f} ms vs "
                f"Agent.run {theirs * 1e3:.2f} ms ({ours / theirs:.2f}x)"
            )
            best = await _interleaved(
                {
                    "run_agent": lambda: _checked(oma.run_agent(config, "hi")),
                    "sdk": lambda: target.sdk_complete(sdk, "hi", None),
                }
            )
            share = best["sdk"] / best["run_agent"]
            _report(
                f"run_agent, {IN_FLIGHT} in flight",
                f"{THROUGHPUT_CALLS / best['run_agent']:.0f}/s vs SDK "
                f"{THROUGHPUT_CALLS / best['sdk']:.0f}/s ({share:.2f}x)",
                ">= 0.9x",
                share >= 0.9,
            )
        finally:
            await oma.aclose()
            await sdk.close()


def main(argv: list[str]) -> None:
    only = {"--transports": _bench_transports, "--run-agent": _bench_run_agent}
    chosen = [only[a] for a in argv if a in only]
    names = [a for a in argv if a not in only] or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise SystemExit(f"unknown provider section(s): {', '.join(unknown)}")
    start = time.perf_counter()
    for name in names:
        if chosen:
            print(f"{name}:")
            for part in chosen:
                asyncio.run(part(TARGETS[name]()))
        else:
            asyncio.run(_bench(TARGETS[name]()))
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
