"""oma-mcp with oma-anthropic: ``oma run --mcp`` against the fake Messages API, where an MCP
server's image reaches Anthropic's wire as an image block inside the ``tool_result``.

A combination of two plugins, marked so: ``nox -s all`` runs it, with both installed.
"""

from __future__ import annotations

import base64
import importlib.util
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _builders import ROOT
from click.testing import CliRunner

from oma_core.cli import cli
from oma_core.plugins import PluginHost
from oma_core.testing.fake_server import FakeServer

pytestmark = pytest.mark.combination  # needs oma-mcp and oma-anthropic: run by `nox -s all`

pytest.importorskip("oma_mcp")
pytest.importorskip("oma_anthropic")

EXAMPLE = ROOT / "examples" / "mcp_server.py"
CAT = EXAMPLE.with_name("cat.png")


def _fake_anthropic() -> type[FakeServer]:
    """The plugin's fake Messages API, from its tests folder (not an importable package)."""
    path = ROOT / "plugins" / "oma-anthropic" / "tests" / "fake_anthropic.py"
    spec = importlib.util.spec_from_file_location("_oma_fake_anthropic", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its attrs classes look themselves up there
    spec.loader.exec_module(module)
    fake: type[FakeServer] = module.FakeAnthropic
    return fake


@pytest.fixture
def server() -> Iterator[Any]:
    fake = _fake_anthropic()(api_key="test-key")
    fake.start()
    yield fake
    fake.close()
    assert not fake.handler_errors


@pytest.fixture(autouse=True)
def plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("OMA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "oma-mcp,oma-anthropic")
    previous = PluginHost.set_default(None)
    yield
    PluginHost.set_default(previous)


def test_an_mcp_servers_image_reaches_anthropics_wire_in_the_tool_result(server: Any) -> None:
    server.reply_tool_use("toolu_1", "cat_picture", {})
    server.reply_text("A cat.")
    mcp = shlex.join([sys.executable, str(EXAMPLE)])
    args = ["run", "--no-log", "-p", "anthropic", "-m", "claude-test", "--base-url", server.url]
    result = CliRunner().invoke(cli, [*args, "--api-key", "test-key", "--mcp", mcp, "Show me"])

    assert result.exit_code == 0, result.output
    assert "A cat." in result.stdout
    first, second = (request.json for request in server.requests)
    assert [t["name"] for t in first["tools"]] == ["shout", "cat_picture"]
    (answer,) = second["messages"][-1]["content"]
    assert answer["type"] == "tool_result" and answer["tool_use_id"] == "toolu_1"
    (image,) = [block for block in answer["content"] if block["type"] == "image"]
    assert image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]) == CAT.read_bytes()
