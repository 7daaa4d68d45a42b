"""Shared fixtures of the core's tests."""

from __future__ import annotations

import base64
import builtins
import io
import pathlib
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Every async test fails if it leaves an async generator to the garbage collector.
pytest_plugins = ["oma_core.testing.hypothesis_timing", "oma_core.testing.closed_generators"]


EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="session")
def png_base64() -> str:
    """The base64 of examples/cat.png, a real 64x64 PNG."""
    return base64.b64encode((EXAMPLES / "cat.png").read_bytes()).decode("ascii")


@pytest.fixture
def conversation(png_base64: str) -> list[dict[str, Any]]:
    """A small valid conversation as plain dicts: text, images, a tool call and its result."""
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is shown?"},
                {
                    "type": "image",
                    "source": {
                        "type": "url",
                        "media_type": "image/png",
                        "url": "https://example.com/a.png",
                    },
                },
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": png_base64},
                    "detail": "low",
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "Look closer.", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "zoom", "input": {"factor": 2}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "zoomed"}],
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "video",
                    "source": {
                        "type": "url",
                        "media_type": "video/mp4",
                        "url": "https://example.com/clip.mp4",
                    },
                }
            ],
        },
    ]


@pytest.fixture
def host() -> Any:
    """A PluginHost with the built-in plugins only, so installed packages cannot add hooks."""
    from oma_core import PluginHost

    return PluginHost(load_entrypoints=False)


@pytest.fixture
def no_io(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make opening a socket or a file fail for the duration of a test."""

    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError("I/O attempted during a test that forbids it")

    guarded: Callable[..., Any] = refuse
    monkeypatch.setattr(socket, "socket", guarded)
    monkeypatch.setattr(socket, "create_connection", guarded)
    monkeypatch.setattr(builtins, "open", guarded)
    monkeypatch.setattr(io, "open", guarded)
    yield


@pytest.fixture
def cli_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A CLI test's own world: its ``$OMA_HOME`` (keys and the run log), no plugins from
    entry points, no ``OMA_PROVIDER``/``OMA_MODEL``, an 80-column terminal whatever runs the
    tests (output is wrapped to it), and a process-wide host built afresh."""
    from oma_core.plugins import PluginHost

    home = tmp_path / "home"
    monkeypatch.setenv("OMA_HOME", str(home))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "")
    for name in ("OMA_PROVIDER", "OMA_MODEL", "OMA_DISABLE_PLUGINS"):
        monkeypatch.delenv(name, raising=False)
    previous = PluginHost.set_default(None)
    yield home
    PluginHost.set_default(previous)
