"""The docs' example server (examples/mcp_server.py): its text and image tools in a run, and a
provider that cannot carry tool-result images refusing the image, never dropping it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from oma_mcp import MCPToolset

from oma_core import Agent, AgentConfig, Capabilities, PluginHost, UnsupportedContentBlockError
from oma_core.testing import ScriptedProvider
from oma_core.toolkit import BlockSupport

#: text and tool calls, but no media anywhere (not in tool results either)
TOOLS_NO_MEDIA = Capabilities(
    (
        BlockSupport("text"),
        BlockSupport("tool_use", frozenset({"assistant"})),
        BlockSupport("tool_result", frozenset({"user"})),
    )
)

EXAMPLE = Path(__file__).parents[3] / "examples" / "mcp_server.py"
CAT = EXAMPLE.with_name("cat.png")


def _use(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "c1", "name": name, "input": arguments or {}}
    return {"role": "assistant", "content": [block]}


async def test_the_example_servers_text_and_image_tools_answer() -> None:
    import base64

    async with MCPToolset.stdio(sys.executable, [str(EXAMPLE)]) as server:
        provider = ScriptedProvider([_use("shout", {"text": "hi"}), _use("cat_picture"), "ok"])
        config = AgentConfig(name="a", provider=provider, tools=[server])
        result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    assert result.success, result.status
    assert provider.requests[1].messages[-1].content[0].content == "HI"
    (image,) = provider.requests[2].messages[-1].content[0].content
    assert image.type == "image" and image.source.media_type == "image/png"
    assert base64.b64decode(image.source.data) == CAT.read_bytes()


async def test_a_provider_without_tool_result_images_refuses_the_run() -> None:
    async with MCPToolset.stdio(sys.executable, [str(EXAMPLE)]) as server:
        provider = ScriptedProvider([_use("cat_picture"), "never"], capabilities=TOOLS_NO_MEDIA)
        config = AgentConfig(name="a", provider=provider, tools=[server])
        result = await Agent(config, plugins=PluginHost(load_entrypoints=False)).run("go")

    error = result.status.error
    assert isinstance(error, UnsupportedContentBlockError), error
    assert error.block_type == "image"
    assert len(provider.requests) == 1  # refused before the call that would carry it
