"""An MCP server's life: started on first use, shared by runs, closed with its owner or its
loop; crashes, hangs and broken servers end as error results or typed errors, never as a
leaked process (the ``toys`` fixture checks /proc after every test)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import oma_mcp._toolset
import pytest
from mcp_processes import SERVER, alive, descendants
from oma_mcp import MCPServerError, MCPToolset

from oma_core import Agent, AgentConfig, OpenMultiAgent, PluginHost
from oma_core.testing import ScriptedProvider

Toys = Callable[..., MCPToolset]


def _use(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "c1", "name": name, "input": arguments or {}}
    return {"role": "assistant", "content": [block]}


async def _tools(server: MCPToolset) -> dict[str, Any]:
    return {t.name: t for t in await server.list_tools()}


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


async def _wait_for(path: Path, seconds: float = 30.0) -> str:
    """The file's text once it has some (bounded: empty after ``seconds``)."""
    for _ in range(int(seconds / 0.05)):
        text = _read(path)
        if text:
            return text
        await asyncio.sleep(0.05)
    return ""


async def test_no_server_starts_before_the_first_model_call(toys: Toys) -> None:
    before = descendants()
    Agent(AgentConfig(name="a", provider=ScriptedProvider(["x"]), tools=[toys()]))

    assert descendants() == before


async def test_async_with_starts_the_server_and_leaving_stops_it(toys: Toys) -> None:
    before = descendants()
    async with toys() as server:
        started = descendants() - before
        pid = (await (await _tools(server))["pid"].invoke({})).content

    assert started and int(pid) in started
    assert descendants() - before == set()


async def test_runs_of_one_orchestrator_share_one_server_closed_with_it(toys: Toys) -> None:
    server = toys()
    oma = OpenMultiAgent(plugins=PluginHost(load_entrypoints=False))
    pids = set()
    for _ in range(200):
        provider = ScriptedProvider([_use("pid"), "done"])
        config = AgentConfig(name="a", provider=provider, tools=[server])
        result = await oma.run_agent(config, "go")
        assert result.success, result.status
        pids.add(provider.requests[1].messages[-1].content[0].content)
    await oma.aclose()
    stopped_by_the_orchestrator = not {int(pid) for pid in pids} & descendants()
    await server.aclose()

    assert len(pids) == 1
    assert stopped_by_the_orchestrator
    # the toys fixture then finds no process left behind


async def test_a_server_that_ignores_sigterm_is_killed_with_its_children(toys: Toys) -> None:
    async with toys("--fault=stubborn") as server:
        tools = await _tools(server)
        server_pid = int((await tools["pid"].invoke({})).content)
        child_pid = int((await tools["grandchild"].invoke({})).content)
        assert {server_pid, child_pid} <= alive([server_pid, child_pid])

    # the child of an ended server belongs to init, not to this process: looked up by pid
    for _ in range(600):  # the kill is sent; its arrival is bounded (30 s+), not timed
        if not alive([server_pid, child_pid]):
            break
        await asyncio.sleep(0.05)
    assert alive([server_pid, child_pid]) == set()


def test_the_server_is_stopped_when_its_event_loop_ends() -> None:
    before = descendants()
    server = MCPToolset.stdio(sys.executable, [str(SERVER)])

    async def main() -> str:
        tools = await _tools(server)
        return str((await tools["pid"].invoke({})).content)

    pid = asyncio.run(main())

    assert int(pid) not in descendants()
    assert descendants() - before == set()


async def test_fifty_concurrent_calls_all_get_their_own_answer(toys: Toys) -> None:
    tools = await _tools(toys())

    answers = await asyncio.gather(
        *(tools["echo"].invoke({"text": f"call {i}"}) for i in range(50))
    )

    assert [a.content for a in answers] == [f"call {i}" for i in range(50)]


async def test_a_crash_mid_call_is_an_error_result_and_the_next_call_restarts_it(
    toys: Toys, tmp_path: Path
) -> None:
    server = toys(f"--crash-once={tmp_path / 'crashed'}", restart_delay=0)
    provider = ScriptedProvider([_use("crash"), _use("crash"), "done"])
    config = AgentConfig(name="a", provider=provider, tools=[server])
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    assert result.success, result.status
    first = provider.requests[1].messages[-1].content[0]
    second = provider.requests[2].messages[-1].content[0]
    assert first.is_error and "exited (code 3) during the call to 'crash'" in first.content
    assert not second.is_error and second.content == "survived"


async def test_restarts_are_bounded(toys: Toys) -> None:
    server = toys(max_restarts=1, restart_delay=0)
    tools = await _tools(server)

    first = await tools["crash"].invoke({})
    second = await tools["crash"].invoke({})
    third = await tools["echo"].invoke({"text": "x"})

    assert first.is_error and second.is_error
    assert third.is_error and "not started again (max_restarts=1)" in third.content


@pytest.fixture
def delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the toolset takes before restarts, recorded (and not waited: no clock)."""
    waited: list[float] = []

    async def record(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr(oma_mcp._toolset, "_sleep", record)
    return waited


@pytest.mark.parametrize(
    ("first", "waits"),
    [(0.1, [0.1, 0.2, 0.4]), (10, [10, 20, oma_mcp._toolset.MAX_RESTART_DELAY])],
    ids=["doubling", "capped"],
)
async def test_the_wait_before_a_restart_doubles_up_to_the_bound(
    toys: Toys, delays: list[float], first: float, waits: list[float]
) -> None:
    tools = await _tools(toys(max_restarts=3, restart_delay=first))

    answers = [await tools["crash"].invoke({}) for _ in range(6)]

    assert delays == pytest.approx(waits)
    assert all(answer.is_error for answer in answers)
    assert "not started again (max_restarts=3)" in answers[4].content
    assert "not started again (max_restarts=3)" in answers[5].content


async def test_an_answered_call_after_a_restart_clears_the_restart_count(
    toys: Toys, delays: list[float]
) -> None:
    tools = await _tools(toys(max_restarts=1, restart_delay=0.1))

    answers = []
    for _ in range(3):  # a crash, then hours of healthy calls: three times over
        answers.append(await tools["crash"].invoke({}))
        answers.append(await tools["echo"].invoke({"text": "fine"}))

    assert [a.is_error for a in answers] == [True, False] * 3
    assert delays == pytest.approx([0.1, 0.1, 0.1])  # the delay starts afresh too


async def test_a_hung_call_is_cut_by_the_timeout_and_cancelled_on_the_server(
    toys: Toys, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    tools = await _tools(toys(f"--marker={marker}", timeout=0.5))

    answer = await tools["slow"].invoke({"seconds": 600})

    assert answer.is_error and "timed out after 0.5 s" in answer.content
    assert await _wait_for(marker) == "cancelled"
    assert (await tools["echo"].invoke({"text": "still here"})).content == "still here"


async def test_a_run_that_times_out_cancels_the_call_on_the_server(
    toys: Toys, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    server = toys(f"--marker={marker}")
    await server.list_tools()  # started outside the run's time limit
    oma = OpenMultiAgent(plugins=PluginHost(load_entrypoints=False))
    provider = ScriptedProvider([_use("slow", {"seconds": 600}), "done"])
    config = AgentConfig(name="a", provider=provider, tools=[server])

    result = await oma.run_agent(config, "go", timeout=1.0)

    assert result.status.code == "timeout"
    assert await _wait_for(marker) == "cancelled"


async def test_a_server_that_exits_during_initialize_fails_the_run_with_a_server_error(
    toys: Toys,
) -> None:
    provider = ScriptedProvider(["never"])
    config = AgentConfig(name="a", provider=provider, tools=[toys("--fault=exit-on-init")])
    result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    error = result.status.error
    assert isinstance(error, MCPServerError) and "could not be started" in str(error)
    assert provider.requests == []


async def test_a_server_that_never_answers_is_given_up_after_the_init_timeout(
    toys: Toys,
) -> None:
    server = toys("--fault=mute", init_timeout=0.5)

    with pytest.raises(MCPServerError, match=r"did not answer initialize within 0\.5 s"):
        await server.list_tools()


async def test_garbage_on_stdout_before_the_protocol_does_not_break_the_session(
    toys: Toys,
) -> None:
    tools = await _tools(toys("--fault=garbage"))

    assert (await tools["echo"].invoke({"text": "fine"})).content == "fine"


async def test_a_command_that_does_not_exist_is_a_server_error() -> None:
    server = MCPToolset.stdio("/nonexistent/mcp-server")

    with pytest.raises(MCPServerError, match="could not be started"):
        await server.list_tools()


async def test_a_streamable_http_server_answers_text_and_images(http_server: str) -> None:
    async with MCPToolset.http(http_server, headers={"X-Test": "1"}) as server:
        provider = ScriptedProvider([_use("picture"), "done"])
        config = AgentConfig(name="a", provider=provider, tools=[server])
        result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")
        tools = await _tools(server)
        echoed = await tools["echo"].invoke({"text": "over http"})
        header = await tools["header"].invoke({"name": "X-Test"})

    assert result.success, result.status
    (part,) = provider.requests[1].messages[-1].content[0].content
    assert part.type == "image" and part.source.media_type == "image/png"
    assert echoed.content == "over http"
    assert header.content == "1"  # the toolset's headers go with every request


async def test_an_sse_server_answers_text_and_images_with_the_headers(sse_server: str) -> None:
    async with MCPToolset.http(sse_server, headers={"X-Test": "2"}, transport="sse") as server:
        provider = ScriptedProvider([_use("picture"), "done"])
        config = AgentConfig(name="a", provider=provider, tools=[server])
        result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")
        tools = await _tools(server)
        echoed = await tools["echo"].invoke({"text": "over sse"})
        header = await tools["header"].invoke({"name": "X-Test"})

    assert result.success, result.status
    (part,) = provider.requests[1].messages[-1].content[0].content
    assert part.type == "image" and part.source.media_type == "image/png"
    assert echoed.content == "over sse"
    assert header.content == "2"  # the headers go with the SSE stream's message posts too


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_closing_an_http_toolset_leaves_no_task_and_no_file_descriptor(
    transport: str, request: pytest.FixtureRequest
) -> None:
    if transport == "sse":
        config = {"url": request.getfixturevalue("sse_server"), "transport": "sse"}
    else:
        config = {"url": request.getfixturevalue("http_server")}
    before = _open_fds()
    server = MCPToolset.from_config(config)
    async with server:
        await (await _tools(server))["echo"].invoke({"text": "x"})
        assert any(t.get_name().startswith("oma-mcp") for t in asyncio.all_tasks())

    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("oma-mcp")]
    assert _open_fds() <= before


def _open_fds() -> set[str]:
    return {p.name for p in Path("/proc/self/fd").iterdir()}


async def test_closing_leaves_no_task_and_no_file_descriptor(toys: Toys) -> None:
    before = _open_fds()
    async with toys() as server:
        await (await _tools(server))["echo"].invoke({"text": "x"})
        assert any(t.get_name().startswith("oma-mcp") for t in asyncio.all_tasks())

    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("oma-mcp")]
    assert _open_fds() <= before
