"""Shared pieces of the oma-mcp tests: the toy server, toolsets closed for sure, and a look at
this process's children in /proc (a leaked server is a child still alive)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from mcp_processes import EXAMPLE, SERVER, descendants, served
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
    with served(str(SERVER), "http") as url:
        yield url


@pytest.fixture
def sse_server() -> Iterator[str]:
    """The toy server on the SDK's older SSE transport at 127.0.0.1; its SSE endpoint."""
    with served(str(SERVER), "sse", path="/sse") as url:
        yield url


@pytest.fixture
def example_http_server() -> Iterator[str]:
    """The docs' example server (``shout``, ``cat_picture``) on streamable HTTP; its URL."""
    with served(str(EXAMPLE), "--http") as url:
        yield url
