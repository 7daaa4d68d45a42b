"""Shared pieces of the oma-mcp tests: the toy server, toolsets closed for sure, and a look at
this process's children in /proc (a leaked server is a child still alive)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_processes import EXAMPLE, SERVER, descendants, served
from oma_mcp import MCPToolset

from oma_core import PluginHost
from oma_core.testing import ScriptedProvider, scripted


@pytest.fixture
async def scripts() -> AsyncIterator[Callable[..., MCPToolset]]:
    """``scripts(script, *args, **options)``: a stdio toolset on ``python SCRIPT ARGS...``;
    every one made is closed after the test (on its loop), and no child process may outlive
    that. The servers of each test file are made through it."""
    before = descendants()
    made: list[MCPToolset] = []

    def make(script: Path, *args: str, **options: Any) -> MCPToolset:
        toolset = MCPToolset.stdio(sys.executable, [str(script), *args], **options)
        made.append(toolset)
        return toolset

    yield make
    for toolset in made:
        await toolset.aclose()
    left = descendants() - before
    assert not left, f"MCP server processes left behind: {sorted(left)}"


@pytest.fixture
def toys(scripts: Callable[..., MCPToolset]) -> Callable[..., MCPToolset]:
    """``toys(*flags, **options)``: a stdio toolset on the toy server (see ``scripts``)."""
    return lambda *flags, **options: scripts(SERVER, "stdio", *flags, **options)


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


@pytest.fixture
def oma_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A world of its own for the ``oma`` command: ``$OMA_HOME`` (returned; the run log goes
    there), only this plugin loaded, a fresh host; and no server process left behind by any
    command."""
    monkeypatch.setenv("OMA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "oma-mcp")
    for name in ("OMA_PROVIDER", "OMA_MODEL", "OMA_DISABLE_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    previous = PluginHost.set_default(None)
    before = descendants()
    yield tmp_path / "home"
    PluginHost.set_default(previous)
    assert not descendants() - before, "an MCP server outlived its command"


@pytest.fixture
def scripted_providers(monkeypatch: pytest.MonkeyPatch) -> list[ScriptedProvider]:
    """The scripted providers the commands make, kept to read their requests."""
    made: list[ScriptedProvider] = []

    class Kept(scripted.ScriptedProvider):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(scripted, "ScriptedProvider", Kept)
    return made
