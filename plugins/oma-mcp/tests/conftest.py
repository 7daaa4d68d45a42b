"""Shared pieces of the oma-mcp tests: the toy server, toolsets closed for sure, and a look at
this process's children in /proc (a leaked server is a child still alive)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from mcp_processes import EXAMPLE, SERVER, descendants, free_port
from oma_mcp import MCPToolset


@pytest.fixture
async def toys() -> AsyncIterator[Callable[..., MCPToolset]]:
    """``toys(*flags, **options)``: a stdio toolset on the toy server; every one made is
    closed after the test (on its loop), and no child process may outlive that."""
    before = descendants()
    made: list[MCPToolset] = []

    def make(*flags: str, **options: Any) -> MCPToolset:
        toolset = MCPToolset.stdio(sys.executable, [str(SERVER), "stdio", *flags], **options)
        made.append(toolset)
        return toolset

    yield make
    for toolset in made:
        await toolset.aclose()
    left = descendants() - before
    assert not left, f"MCP server processes left behind: {sorted(left)}"


@pytest.fixture
def http_server() -> Iterator[str]:
    """The toy server on streamable HTTP at 127.0.0.1 (a free port); its URL."""
    yield from _served([str(SERVER), "http"], "/mcp")


@pytest.fixture
def sse_server() -> Iterator[str]:
    """The toy server on the SDK's older SSE transport at 127.0.0.1; its SSE endpoint."""
    yield from _served([str(SERVER), "sse"], "/sse")


@pytest.fixture
def example_http_server() -> Iterator[str]:
    """The docs' example server (``shout``, ``cat_picture``) on streamable HTTP; its URL."""
    yield from _served([str(EXAMPLE), "--http"], "/mcp")


def _served(command: list[str], path: str) -> Iterator[str]:
    """``python COMMAND... PORT`` on a free port, up to 60 s to start, stopped after."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, *command, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{command} did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
