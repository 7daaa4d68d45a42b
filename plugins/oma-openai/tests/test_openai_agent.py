"""The plugin under the real agent and CLI: retries, tool loops, concurrency, `oma run/render`."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_openai import API_KEY, FakeChatCompletions, Reply
from openai_builders import PNG_B64

from oma_core import Agent, AgentConfig, ProviderError, tool
from oma_core.cli import cli
from oma_core.testing.fake_server import (
    DropConnection,
    FakeServer,
    Fault,
    HTTPError,
    RecordedRequest,
    Response,
)


def agent_for(server: FakeChatCompletions, provider: str = "openai", **config: object) -> Agent:
    settings: dict[str, object] = {
        "name": "t",
        "provider": provider,
        "model": "gpt-test",
        "base_url": server.base_url,
        "api_key": API_KEY,
        "retry_delay": 0.001,
    }
    settings.update(config)
    return Agent(AgentConfig(**settings))  # type: ignore[arg-type]


async def test_agent_run_retries_transient_faults_with_one_request_each(
    server: FakeChatCompletions,
) -> None:
    server.enqueue(HTTPError(500), HTTPError(429, retry_after=0), DropConnection("mid_body"))
    server.reply(Reply(text="cut off"), Reply(text="finally"))  # the drop consumes a reply
    async with agent_for(server, max_retries=3) as agent:
        result = await agent.run("hi")
    assert result.success, result.status
    assert result.output == "finally"
    assert len(server.requests) == 4


async def test_agent_gives_up_after_max_retries(server: FakeChatCompletions) -> None:
    server.enqueue(HTTPError(503), HTTPError(503), HTTPError(503), HTTPError(503))
    async with agent_for(server, max_retries=2) as agent:
        result = await agent.run("hi")
    assert not result.success
    assert isinstance(result.status.error, ProviderError)
    assert result.status.error.status_code == 503
    assert len(server.requests) == 3


async def test_agent_does_not_retry_a_400(server: FakeChatCompletions) -> None:
    server.enqueue(HTTPError(400, "nope"))
    async with agent_for(server, max_retries=3) as agent:
        result = await agent.run("hi")
    assert not result.success
    assert len(server.requests) == 1


async def test_agent_stream_retries_a_dropped_stream(server: FakeChatCompletions) -> None:
    server.enqueue(DropConnection("before_response"))
    async with agent_for(server, max_retries=1) as agent:
        events = [e async for e in agent.stream("hi")]
    assert events[-1].type == "done"
    assert events[-1].data.success
    assert len(server.requests) == 2


async def test_agent_tool_loop_sends_results_back_as_tool_messages(
    server: FakeChatCompletions,
) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    server.reply(
        Reply(text=None, tool_calls=(("call_1", "add", '{"a": 2, "b": 3}'),)),
        Reply(text="5"),
    )
    async with agent_for(server, tools=(add,)) as agent:
        result = await agent.run("2+3?")
    assert result.output == "5", result.status
    first, second = (r.json for r in server.requests)
    assert first["tools"][0]["function"]["name"] == "add"
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1"
    assert second["messages"][-1]["role"] == "tool"
    assert second["messages"][-1]["tool_call_id"] == "call_1"
    assert "5" in second["messages"][-1]["content"]


class _HoldUntilCrowded(Fault):
    """Hold a reply until ``crowd`` requests are in flight at once, or until 30 s after the
    first request arrived: concurrent runs open the gate however slow the machine, while a
    client sending one request at a time never does (and ``max_in_flight`` shows it)."""

    def __init__(self, crowd: int) -> None:
        self.crowd = crowd
        self.crowded = asyncio.Event()
        self.deadline: float | None = None

    async def apply(
        self, server: FakeServer, request: RecordedRequest, make: Callable[[], Awaitable[Response]]
    ) -> Response:
        loop = asyncio.get_running_loop()  # the server's own loop, in its thread
        if self.deadline is None:
            self.deadline = loop.time() + 30
        if server.in_flight >= self.crowd:  # counted before a fault applies; none leave meanwhile
            self.crowded.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.crowded.wait(), max(0.0, self.deadline - loop.time()))
        return await make()


async def test_200_concurrent_runs_complete_with_many_in_flight() -> None:
    # held by the server, not by a sleep: with a 0.3 s delay, a loaded machine sent the
    # requests too slowly to ever have 50 in flight
    with FakeChatCompletions() as server:
        gate = _HoldUntilCrowded(50)
        server.enqueue(*[gate] * 200)  # type: ignore[attr-defined]
        async with agent_for(server) as agent:  # type: ignore[arg-type]
            results = await asyncio.gather(*(agent.run(f"q{i}") for i in range(200)))
        assert all(r.success for r in results)
        assert len(server.requests) == 200  # type: ignore[attr-defined]
        assert server.max_in_flight >= 50  # type: ignore[attr-defined]


def test_cli_runs_minimax_against_the_fake_server() -> None:
    with FakeChatCompletions(mode="compatible") as server:
        server.reply(Reply(text="Hello from MiniMax."))  # type: ignore[attr-defined]
        result = CliRunner().invoke(
            cli,
            ["run", "-p", "minimax", "--base-url", server.base_url, "hi there"],  # type: ignore[attr-defined]
            env={"MINIMAX_API_KEY": API_KEY},
        )
        assert result.exit_code == 0, result.output
        assert "Hello from MiniMax." in result.output
        [req] = server.requests
        assert req.path == "/v1/chat/completions"
        assert req.json["model"] == "MiniMax-M2"
        assert req.json["messages"] == [{"role": "user", "content": "hi there"}]


def test_cli_render_full_equals_the_body_sent(tmp_path: Path) -> None:
    """`oma render --full` prints the body as indented JSON; the SDK sends it compact. Parsed
    and dumped the SDK's way (UTF-8, no ASCII escapes, "," and ":" separators, key order kept),
    the printed body equals the bytes the server received, byte for byte."""
    picture = tmp_path / "pixel.png"
    picture.write_bytes(base64.b64decode(PNG_B64))
    args = [
        "-p",
        "openai",
        "-m",
        "gpt-test",
        "--system",
        "Be brief ✓",
        "--image",
        str(picture),
        "--api-key",
        API_KEY,
        "describé",
    ]
    with FakeChatCompletions() as server:
        runner = CliRunner()
        render = ["render", "--full", "--no-stream", "--base-url", server.base_url]
        rendered = runner.invoke(cli, [*render, *args])  # type: ignore[attr-defined]
        assert rendered.exit_code == 0, rendered.output
        ran = runner.invoke(cli, ["run", "--no-stream", "--base-url", server.base_url, *args])  # type: ignore[attr-defined]
        assert ran.exit_code == 0, ran.output
        [req] = server.requests
    body = json.loads(rendered.stdout)
    assert body["messages"][1]["content"][1]["image_url"]["url"].endswith(PNG_B64)
    assert json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() == req.body


def test_cli_reports_a_missing_base_url_for_openai_compatible() -> None:
    result = CliRunner().invoke(cli, ["run", "-p", "openai-compatible", "-m", "m", "hi"])
    assert result.exit_code != 0
    assert "base URL" in result.output


@pytest.mark.parametrize("provider", ["openai", "minimax"])
async def test_unsupported_block_fails_the_run_before_any_request(
    server: FakeChatCompletions, provider: str
) -> None:
    conversation = [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "hmm"}]},
        {"role": "user", "content": [{"type": "text", "text": "b"}]},
    ]
    async with agent_for(server, provider) as agent:
        result = await agent.run(conversation)
    assert not result.success
    assert "cannot represent" in str(result.status.error)
    assert server.requests == []


def test_mm_file_reference_raises_at_the_call_site_and_sends_nothing(
    compatible_server: FakeChatCompletions,
) -> None:
    from oma_core import InvalidMessageError

    source = {"type": "url", "media_type": "image/png", "url": "mm_file://abc"}
    conversation = [{"role": "user", "content": [{"type": "image", "source": source}]}]
    agent = agent_for(compatible_server, "minimax")
    with pytest.raises(InvalidMessageError) as info:
        agent.run(conversation)
    assert "must be an absolute HTTP(S) URL" in str(info.value)
    assert compatible_server.requests == []
