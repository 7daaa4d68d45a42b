"""Hostile MCP servers: an answer that never comes, a line without end, junk on stdout, a
server that forks and exits, error codes that look like the SDK's own, an HTTP reply that is a
compression bomb, a server that restarts. Each ends as a typed error or an error result, in
bounded time (an outer 30 s that a passing test never approaches) and bounded memory
(tracemalloc), with no process left behind."""

from __future__ import annotations

import asyncio
import logging
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp_processes import SERVER, alive, descendants, free_port, served
from oma_mcp import MCPServerError, MCPToolset

HOSTILE = Path(__file__).with_name("hostile_server.py")
MiB = 1024 * 1024

Hostile = Callable[..., MCPToolset]


@pytest.fixture
def hostile(scripts: Hostile) -> Hostile:
    """``hostile(mode, *args, **options)``: a toolset on ``hostile_server.py``; closed after
    the test, and no child process may outlive that."""
    return lambda mode, *args, **options: scripts(HOSTILE, mode, *args, **options)


async def _gone(pids: list[int]) -> bool:
    """Whether the processes are gone within 30 s (polled; a kill's arrival is not timed)."""
    for _ in range(600):
        if not alive(pids):
            return True
        await asyncio.sleep(0.05)
    return False


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


async def _pid(path: Path) -> int:
    """The pid the server wrote to ``path`` (within 30 s)."""
    for _ in range(600):
        if text := _read(path):
            return int(text)
        await asyncio.sleep(0.05)
    raise AssertionError(f"{path} was never written")


# -- deadlines ---------------------------------------------------------------------------------


async def test_a_tools_list_never_answered_fails_at_the_request_timeout(hostile: Hostile) -> None:
    server = hostile("list-mute", request_timeout=0.5)

    async with asyncio.timeout(30):
        with pytest.raises(MCPServerError, match=r"tools/list.*timed out"):
            await server.list_tools()


async def test_a_tools_list_answer_nested_too_deep_fails_that_request_at_once(
    hostile: Hostile,
) -> None:
    server = hostile("list-deep", request_timeout=600)  # not the timeout: the answer itself

    async with asyncio.timeout(30):
        with pytest.raises(MCPServerError, match="not a valid MCP message"):
            await server.list_tools()


# -- stdout held to bounds ---------------------------------------------------------------------


async def test_a_line_without_end_ends_the_connection_with_bounded_memory(
    hostile: Hostile,
) -> None:
    server = hostile("list-endless", max_message_bytes=MiB, max_restarts=0)
    tracemalloc.start()
    try:
        async with asyncio.timeout(30):
            with pytest.raises(MCPServerError, match=f"line longer than {MiB} bytes"):
                await server.list_tools()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 16 * MiB


async def test_junk_lines_on_stdout_are_counted_in_one_warning_not_a_traceback_each(
    hostile: Hostile, caplog: pytest.LogCaptureFixture
) -> None:
    server = hostile("garbage")
    with caplog.at_level(logging.DEBUG):
        async with asyncio.timeout(30):
            tools = await server.list_tools()
        await server.aclose()

    assert [t.name for t in tools] == ["go"]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, [r.getMessage() for r in warnings]
    assert "not JSON-RPC" in warnings[0].getMessage()
    assert "20000 lines" in warnings[1].getMessage()
    assert not [r for r in caplog.records if r.exc_info]


# -- exits noticed at once, nothing left behind ------------------------------------------------


async def test_a_server_that_forks_and_exits_mid_call_fails_the_call_at_once(
    hostile: Hostile, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child"
    server = hostile("fork-mid-call", str(pidfile), timeout=600)
    tools = {t.name: t for t in await server.list_tools()}

    async with asyncio.timeout(30):  # not the call's 600 s
        answer = await tools["go"].invoke({})

    assert answer.is_error and "exited (code 6) during the call to 'go'" in answer.content
    assert await _gone([await _pid(pidfile)])  # the child in its group is killed with it


async def test_a_server_that_exits_before_initialize_leaving_a_setsid_child(
    hostile: Hostile, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child"
    server = hostile("setsid-before-init", str(pidfile), init_timeout=600)

    async with asyncio.timeout(30):  # not the init timeout
        with pytest.raises(MCPServerError, match=r"exited \(code 5\) before answering"):
            await server.list_tools()

    child = await _pid(pidfile)
    if sys.platform == "linux":  # the supervisor adopted it: it does not outlive the server
        assert await _gone([child])


@pytest.mark.skipif(sys.platform != "linux", reason="a subreaper is Linux's")
async def test_a_child_that_left_the_process_group_is_stopped_with_the_server(
    hostile: Hostile, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child"
    server = hostile("setsid-child", str(pidfile))
    await server.list_tools()
    child = await _pid(pidfile)
    assert alive([child])

    await server.aclose()

    assert await _gone([child])


async def test_a_server_that_exits_between_calls_is_restarted_before_the_next(
    hostile: Hostile, tmp_path: Path
) -> None:
    before = descendants()
    server = hostile("exit-after-call", str(tmp_path / "once"), max_restarts=1, restart_delay=0)
    tools = {t.name: t for t in await server.list_tools()}

    first = await tools["go"].invoke({})
    for _ in range(600):  # until the exited server (and its supervisor) are gone (30 s+)
        if not descendants() - before:
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError(f"the exited server is still there: {descendants() - before}")
    second = await tools["go"].invoke({})

    assert not first.is_error and first.content == "ok"
    assert not second.is_error and second.content == "ok"


# -- error codes -------------------------------------------------------------------------------


async def test_error_32000_from_the_server_is_its_error_not_an_exit(hostile: Hostile) -> None:
    server = hostile("error-32000", max_restarts=0)
    tools = {t.name: t for t in await server.list_tools()}

    answers = [await tools["go"].invoke({}) for _ in range(6)]

    assert all(a.is_error and "failed: busy, retry (error -32000)" in a.content for a in answers)


async def test_error_32001_from_the_server_is_its_error_not_a_timeout(hostile: Hostile) -> None:
    server = hostile("error-32001", timeout=600)
    tools = {t.name: t for t in await server.list_tools()}

    async with asyncio.timeout(30):
        answer = await tools["go"].invoke({})

    assert answer.is_error and "failed: busy, retry (error -32001)" in answer.content
    assert "timed out" not in answer.content


# -- HTTP --------------------------------------------------------------------------------------

HOSTILE_HTTP = Path(__file__).with_name("hostile_http_server.py")


async def test_an_http_reply_that_is_a_gzip_bomb_fails_its_request_in_bounded_memory() -> None:
    with served(str(HOSTILE_HTTP)) as url:  # 128 KiB on the wire, 128 MiB inflated
        server = MCPToolset.http(url, max_message_bytes=MiB)
        tracemalloc.start()
        try:
            async with asyncio.timeout(60):
                with pytest.raises(MCPServerError, match=f"larger than {MiB} bytes decoded"):
                    await server.list_tools()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            await server.aclose()

    assert peak < 32 * MiB


async def test_an_http_server_that_restarts_gets_a_new_session() -> None:
    port = free_port()
    with served(str(SERVER), "http", port=port) as url:
        server = MCPToolset.http(url)
        tools = {t.name: t for t in await server.list_tools()}
        first = await tools["echo"].invoke({"text": "before"})
    try:
        with served(str(SERVER), "http", port=port):  # the same URL; the session is unknown
            async with asyncio.timeout(30):
                second = await tools["echo"].invoke({"text": "after"})
    finally:
        await server.aclose()

    assert first.content == "before"
    assert not second.is_error and second.content == "after"


async def test_an_http_error_reply_keeps_the_servers_words() -> None:
    with served(str(HOSTILE_HTTP), "0") as url:
        async with MCPToolset.http(url) as server:
            tools = {t.name: t for t in await server.list_tools()}
            async with asyncio.timeout(30):
                answer = await tools["down"].invoke({})

    assert answer.is_error
    assert "HTTP 500: database is down; try again in an hour" in answer.content


async def test_a_400_that_says_the_session_is_unknown_gets_a_new_session() -> None:
    with served(str(HOSTILE_HTTP), "0") as url:
        async with MCPToolset.http(url, restart_delay=0) as server:
            tools = {t.name: t for t in await server.list_tools()}
            forgotten = await tools["forget"].invoke({})  # as a restart would
            async with asyncio.timeout(30):
                answer = await tools["down"].invoke({})

    assert forgotten.content == "forgotten"
    # a new session, and the call went through on it (to the server's own failure)
    assert answer.is_error and "HTTP 500: database is down" in answer.content, answer.content
