"""Sending images to agents: order, several images, local files and the sync wrappers."""

from __future__ import annotations

import base64
from typing import Any

from oma_core import (
    Agent,
    AgentConfig,
    PluginHost,
    image_base64,
    image_url,
)
from oma_core.testing import ScriptedProvider

REFERENCE_PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(60))).decode("ascii")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": [_text(b) if isinstance(b, str) else b for b in blocks]}


def _png(kind: str = "base64") -> dict[str, Any]:
    if kind == "base64":
        source = {"type": "base64", "media_type": "image/png", "data": REFERENCE_PNG}
    else:
        source = {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"}
    return {"type": "image", "source": source}


def _host(*plugins: object) -> PluginHost:
    """Built-in plugins only (no installed package adds hooks), plus ``plugins``."""
    host = PluginHost(load_entrypoints=False)
    for plugin in plugins:
        host.register(plugin)
    return host


def _scripted(responses: list[Any], **config: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="vision", provider=provider, **config), plugins=_host())
    return agent, provider


async def test_text_and_image_blocks_can_appear_in_any_order() -> None:
    agent, provider = _scripted(["a", "b"])
    await agent.prompt([image_url("https://example.com/chart.png"), _text("Summarize this chart.")])
    await agent.prompt([_text("And now?"), image_base64(REFERENCE_PNG, "image/png")])
    first, second = (r.messages[-1] for r in provider.requests)
    assert [b.type for b in first.content] == ["image", "text"]
    assert [b.type for b in second.content] == ["text", "image"]


async def test_multiple_images_in_a_single_turn() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=_host())  # echo
    result = await agent.prompt(
        [
            _text("Compare these two images:"),
            image_url("https://example.com/before.jpg"),
            image_url("https://example.com/after.jpg"),
        ]
    )
    assert result.success
    assert "https://example.com/before.jpg" in result.output
    assert "https://example.com/after.jpg" in result.output
    assert result.output.index("before.jpg") < result.output.index("after.jpg")


async def test_a_local_file_is_sent_as_base64_and_echo_reports_its_decoded_size() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=_host())
    result = await agent.prompt(
        [image_base64(REFERENCE_PNG, "image/png"), _text("What do you see?")]
    )
    assert result.success
    assert f"{len(base64.b64decode(REFERENCE_PNG))} bytes" in result.output
    assert REFERENCE_PNG not in result.output


def test_sync_wrappers_send_images_from_scripts() -> None:
    agent = Agent(AgentConfig(name="v"), plugins=_host())
    result = agent.prompt_sync([image_url("https://example.com/a.png"), _text("hi")])
    assert result.success and "image/png" in result.output
    assert agent.run_sync([_user(_png())]).success
